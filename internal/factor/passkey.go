package factor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"shelf/domain/accounts"
)

// Passkeys registers and checks passkeys (WebAuthn) for accounts.Service
// with github.com/go-webauthn/webauthn: a well-kept implementation of the
// relying party's side of WebAuthn Level 3 (options, attestation formats,
// COSE keys, signature and counter checks). What is stored of a passkey
// is its public credential (id, public key, flags, sign count) as JSON:
// nothing in it signs anything.
type Passkeys struct {
	w *webauthn.WebAuthn
}

var _ accounts.Passkeys = (*Passkeys)(nil)

// NewPasskeys is the relying party rpID (a domain: the console's host or
// a suffix of it), answering to origins (scheme://host[:port], each on
// rpID or under it), named name in the browser's prompt. It is checked
// here, at start.
func NewPasskeys(rpID string, origins []string, name string) (*Passkeys, error) {
	if err := CheckRelyingParty(rpID, origins); err != nil {
		return nil, err
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID: rpID, RPDisplayName: name, RPOrigins: origins,
		// Attestation is not asked for: shelf trusts no vendor list, and
		// "none" keeps every passkey provider welcome.
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationPreferred,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("passkeys: %w", err)
	}
	return &Passkeys{w: w}, nil
}

// CheckRelyingParty checks a relying party id against its origins: a
// domain name (not an address: browsers refuse those), and every origin
// an http(s) origin whose host is the id or under it, http only on
// localhost.
func CheckRelyingParty(rpID string, origins []string) error {
	if err := protocol.ValidateRPID(rpID); err != nil || strings.Trim(rpID, "0123456789.:[]") == "" {
		return fmt.Errorf("passkeys: the relying party id %q is not a domain name (an IP address cannot be one)", rpID)
	}
	if len(origins) == 0 {
		return errors.New("passkeys: no origin")
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || u.Path != "" || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Errorf("passkeys: origin %q is not scheme://host[:port]", o)
		}
		host := u.Hostname()
		if host != rpID && !strings.HasSuffix(host, "."+rpID) {
			return fmt.Errorf("passkeys: origin %q is not on the relying party id %q or under it", o, rpID)
		}
		if u.Scheme == "http" && host != "localhost" && !strings.HasSuffix(host, ".localhost") {
			return fmt.Errorf("passkeys: origin %q: browsers offer passkeys over http on localhost only", o)
		}
	}
	return nil
}

// user is an account as go-webauthn sees it: its handle is the account's
// id, and its credentials its confirmed passkeys.
type user struct {
	id, name    string
	credentials []webauthn.Credential
}

func (u user) WebAuthnID() []byte                         { return []byte(u.id) }
func (u user) WebAuthnName() string                       { return u.name }
func (u user) WebAuthnDisplayName() string                { return u.name }
func (u user) WebAuthnCredentials() []webauthn.Credential { return u.credentials }

// credentials opens the passkeys among factors (confirmed ones).
func credentials(factors []accounts.Factor) ([]webauthn.Credential, []string, error) {
	var creds []webauthn.Credential
	var ids []string
	for _, f := range factors {
		if f.Kind != accounts.FactorPasskey || !f.Confirmed() {
			continue
		}
		var c webauthn.Credential
		if err := json.Unmarshal([]byte(f.Sealed), &c); err != nil {
			return nil, nil, fmt.Errorf("passkey %s: %w", f.ID, err)
		}
		// The count stored apart (moved on by compare-and-set) is the one
		// an answer's must pass.
		c.Authenticator.SignCount = uint32(max(f.LastStep, 0))
		creds, ids = append(creds, c), append(ids, f.ID)
	}
	return creds, ids, nil
}

// Register starts a registration for account userID (named name), its
// existing passkeys excluded: the options for navigator.credentials.create
// ({"publicKey": ...}), and the state Registered needs (to keep with the
// pending factor).
func (p *Passkeys) Register(userID, name string, factors []accounts.Factor) (json.RawMessage, string, error) {
	creds, _, err := credentials(factors)
	if err != nil {
		return nil, "", err
	}
	u := user{id: userID, name: name, credentials: creds}
	exclude := make([]protocol.CredentialDescriptor, len(creds))
	for i := range creds {
		exclude[i] = creds[i].Descriptor()
	}
	creation, session, err := p.w.BeginRegistration(u, webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, "", err
	}
	options, err := json.Marshal(creation)
	if err != nil {
		return nil, "", err
	}
	state, err := json.Marshal(session)
	return options, string(state), err
}

