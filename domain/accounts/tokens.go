package accounts

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"shelf/domain"
)

// TokenPurpose says what a token may do.
type TokenPurpose string

// The purposes.
const (
	PurposeVerifyEmail   TokenPurpose = "verify_email"
	PurposeResetPassword TokenPurpose = "reset_password"
	// PurposeRevertEmail undoes an email change: mailed to the address
	// the change replaces (emailchange.go).
	PurposeRevertEmail TokenPurpose = "revert_email"
	// PurposeRefuseEmail is the "not me" link of an email change: mailed
	// beside its verification link to the address asked for, it ends the
	// change and bars the account from asking for that address again
	// (emailchange.go).
	PurposeRefuseEmail TokenPurpose = "refuse_email"
	// PurposeLoginChallenge is never mailed: a proven password of an
	// account with a second factor answers it, and its code turns it into
	// a session (factors.go).
	PurposeLoginChallenge TokenPurpose = "login_challenge"
	// PurposeRevertFactor removes a second factor just added, from the
	// notice mailed to the account's address, and recovers the account as
	// an email change's revert does (factors.go).
	PurposeRevertFactor TokenPurpose = "revert_factor"
	// PurposeProofChallenge is never mailed either: the challenge a
	// passkey signs to prove its owner for a sensitive change
	// (ProofChallenge), used once.
	PurposeProofChallenge TokenPurpose = "proof_challenge"
)

// Token is a single-use token as stored: only the hash of what was mailed.
// It goes through issued (UsedAt zero), used (UsedAt set: its effect
// decided, for a reset the new password hash chosen) and done (DoneAt set:
// its effect carried out; it is refused from then on).
type Token struct {
	// Hash is HashToken of the mailed token: the row's key.
	Hash    string
	Purpose TokenPurpose
	UserID  string
	// Email is the address it was mailed to (as typed), EmailKey its key:
	// the token works only while the account still has that address.
	Email, EmailKey string
	// PasswordPrint binds a reset token to the account's recoveries when
	// it was mailed (RecoveryPrint), and a login's challenge to the
	// password its login proved (PasswordPrint); "" for the other
	// purposes.
	PasswordPrint string
	CreatedAt     time.Time
	// ExpiresAt ends an unused token. The row lives TokenGrace longer, so
	// that a use in flight can still be finished by its retry.
	ExpiresAt time.Time
	// UsedAt is when it was used (zero: not yet); UseID tags that use.
	UsedAt time.Time
	UseID  string
	// NewPassword is the hash a reset sets (chosen when it is used).
	NewPassword string
	// UsedRecovery is the account's RecoveryPrint as the use read it (a
	// confirmation's, a refusal's, a revert's; "" for a reset and for
	// uses before migration 044): a revert's run tells by it a recovery
	// moved on since (recoveredSince).
	UsedRecovery string
	// DoneAt is when its effect was carried out (zero: not yet).
	DoneAt time.Time
	// Subject is what the token acts on beyond its account: the factor a
	// revert_factor token removes ("" for the other purposes).
	Subject string
}

// TokenGrace is how long a token's row outlives its expiry: a use that
// started before the expiry and was interrupted is finished by a retry
// within it.
const TokenGrace = time.Hour

// TokenStore keeps mailed tokens, and the challenges that are never
// mailed (a login's second step, a passkey's proof). The rows are
// LWT-managed, every write a lightweight transaction whose ambiguous
// outcome is settled by a SERIAL read of its tag.
type TokenStore interface {
	// Create writes an issued token, which the store forgets after its
	// ExpiresAt plus TokenGrace.
	Create(ctx context.Context, t Token) error
	// Get reads a token at SERIAL (domain.ErrNotFound when there is none).
	Get(ctx context.Context, hash string) (Token, error)
	// Use marks t used (UsedAt, UseID and NewPassword as given) if it is
	// still unused and of its purpose; false when it is not (used by
	// another request, or gone).
	Use(ctx context.Context, t Token) (bool, error)
	// Done marks a used token done at at, if it still carries the use
	// t.UseID; false when it does not (gone).
	Done(ctx context.Context, t Token, at time.Time) (bool, error)
}

