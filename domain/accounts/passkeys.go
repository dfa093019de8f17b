package accounts

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"

	"shelf/domain"
)

// Passkeys (WebAuthn) as second factors (docs/design/second-factors.md):
// registered like an authenticator app (a pending factor, confirmed by
// the browser's answer), used at a login's second step and to prove the
// owner. A passkey's assertion is bound to a challenge made from a
// single-use token (the login's challenge, or a proof's): used once
// because the token is, whatever the authenticator's counter says; the
// counter is kept too, moved on by a compare-and-set, so a copied key
// shows.

// Passkeys makes and checks WebAuthn ceremonies (internal/factor).
// Answers are the browser's PublicKeyCredential as JSON.
type Passkeys interface {
	// Register starts a registration for account userID (shown as name),
	// excluding factors' passkeys: the options for
	// navigator.credentials.create, and the state to keep with the
	// pending factor.
	Register(userID, name string, factors []Factor) (options json.RawMessage, state string, err error)
	// Registered checks a registration's answer against its state: the
	// credential to store and its signature count, or ErrPasskeyRefused
	// (also for a credential one of factors' passkeys has already).
	Registered(userID, name, state string, factors []Factor, answer []byte) (credential string, count int64, err error)
	// Options are the options for navigator.credentials.get over factors'
	// confirmed passkeys under challenge; nil when there is none.
	Options(userID string, challenge []byte, factors []Factor) (json.RawMessage, error)
	// Verify checks an assertion of one of factors' passkeys under
	// challenge: the factor that signed and its new count, or
	// ErrPasskeyRefused.
	Verify(userID string, challenge []byte, factors []Factor, answer []byte) (factorID string, count int64, err error)
}

// ErrPasskeyRefused answers a passkey's answer that does not check out:
// not one of the account's passkeys, signed over another challenge or
// origin, or a counter gone back.
var ErrPasskeyRefused = &domain.Error{Kind: domain.ErrUnauthorized, Code: "invalid_passkey",
	Message: "The passkey's answer was refused (not a passkey of this account, or not for this challenge); try again, or use a code.",
	Fields:  []domain.FieldError{{Field: "passkey", Code: "invalid", Message: "is not a valid answer of a passkey of this account"}}}

// ErrPasskeysOff answers a passkey's route where passkeys are off.
var ErrPasskeysOff = &domain.Error{Kind: domain.ErrNotConfigured, Code: "passkeys_off",
	Message: "Passkeys are not configured on this service (SHELF_WEBAUTHN_RP_ID); use an authenticator app."}

// PasskeyProof is a passkey's answer, for a challenge (the login's, or a
// proof's): Verify's answer.
type PasskeyProof struct {
	Answer []byte
	// Challenge is a proof's challenge token (ProofChallenge); none at a
	// login's second step, whose challenge is the login's.
	Challenge string
	// challenge is the WebAuthn challenge the answer must sign, made from
	// the single-use token the caller named.
	challenge []byte
}

// passkeyChallenge is the WebAuthn challenge of a single-use token: the
// token's hash under a label of its own (not the stored hash), so the
// challenge is as unpredictable as the token and bound to it.
func passkeyChallenge(token string) []byte {
	sum := sha256.Sum256([]byte("shelf passkey challenge\x00" + token))
	return sum[:]
}

// EnrolPasskey starts a passkey for the caller's own account, with the
// owner's proof (the password, and a factor's where the account has one):
// a pending factor, and the options for navigator.credentials.create.
// Its answer, within ten minutes, confirms it (ConfirmPasskey). Cost: as
// EnrolTOTP's.
func (a *Service) EnrolPasskey(ctx context.Context, p domain.Principal, userID, name string, proof Proof) (Enrolment, error) {
	if a.passkeys == nil {
		return Enrolment{}, ErrPasskeysOff
	}
	u, factors, name, factored, err := a.mayEnrol(ctx, p, userID, cmp.Or(name, "passkey"), proof)
	if err != nil {
		return Enrolment{}, err
	}
	options, state, err := a.passkeys.Register(u.ID, u.Username, factors)
	if err != nil {
		return Enrolment{}, err
	}
	start, err := a.enrolmentStart(ctx)
	if err != nil {
		return Enrolment{}, err
	}
	f := Factor{UserID: u.ID, ID: domain.NewID("fac_"), Kind: FactorPasskey, Name: name, Sealed: state, CreatedAt: start}
	if err := a.beginEnrolment(ctx, f, factored); err != nil {
		return Enrolment{}, err
	}
	return Enrolment{Factor: viewOf(f), PasskeyOptions: options}, nil
}