// Registered checks a registration's answer (the PublicKeyCredential as
// JSON) against its state: the credential to store, and its sign count.
// A credential one of factors' passkeys has already is refused: the
// options exclude them, but an authenticator need not obey, and two
// factors of one credential would let the later hide the earlier from
// Verify. A refusal of the answer is accounts.ErrPasskeyRefused.
func (p *Passkeys) Registered(userID, name, state string, factors []accounts.Factor, answer []byte) (string, int64, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal([]byte(state), &session); err != nil {
		return "", 0, fmt.Errorf("a passkey's registration state: %w", err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(answer)
	if err != nil {
		return "", 0, refused(err)
	}
	c, err := p.w.CreateCredential(user{id: userID, name: name}, session, parsed)
	if err != nil {
		return "", 0, refused(err)
	}
	have, _, err := credentials(factors)
	if err != nil {
		return "", 0, err
	}
	if slices.ContainsFunc(have, func(h webauthn.Credential) bool { return bytes.Equal(h.ID, c.ID) }) {
		return "", 0, refused(errors.New("the account has a passkey of this credential already"))
	}
	stored, err := json.Marshal(c)
	return string(stored), int64(c.Authenticator.SignCount), err
}

// Options are the options for navigator.credentials.get ({"publicKey":
// ...}) for factors' passkeys, under challenge; nil when there is none.
func (p *Passkeys) Options(userID string, challenge []byte, factors []accounts.Factor) (json.RawMessage, error) {
	assertion, _, err := p.begin(userID, challenge, factors)
	if err != nil || assertion == nil {
		return nil, err
	}
	return json.Marshal(assertion)
}

func (p *Passkeys) begin(userID string, challenge []byte, factors []accounts.Factor) (*protocol.CredentialAssertion, *webauthn.SessionData, error) {
	creds, _, err := credentials(factors)
	if err != nil || len(creds) == 0 {
		return nil, nil, err
	}
	return p.w.BeginLogin(user{id: userID, credentials: creds}, webauthn.WithChallenge(challenge))
}

// Verify checks an assertion (the PublicKeyCredential as JSON) of one of
// factors' passkeys under challenge: the factor that signed and the sign
// count it gave. The session go-webauthn checks against is made again
// from the challenge and the factors (BeginLogin is a function of them),
// so nothing is stored between the two steps. A refusal of the answer
// (wrong signature, origin, challenge, credential, or a count that went
// back) is accounts.ErrPasskeyRefused.
func (p *Passkeys) Verify(userID string, challenge []byte, factors []accounts.Factor, answer []byte) (string, int64, error) {
	_, session, err := p.begin(userID, challenge, factors)
	if err != nil {
		return "", 0, err
	}
	if session == nil {
		return "", 0, accounts.ErrPasskeyRefused
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(answer)
	if err != nil {
		return "", 0, refused(err)
	}
	creds, ids, _ := credentials(factors)
	c, err := p.w.ValidateLogin(user{id: userID, credentials: creds}, *session, parsed)
	if err != nil {
		return "", 0, refused(err)
	}
	if c.Authenticator.CloneWarning {
		// The count did not move on from the stored one: a copy of the
		// key, or a replay. Refused; the stored count decides again.
		return "", 0, accounts.ErrPasskeyRefused
	}
	i := slices.IndexFunc(creds, func(s webauthn.Credential) bool { return bytes.Equal(s.ID, c.ID) })
	if i < 0 {
		return "", 0, accounts.ErrPasskeyRefused
	}
	return ids[i], int64(c.Authenticator.SignCount), nil
}

// refused wraps go-webauthn's reason for a refusal (for the log) under
// accounts.ErrPasskeyRefused.
func refused(err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.DevInfo != "" {
		return fmt.Errorf("%w: %s: %s", accounts.ErrPasskeyRefused, pe.Details, pe.DevInfo)
	}
	return fmt.Errorf("%w: %v", accounts.ErrPasskeyRefused, err)
}