// newMailToken returns a token to mail and its hash: 32 random bytes in
// base64url (256 bits, URL-safe), stored only as its SHA-256 (HashToken).
func newMailToken() (token, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// PasswordPrint is what a login's challenge keeps of the password its
// login proved: a SHA-256 of the account and its password epoch, which
// every change and reset of the password moves on and a rehash of the
// same password keeps. Nothing of the password or its hash is in it.
// Reset tokens mailed before migration 036 carry it too.
func PasswordPrint(u domain.User) string {
	sum := sha256.Sum256([]byte("shelf password epoch\x00" + u.ID + "\x00" + strconv.Itoa(u.PasswordEpoch)))
	return hex.EncodeToString(sum[:16])
}

// RecoveryPrint is what a reset token keeps of the account it may
// recover: a SHA-256 of the account and its recovery epoch, which every
// reset and revert moves on and a change of the password keeps. A thief
// holding a session and the password may change the password as often as
// they like: the links in the owner's mailbox still work, and the first
// she uses makes every other stale (docs/design/tokens.md).
func RecoveryPrint(u domain.User) string {
	sum := sha256.Sum256([]byte("shelf recovery epoch\x00" + u.ID + "\x00" + strconv.Itoa(u.RecoveryEpoch)))
	return hex.EncodeToString(sum[:16])
}

// hashPrint is the print of tokens mailed before migration 015: a SHA-256
// of the stored hash. Such a token still matches while the account keeps
// that hash (no change, reset or rehash since); none outlives
// SHELF_RESET_PASSWORD_TTL after the upgrade.
func hashPrint(passwordHash string) string {
	sum := sha256.Sum256([]byte("shelf password print\x00" + passwordHash))
	return hex.EncodeToString(sum[:16])
}

// mailedAgainst reports whether reset token t was mailed in u's current
// recovery epoch; a token mailed before migration 036 (or 015), against
// the password u has now.
func mailedAgainst(t Token, u domain.User) bool {
	return t.PasswordPrint == RecoveryPrint(u) || t.PasswordPrint == PasswordPrint(u) || t.PasswordPrint == hashPrint(u.PasswordHash)
}

// The ways a token is refused. Each names the field token, with a code the
// client can act on: ask for a new mail.
var (
	// ErrTokenUnknown: no such token, one for another purpose, or one
	// gone with its row.
	ErrTokenUnknown = tokenError("unknown", "is not a token this service mailed, or it has expired")
	// ErrTokenExpired: its time ran out before it was used.
	ErrTokenExpired = tokenError("expired", "has expired; ask for a new mail")
	// ErrTokenUsed: it was used already.
	ErrTokenUsed = tokenError("used", "was used already; ask for a new mail if you need one")
	// ErrTokenStale: the account changed since it was mailed (another
	// email; for a reset link, a reset or a recovery since), so it no
	// longer applies.
	ErrTokenStale = tokenError("stale", "no longer applies: the account's email changed, or its password was reset, since it was mailed")
)

// expiredLinks are ErrTokenExpired for the tokens no route mails again
// (errors.Is(err, ErrTokenExpired) holds for each), saying what the
// expiry leaves instead of sending the caller for a new mail.
var expiredLinks = map[TokenPurpose]*domain.Error{
	PurposeRevertEmail: expiredLink("has expired: the change of address can no longer be undone by this link " +
		"(an admin can still change the account's email)"),
	PurposeRefuseEmail: expiredLink("has expired, and so has the change of address it answers: nothing is left to refuse"),
	PurposeRevertFactor: expiredLink("has expired: the factor can no longer be removed by this link; the account's owner " +
		"removes it from a session (POST /v1/users/{id}/factors/{factorId}/removal), or an admin of the service, unless the account is an admin's"),
	PurposeLoginChallenge: expiredLink("has expired"), // challengeError adds: log in again
}

func expiredLink(message string) *domain.Error {
	e := tokenError("expired", message)
	e.Kind = ErrTokenExpired
	return e
}

// unknownLinks are ErrTokenUnknown for the links a route mails again on
// request (errors.Is(err, ErrTokenUnknown) holds for each): a link cut
// short or mistyped is one request from a new one, and says so.
var unknownLinks = map[TokenPurpose]*domain.Error{
	PurposeVerifyEmail:   unknownLink("is not a token this service mailed, or it has expired; ask for a new mail (POST /v1/email-verifications)"),
	PurposeResetPassword: unknownLink("is not a token this service mailed, or it has expired; ask for a new mail (POST /v1/password-resets)"),
}

func unknownLink(message string) *domain.Error {
	e := tokenError("unknown", message)
	e.Kind = ErrTokenUnknown
	return e
}

// unknownFor is ErrTokenUnknown as a link of purpose says it.
func unknownFor(purpose TokenPurpose) error {
	if e, ok := unknownLinks[purpose]; ok {
		return e
	}
	return ErrTokenUnknown
}

func tokenError(code, message string) *domain.Error {
	return &domain.Error{Kind: domain.ErrInvalid, Code: "invalid_token",
		Message: "The token cannot be used: it " + message + ".",
		Fields:  []domain.FieldError{{Field: "token", Code: code, Message: message}}}
}

// readToken reads the token behind what a client sent, for purpose: a
// token that is done is refused as used, one unused past its expiry as
// expired (a create that landed late after its row expired brings back
// only an expired token). Past it by this process's clock or the node's,
// read beside the token: a process whose clock runs behind takes no
// token after its end (the row lives TokenGrace longer). A used one is
// returned: its use may still need finishing.
func (a *Service) readToken(ctx context.Context, token string, purpose TokenPurpose) (Token, error) {
	if token == "" || len(token) > 256 {
		return Token{}, unknownFor(purpose)
	}
	var t Token
	var node time.Time
	var err, nodeErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			t, err = a.mail.Tokens.Get(ctx, HashToken(token))
		} else {
			node, nodeErr = a.users.NodeNow(ctx)
		}
	})
	now := a.cfg.Now()
	if nodeErr == nil && node.After(now) {
		now = node
	}
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return Token{}, unknownFor(purpose)
	case err != nil:
		return Token{}, err
	case t.Purpose != purpose:
		return Token{}, unknownFor(purpose)
	case !t.DoneAt.IsZero():
		return Token{}, ErrTokenUsed
	case t.UsedAt.IsZero() && !now.Before(t.ExpiresAt):
		return Token{}, cmp.Or(expiredLinks[purpose], ErrTokenExpired)
	case nodeErr != nil && t.UsedAt.IsZero():
		return Token{}, nodeErr
	}
	return t, nil
}