// ConfirmPasskey finishes the caller's passkey with the browser's answer
// to its registration: as ConfirmTOTP, the notice first, a recovery set
// for a first factor, then the factor permanent with its credential. A
// refused answer counts against the code's throttle.
func (a *Service) ConfirmPasskey(ctx context.Context, p domain.Principal, userID, factorID string, answer []byte) (Confirmation, error) {
	if a.passkeys == nil {
		return Confirmation{}, ErrPasskeysOff
	}
	u, factors, set, f, err := a.pendingFactor(ctx, p, userID, factorID, FactorPasskey)
	if err != nil {
		return Confirmation{}, err
	}
	if len(answer) == 0 {
		return Confirmation{}, errPasskeyRequired
	}
	c, err := a.admitPasskey(ctx, userID)
	if err != nil {
		return Confirmation{}, err
	}
	credential, count, err := a.passkeys.Registered(u.ID, u.Username, f.Sealed, factors, answer)
	if err != nil && !errors.Is(err, ErrPasskeyRefused) {
		return Confirmation{}, err
	}
	if err != nil {
		a.log.Warn(ctx, "a passkey's registration was refused", "user", u.ID, "reason", err.Error())
	}
	if err := codeVerdict(ctx, c, err == nil, ErrPasskeyRefused); err != nil {
		return Confirmation{}, err
	}
	pending := f.Sealed
	f.Sealed, f.LastStep = credential, count
	return a.confirmFactor(ctx, p, u, factors, set, f, pending)
}

var errPasskeyRequired = domain.Invalid("Give the passkey's answer (the browser's PublicKeyCredential, as JSON).",
	domain.FieldError{Field: "passkey", Code: "required", Message: "is required: the answer of navigator.credentials"})

// provePasskey checks a passkey's answer to pk.challenge against
// factors, under the code's throttle, and moves the signing passkey's
// counter on (a compare-and-set: of two answers with one count, one
// passes). A passkey that keeps no counter (0 then and now) is used
// once by its challenge's token alone, which its caller uses next; its
// use is still a compare-and-set of its row (Touch), so that one whose
// removal landed after factors were read proves nothing
// (TestASyncedPasskeyRemovedWhileItsAnswerIsCheckedOpensNoSession), as a
// counted one's does not.
func (a *Service) provePasskey(ctx context.Context, userID string, factors []Factor, pk *PasskeyProof) error {
	if a.passkeys == nil {
		return ErrPasskeysOff
	}
	if pk.challenge == nil {
		return a.provePasskeyOnce(ctx, userID, factors, pk)
	}
	c, err := a.admitPasskey(ctx, userID)
	if err != nil {
		return err
	}
	id, count, err := a.passkeys.Verify(userID, pk.challenge, factors, pk.Answer)
	if err != nil && !errors.Is(err, ErrPasskeyRefused) {
		return err
	}
	ok := err == nil
	if err != nil {
		a.log.Warn(ctx, "a passkey's answer was refused", "user", userID, "reason", err.Error())
	}
	if i := slices.IndexFunc(factors, func(f Factor) bool { return f.ID == id }); ok && i >= 0 {
		f := factors[i]
		if count > 0 || f.LastStep > 0 {
			ok, err = a.factors.UseStep(ctx, f, count, a.now())
		} else {
			ok, err = a.factors.Touch(ctx, f, a.now())
		}
		if err != nil {
			return err
		}
	}
	return codeVerdict(ctx, c, ok, ErrPasskeyRefused)
}

// passkeyOptions are the options for a login's (or a proof's) passkeys
// under token's challenge; nil when passkeys are off or factors has none.
func (a *Service) passkeyOptions(userID, token string, factors []Factor) (json.RawMessage, error) {
	if a.passkeys == nil || !slices.ContainsFunc(factors, isPasskey) {
		return nil, nil
	}
	return a.passkeys.Options(userID, passkeyChallenge(token), factors)
}

func isPasskey(f Factor) bool { return f.Kind == FactorPasskey && f.Confirmed() }

// ProofChallenge is a challenge for a passkey to sign to prove the
// caller, the owner of userID, for a sensitive change (a Proof's
// Passkey): a single-use token for five minutes, and the options of
// navigator.credentials.get for the account's passkeys. One read of the
// account, one of the factors, one write.
func (a *Service) ProofChallenge(ctx context.Context, p domain.Principal, userID string) (LoginResult, error) {
	if a.passkeys == nil {
		return LoginResult{}, ErrPasskeysOff
	}
	if _, err := a.ownFactors(ctx, p, userID); err != nil {
		return LoginResult{}, err
	}
	if a.mail.Tokens == nil {
		return LoginResult{}, ErrFactorsOff
	}
	factors, err := a.confirmedFactors(ctx, userID)
	if err != nil {
		return LoginResult{}, err
	}
	if !slices.ContainsFunc(factors, isPasskey) {
		return LoginResult{}, errNoPasskey
	}
	token, hash := newMailToken()
	options, err := a.passkeyOptions(userID, token, factors)
	if err != nil {
		return LoginResult{}, err
	}
	t := Token{Hash: hash, Purpose: PurposeProofChallenge, UserID: userID, CreatedAt: a.now()}
	t.ExpiresAt = t.CreatedAt.Add(challengeTTL)
	if err := a.mail.Tokens.Create(ctx, t); err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Challenge: token, ExpiresAt: t.ExpiresAt, Methods: []string{string(FactorPasskey)}, Passkey: options}, nil
}

var errNoPasskey = &domain.Error{Kind: domain.ErrConflict, Code: "no_passkey",
	Message: "This account has no passkey; prove it with a code of your app, or a recovery code."}

// errProofChallenge refuses a proof's challenge, naming the field.
func errProofChallenge(code, message string) error {
	return domain.Invalid("The passkey's challenge "+message+"; ask for a new one (POST /v1/users/{id}/passkey-challenges).",
		domain.FieldError{Field: "passkey.challenge", Code: code, Message: message})
}

// provePasskeyOnce proves the owner with a passkey's answer to a proof's
// challenge: the answer checked (provePasskey), then the challenge used,
// once (a lightweight transaction: of two requests with one answer, one
// passes; a lost answer costs a new challenge).
func (a *Service) provePasskeyOnce(ctx context.Context, userID string, factors []Factor, pk *PasskeyProof) error {
	if pk.Challenge == "" {
		return errProofChallenge("required", "is required: a proof's challenge for the passkey to sign")
	}
	t, err := a.readToken(ctx, pk.Challenge, PurposeProofChallenge)
	if err != nil || t.UserID != userID || !t.UsedAt.IsZero() {
		if err == nil || errors.Is(err, ErrTokenUnknown) || errors.Is(err, ErrTokenExpired) || errors.Is(err, ErrTokenUsed) {
			return errProofChallenge("invalid", "is unknown, expired or used")
		}
		return err
	}
	signed := *pk
	signed.challenge = passkeyChallenge(pk.Challenge)
	if err := a.provePasskey(ctx, userID, factors, &signed); err != nil {
		return err
	}
	used := t
	used.UsedAt, used.UseID = a.now(), domain.NewID("use_")
	applied, err := a.mail.Tokens.Use(ctx, used)
	if err != nil {
		return err
	}
	if !applied {
		return errProofChallenge("invalid", "is unknown, expired or used")
	}
	return a.finishToken(ctx, used)
}