// useToken marks t used by this request (with newPassword for a reset),
// and returns it as stored now: used by us, or by a request that got there
// first (its use then decides). One that request finished meanwhile
// (done) is refused as used, as readToken refuses it: its effect was
// carried out and answered, and running it again would hand out what it
// grants a second time (a reset's session:
// TestAResetFinishedWhileAnotherWaitedOpensNoSecondSession).
func (a *Service) useToken(ctx context.Context, t Token, newPassword string) (Token, error) {
	t.UsedAt, t.UseID, t.NewPassword = a.now(), domain.NewID("use_"), newPassword
	applied, err := a.mail.Tokens.Use(ctx, t)
	if err != nil || applied {
		return t, err
	}
	again, err := a.mail.Tokens.Get(ctx, t.Hash)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return Token{}, ErrTokenUnknown
	case err != nil:
		return Token{}, err
	case again.UsedAt.IsZero():
		// Not applied, yet unused: it cannot be (the condition held).
		return Token{}, domain.ErrBusy
	case !again.DoneAt.IsZero():
		return Token{}, ErrTokenUsed
	}
	return again, nil
}

// finishToken marks a used token done: from then on it is refused as used.
// Not applied means its row is gone, which refuses it as well.
func (a *Service) finishToken(ctx context.Context, t Token) error {
	_, err := a.mail.Tokens.Done(ctx, t, a.now())
	return err
}

// issueToken stores a new token of purpose for u's current email and
// returns what to mail.
func (a *Service) issueToken(ctx context.Context, u domain.User, purpose TokenPurpose, subject string) (string, error) {
	token, hash := newMailToken()
	ttl := a.mail.VerifyTTL
	t := Token{Hash: hash, Purpose: purpose, UserID: u.ID, Email: u.Email, EmailKey: u.EmailKey, CreatedAt: a.now(), Subject: subject}
	switch purpose {
	case PurposeResetPassword:
		ttl, t.PasswordPrint = a.mail.ResetTTL, RecoveryPrint(u)
	case PurposeRevertEmail, PurposeRevertFactor:
		ttl = a.revertTTL()
	}
	t.ExpiresAt = t.CreatedAt.Add(ttl)
	if purpose == PurposeRefuseEmail {
		// It ends with the change it refuses, however late it is mailed.
		t.ExpiresAt = u.PendingEmailAt.Add(a.mail.VerifyTTL)
	}
	return token, a.mail.Tokens.Create(ctx, t)
}
