package accounts

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"shelf/domain"
)

// Second factors (docs/design/second-factors.md): authenticator codes
// (TOTP), passkeys (passkeys.go) and recovery codes. An account with a
// confirmed factor opens no session on its password alone: the password
// answers a challenge (a single-use token, PurposeLoginChallenge), and a
// code, a passkey's answer or a recovery code turns it into a session
// (SecondFactor).

// FactorKind is a kind of second factor.
type FactorKind string

// The kinds.
const (
	FactorTOTP    FactorKind = "totp"
	FactorPasskey FactorKind = "passkey"
)

// Factor is a second factor as stored: pending (ConfirmedAt zero, its
// row expiring with the enrolment) until its first use (an app's code, a
// passkey's registration answer) confirms it.
type Factor struct {
	UserID, ID string
	Kind       FactorKind
	// Name is the owner's label ("phone").
	Name string
	// Sealed is a TOTP secret as TOTP.New sealed it; a passkey's public
	// credential (Passkeys.Registered), or while pending, the state of its
	// registration (Passkeys.Register).
	Sealed      string
	CreatedAt   time.Time
	ConfirmedAt time.Time
	// LastStep is the time step of the last code accepted: a code of that
	// step or an earlier one is refused (used once). A passkey's: the
	// signature count it last gave (0 for one that keeps none).
	LastStep   int64
	LastUsedAt time.Time
	// PasswordOnly marks an enrolment its owner's proof took no factor
	// for (the account had none): it is confirmed only as the account's
	// first factor.
	PasswordOnly bool
}

// Confirmed reports an enrolment finished.
func (f Factor) Confirmed() bool { return !f.ConfirmedAt.IsZero() }

// RecoverySet is an account's recovery codes: their hashes, and which
// were used (hash: the use's id). A new set replaces the whole row
// under a new Generation.
type RecoverySet struct {
	UserID     string
	Generation string
	Codes      []string
	Used       map[string]string
	CreatedAt  time.Time
}

// RecoveryEnded is the generation of a deleted account's set: no codes,
// and a fence, since every write of a set is conditioned on the one it
// replaces (none, for a first set) and none replaces this one. A set a
// request in flight writes after the deletion's job can never land
// (EndFactors).
const RecoveryEnded = "ended"

// Ended reports whether s is a deleted account's fence (RecoveryEnded).
func (s RecoverySet) Ended() bool { return s.Generation == RecoveryEnded }

// Left is how many codes are unused.
func (s RecoverySet) Left() int {
	n := 0
	for _, c := range s.Codes {
		if _, used := s.Used[c]; !used {
			n++
		}
	}
	return n
}

// FactorStore keeps factors and recovery sets, one partition per
// account; every write is a lightweight transaction whose lost answer is
// settled by a SERIAL read of its row.
type FactorStore interface {
	// Read returns the account's factors, pending ones too, by creation,
	// and its recovery set (Generation "" when it has none).
	Read(ctx context.Context, userID string) ([]Factor, RecoverySet, error)
	// Begin writes a pending enrolment that the store forgets after ttl.
	Begin(ctx context.Context, f Factor, ttl time.Duration) error
	// Confirm makes f permanent, with f.Sealed, f.ConfirmedAt and
	// f.LastStep, if it is still pending with pending (its Sealed as
	// begun); false when not (expired, removed, confirmed already).
	Confirm(ctx context.Context, f Factor, pending string) (bool, error)
	// UseStep records step as f's last accepted, at at, if the stored one
	// is earlier; false when not (a code of this step or a later one was
	// accepted, or the factor is gone).
	UseStep(ctx context.Context, f Factor, step int64, at time.Time) (bool, error)
	// Touch records a use of confirmed factor f at at, if it stands as
	// read (its Sealed stored); false when it is gone. For a passkey that
	// keeps no counter, whose uses UseStep cannot order.
	Touch(ctx context.Context, f Factor, at time.Time) (bool, error)
	// Remove deletes a factor; false when there was none.
	Remove(ctx context.Context, userID, id string) (bool, error)
	// RemovePending deletes an enrolment while it is still pending;
	// false when it was confirmed (its condition: no confirmation).
	RemovePending(ctx context.Context, userID, id string) (bool, error)
	// SetRecovery writes s in place of the set of generation prev (""
	// when there is none); false when the stored set is not prev.
	SetRecovery(ctx context.Context, s RecoverySet, prev string) (bool, error)
	// UseRecovery marks code hash of set s used by useID, if the stored
	// set is still s's generation and the code unused; false otherwise.
	UseRecovery(ctx context.Context, s RecoverySet, hash, useID string) (bool, error)
	// RemoveRecovery deletes the set of generation gen, if it stands.
	RemoveRecovery(ctx context.Context, userID, gen string) error
}

// TOTPSecret is a new authenticator secret as its owner is shown it,
// once: the base32 secret, the otpauth:// URI and its QR code (PNG).
type TOTPSecret struct {
	Secret    string
	URI       string
	QRCodePNG []byte
}

// TOTP makes and checks authenticator secrets (internal/factor); what it
// stores is sealed, bound to the account's id.
type TOTP interface {
	// New makes a secret labelled account for user userID.
	New(account, userID string) (sealed string, shown TOTPSecret, err error)
	// Step is the time step (the one before now's to the one after) whose
	// code is code; ok false when none is.
	Step(sealed, userID, code string, now time.Time) (step int64, ok bool, err error)
}

const (
	// enrolmentTTL is how long an enrolment waits for its first code.
	enrolmentTTL = 10 * time.Minute
	// challengeTTL is how long a login's challenge waits for its code.
	challengeTTL = 5 * time.Minute
	// maxFactors bounds an account's factors, pending ones included.
	maxFactors = 10
	// recoveryCodes is how many codes a set has.
	recoveryCodes = 10
)

// ErrFactorsOff answers a factor's route where the service has none.
var ErrFactorsOff = &domain.Error{Kind: domain.ErrNotConfigured, Code: "factors_off",
	Message: "Second factors are not configured on this service."}

// errNotOwnFactors refuses a caller another account's factors.
var errNotOwnFactors = domain.Denied("Only the account's owner may do this with its second factors, from a session of that account.")

// ErrFactorNotFound answers a factor id the account does not have.
var ErrFactorNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such factor."}

// ErrWrongCode answers a code that is not the factor's now, one used
// already, or a recovery code that is not one of the account's unused.
var ErrWrongCode = &domain.Error{Kind: domain.ErrUnauthorized, Code: "invalid_code",
	Message: "The code is wrong or was used already; wait for the next code of your app, or use a recovery code.",
	Fields:  []domain.FieldError{{Field: "code", Code: "invalid", Message: "is not a current, unused code"}}}

var errCodeRequired = domain.Invalid("Give a code from your authenticator app, or a recovery code.",
	domain.FieldError{Field: "code", Code: "required", Message: "is required: a code from your app, or give recoveryCode"})

var errTooManyFactors = &domain.Error{Kind: domain.ErrConflict, Code: "too_many_factors",
	Message: "This account has as many factors as it may (10, unconfirmed ones included): remove one first. " +
		"If you did not begin the unconfirmed ones, sign out everywhere else (DELETE /v1/users/{id}/sessions?keep=current), which ends them, " +
		"and change your password; else they expire ten minutes after they were begun."}

var errEnrolmentGone = &domain.Error{Kind: domain.ErrConflict, Code: "enrolment_expired",
	Message: "This enrolment expired, or was confirmed already: if the app is listed (GET /v1/users/{id}/factors) it works, " +
		"and if you did not see its recovery codes, make new ones (POST /v1/users/{id}/recovery-codes); else start again with POST /v1/users/{id}/factors."}

// Proof is what proves the owner for what takes an account (reauth.go):
// the current password and, where the account has a second factor, a
// code of one, a recovery code or a passkey's answer.
type Proof struct {
	CurrentPassword    *string
	Code, RecoveryCode string
	// Passkey is a passkey's answer to a proof's challenge
	// (ProofChallenge; at a login's second step, to the login's).
	Passkey *PasskeyProof
}

// FactorView is a factor as its owner and admins see it (never its
// secret).
type FactorView struct {
	ID          string
	Kind        FactorKind
	Name        string
	CreatedAt   time.Time
	ConfirmedAt time.Time
	LastUsedAt  time.Time
}

func viewOf(f Factor) FactorView {
	return FactorView{ID: f.ID, Kind: f.Kind, Name: f.Name, CreatedAt: f.CreatedAt, ConfirmedAt: f.ConfirmedAt, LastUsedAt: f.LastUsedAt}
}

// Factors is an account's factors as listed: the confirmed ones, and how
// many recovery codes are left.
type Factors struct {
	Factors           []FactorView
	RecoveryCodesLeft int
}

// Enrolment is a started enrolment: the factor (pending) and its secret,
// shown once.
type Enrolment struct {
	Factor FactorView
	Secret TOTPSecret
	// PasskeyOptions are a passkey's options for
	// navigator.credentials.create.
	PasskeyOptions json.RawMessage
}

// Confirmation is a finished enrolment, with the recovery codes made for
// the account's first factor (shown once; none for a later factor).
type Confirmation struct {
	Factor        FactorView
	RecoveryCodes []string
}

// ownFactors checks that p is userID's owner with factors on, and reads
// the account whole (for a proof of its password).
func (a *Service) ownFactors(ctx context.Context, p domain.Principal, userID string) (domain.User, error) {
	if a.factors == nil {
		return domain.User{}, ErrFactorsOff
	}
	if p.Anonymous() {
		return domain.User{}, domain.ErrNoSession
	}
	if p.UserID != userID {
		return domain.User{}, errNotOwnFactors
	}
	u, err := a.users.Get(ctx, userID)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
		return domain.User{}, domain.ErrUserNotFound
	}
	return u, err
}

// EnrolTOTP starts an authenticator for the caller's own account, with
// the owner's proof (the password, and a factor's where the account has
// one): a pending factor, and its secret shown once. It works only once
// confirmed by a first code (ConfirmTOTP) within ten minutes. Cost: one
// read of the account, the throttled password check, two reads of the
// factors (the proof's, then the count's; with a factor, its proof's
// throttle and use between them), the node's clock (enrolmentStart),
// one lightweight transaction, the factors read again (beginEnrolment).
func (a *Service) EnrolTOTP(ctx context.Context, p domain.Principal, userID, name string, proof Proof) (Enrolment, error) {
	u, _, name, factored, err := a.mayEnrol(ctx, p, userID, cmp.Or(name, "authenticator"), proof)
	if err != nil {
		return Enrolment{}, err
	}
	sealed, shown, err := a.totp.New(u.Username, u.ID)
	if err != nil {
		return Enrolment{}, err
	}
	start, err := a.enrolmentStart(ctx)
	if err != nil {
		return Enrolment{}, err
	}
	f := Factor{UserID: u.ID, ID: domain.NewID("fac_"), Kind: FactorTOTP, Name: name, Sealed: sealed, CreatedAt: start}
	if err := a.beginEnrolment(ctx, f, factored); err != nil {
		return Enrolment{}, err
	}
	return Enrolment{Factor: viewOf(f), Secret: shown}, nil
}

// enrolmentStart is the start an enrolment begun now records: the
// earlier of this process's clock and the node's, which expires its row.
// A process ahead would otherwise record a start after the row's
// writing, and a confirmation judging by its clocks (pendingFactor)
// would take a row written anew by a held attempt, landing just after
// the first expired, for one still within its ten minutes
// (TestAnEnrolmentBegunAheadAndWrittenAgainCannotBeConfirmed).
func (a *Service) enrolmentStart(ctx context.Context) (time.Time, error) {
	node, err := a.users.NodeNow(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return domain.Behind(a.now(), node.UTC().Truncate(time.Millisecond)), nil
}

// beginEnrolment writes pending factor f, whose owner's proof took a
// factor's (factored) or the password alone, then checks again at the
// end, on one read of the factors:
//   - enrolments sent at once each counted before any other's write
//     (mayEnrol), so one that finds the account past maxFactors with its
//     own takes its own back and is refused: a factor kept was counted
//     with every factor begun before it, so the account never keeps more
//     than maxFactors (TestEnrolmentsAtOnceKeepTheAccountsBoundOnFactors);
//   - a proof by the password alone holds only while the account has no
//     factor, so a first factor confirmed since the proof takes f away
//     again (errCodeRequired: begin again with its code). With the first
//     factor's confirmation removing every enrolment it finds pending,
//     and taking itself back if it finds another confirmed at once
//     (standsAlone), one of the two sees the other: an enrolment proven
//     by the password alone is never confirmed beside a factor it did not
//     prove.
//
// If the factors cannot be read, the enrolment is taken back too; a
// removal that fails leaves a pending factor nobody was shown the id of,
// which expires with enrolmentTTL.
func (a *Service) beginEnrolment(ctx context.Context, f Factor, factored bool) error {
	f.PasswordOnly = !factored
	if err := a.factors.Begin(ctx, f, enrolmentTTL); err != nil {
		return err
	}
	factors, _, err := a.factors.Read(ctx, f.UserID)
	var refusal error
	switch {
	case err != nil:
		refusal = err
	case len(factors) > maxFactors:
		refusal = errTooManyFactors
	case !factored && slices.ContainsFunc(factors, Factor.Confirmed):
		refusal = errCodeRequired
	default:
		return nil
	}
	_, _ = a.factors.Remove(ctx, f.UserID, f.ID)
	return refusal
}

// dropPendingBesides removes every enrolment of userID still pending but
// id, once id was confirmed as the account's first factor: each was
// proven by the password alone (the account had no factor when its
// proof read it, or the enrolment itself reads the factor confirmed since
// and takes itself away: beginEnrolment), and from now on adding a factor
// takes a code of one. An owner's own enrolment begun meanwhile is begun
// again. standsAlone does the same on the factors it read; this runs
// after a confirmation whose write failed (the factor may stand). A
// removal that fails is logged: an enrolment left pending is refused
// at its confirmation (PasswordOnly).
func (a *Service) dropPendingBesides(ctx context.Context, userID, id string) {
	if err := dropPending(ctx, a.factors, a.factors.RemovePending, userID, id); err != nil {
		a.log.Warn(ctx, "removing the enrolments pending beside a first factor failed", "user", userID, "error", err.Error())
	}
}

// errConfirmedBeside refuses a first factor's confirmation that found,
// checked again at the end, another factor confirmed beside it since it
// began (standsAlone): its factor is taken back.
var errConfirmedBeside = &domain.Error{Kind: domain.ErrConflict, Code: "enrolment_expired",
	Message: "Another second factor was confirmed for this account at the same moment, so this one is not added. " +
		"If you added both, begin again (POST /v1/users/{id}/factors). If you did not add the other, someone has your password: " +
		"follow the link in the notice of a new second factor mailed to your address, which removes it and signs every session out."}

// standsAlone checks again at the end, once f is confirmed as the
// account's first factor (its confirmation read none confirmed, and may
// have been proven by the password alone), that it stands alone. A factor
// found confirmed beside it was confirmed since that read: a first factor
// confirmed at once (the owner's and a thief's with her password and a
// session, each read "none confirmed"), or one proven by a code of such a
// factor, which nothing here can tell from one of hers. So f is taken
// back and refused (errConfirmedBeside): it stands only alone
// (TestTwoFirstFactorsConfirmedAtOnceNeverStandTogether). Of two
// confirmed at once, one at least finds the other (confirmed when read,
// or its removal of the other, pending when read, refused below) and
// takes its own back; the other stands only if its check no longer finds
// the first. Each takes back its own factor only, so no success answered
// is followed by its factor's removal. No rule picks which of the two
// stands (the enrolment begun first, the lower id): the one kept would
// have to remove the other, which it cannot tell from a factor proven by
// its own code whose confirmation answered success, and a rule by time
// or id is one a thief tilts by timing, by his process's clock or by
// beginning many. With this one a thief's timing wins at most what
// confirming before her wins him: his factor alone as the account's
// first, its notice at her address, never one beside hers. A process
// that dies after its factor's write, or a check that cannot read the
// factors (the error answered, the factor kept: its retry says it
// works), leaves that factor, and the other's check takes the other back.
// Alone, f removes every enrolment still pending (each proven by the
// password alone: dropPendingBesides), each removal conditioned on the
// enrolment still pending when it lands: one whose confirmation landed
// since the read may have answered success (one proven by a code of f),
// and removing it would take back what that answer granted
// (TestTheFirstFactorsCheckLeavesAFactorConfirmedSinceItsRead). A
// removal refused so is a factor confirmed beside f, which f then yields
// to as to one it read; a removal that fails is logged (an enrolment
// left pending is refused at its confirmation, PasswordOnly, and one
// confirmed at once checks too).
func (a *Service) standsAlone(ctx context.Context, f Factor) error {
	factors, _, err := a.factors.Read(ctx, f.UserID)
	if err != nil {
		return err
	}
	beside := slices.ContainsFunc(factors, func(g Factor) bool { return g.ID != f.ID && g.Confirmed() })
	for _, g := range factors {
		if beside {
			break
		}
		if g.ID == f.ID {
			continue
		}
		removed, err := a.factors.RemovePending(ctx, f.UserID, g.ID)
		if err != nil {
			a.log.Warn(ctx, "removing the enrolments pending beside a first factor failed", "user", f.UserID, "error", err.Error())
			continue
		}
		beside = !removed
	}
	if !beside {
		return nil
	}
	if _, err := a.factors.Remove(ctx, f.UserID, f.ID); err != nil {
		return err
	}
	return errConfirmedBeside
}

// dropPending removes, by remove, every enrolment of userID that rows
// read still pending but id ("" for none).
func dropPending(ctx context.Context, rows FactorStore, remove func(ctx context.Context, userID, id string) (bool, error), userID, id string) error {
	factors, _, err := rows.Read(ctx, userID)
	if err != nil {
		return err
	}
	for _, f := range factors {
		if f.Confirmed() || f.ID == id {
			continue
		}
		if _, err := remove(ctx, userID, f.ID); err != nil {
			return err
		}
	}
	return nil
}

// mayEnrol checks a new factor of the caller's own account, named name:
// an address proved (mayAddFactors), the owner's proof, and room among
// its factors (which it returns, with the account and the name as
// checked).
func (a *Service) mayEnrol(ctx context.Context, p domain.Principal, userID, name string, proof Proof) (domain.User, []Factor, string, bool, error) {
	u, err := a.ownFactors(ctx, p, userID)
	if err != nil {
		return u, nil, "", false, err
	}
	name, fe := domain.TextRule{Field: "name", Max: 64}.Check(name)
	if fe != nil {
		return u, nil, "", false, domain.Invalid("The factor's name is not valid.", *fe)
	}
	if err := a.mayAddFactors(u); err != nil {
		return u, nil, "", false, err
	}
	// A factor more takes a proof of one the account has: else a thief
	// with the password and a session would add their own, and log in
	// with it.
	factored, err := a.proveOwnerFactor(ctx, u, proof)
	if err != nil {
		return u, nil, "", false, err
	}
	factors, _, err := a.factors.Read(ctx, userID)
	if err != nil {
		return u, nil, "", false, err
	}
	if len(factors) >= maxFactors {
		return u, nil, "", false, errTooManyFactors
	}
	return u, factors, name, factored, nil
}

// ErrFactorEmailNotVerified refuses a factor, or recovery codes, to an
// account whose address was never proved.
var ErrFactorEmailNotVerified = &domain.Error{Kind: domain.ErrForbidden, Code: "email_not_verified",
	Message: "Verify your email address before adding a second factor: follow the link we mailed you, or ask for a new one (POST /v1/email-verifications)."}

// mayAddFactors refuses a factor or recovery codes to account u (as read
// by the request) while its address is not verified: whoever signs up
// with a stranger's address, never verified, would otherwise add a factor
// whose notice and revert link go to the address's owner, who ignores
// mail about an account she never made; once the link ends, her reset
// (whoever reads the address is trusted as the owner) answers the
// stranger's factor, never a session, and the address is hers no more.
// Judged on the row the request read, nothing rechecked later: an
// account's address, once verified, stays so while it is visible (an
// email change keeps the verified address until the new one is verified,
// and completes it verified; a revert gives back an address verified;
// only a deletion clears it).
func (a *Service) mayAddFactors(u domain.User) error {
	if u.EmailVerifiedAt.IsZero() {
		return ErrFactorEmailNotVerified
	}
	return nil
}

// ConfirmTOTP finishes the caller's enrolment with a first code: the
// factor works from then on, and the code is used. The account's first
// factor also gets a new recovery set, shown once here (a set left by
// factors removed before is replaced). Counted against the code's
// throttle from the client's address (checkTOTP). Cost: one read of the account and
// one of the factors, the node's clock, the throttle, the notice (its mail count, its
// token's lightweight transaction and the mail, with mail on), one
// lightweight transaction (three for a first factor: its set, and the
// set fenced, keepRecovery), the account read again at SERIAL.
func (a *Service) ConfirmTOTP(ctx context.Context, p domain.Principal, userID, factorID, code string) (Confirmation, error) {
	u, factors, set, f, err := a.pendingFactor(ctx, p, userID, factorID, FactorTOTP)
	if err != nil {
		return Confirmation{}, err
	}
	step, err := a.checkTOTP(ctx, u.ID, f, code)
	if err != nil {
		return Confirmation{}, err
	}
	pending := f.Sealed
	f.LastStep = step
	return a.confirmFactor(ctx, p, u, factors, set, f, pending)
}

// pendingFactor reads the caller's pending factor factorID of kind, with
// the account and its factors and recovery set. One begun over
// enrolmentTTL ago is gone, though its row may read pending: an attempt
// of its insert held at a node, sent again, may land after the row
// expired and write it pending anew
// (TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed).
func (a *Service) pendingFactor(ctx context.Context, p domain.Principal, userID, factorID string, kind FactorKind) (domain.User, []Factor, RecoverySet, Factor, error) {
	u, err := a.ownFactors(ctx, p, userID)
	if err != nil {
		return u, nil, RecoverySet{}, Factor{}, err
	}
	factors, set, err := a.factors.Read(ctx, userID)
	if err != nil {
		return u, nil, set, Factor{}, err
	}
	i := slices.IndexFunc(factors, func(f Factor) bool { return f.ID == factorID })
	if i < 0 {
		return u, nil, set, Factor{}, ErrFactorNotFound
	}
	f := factors[i]
	if f.Confirmed() || a.now().Sub(f.CreatedAt) > enrolmentTTL {
		return u, nil, set, Factor{}, errEnrolmentGone
	}
	// Over enrolmentTTL by this process's clock or the node's, which
	// expired the row: a process behind would otherwise confirm a row
	// written anew just after its end
	// (TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed).
	node, err := a.users.NodeNow(ctx)
	if err != nil {
		return u, nil, set, Factor{}, err
	}
	if node.Sub(f.CreatedAt) > enrolmentTTL {
		return u, nil, set, Factor{}, errEnrolmentGone
	}
	if f.Kind != kind {
		return u, nil, set, Factor{}, errOtherKind(f.Kind)
	}
	return u, factors, set, f, nil
}

// errOtherKind answers a confirmation of one kind sent for a factor of
// another.
func errOtherKind(kind FactorKind) error {
	field := "code"
	if kind == FactorPasskey {
		field = "passkey"
	}
	return domain.Invalid("This factor is a "+string(kind)+"; confirm it with its "+field+".",
		domain.FieldError{Field: field, Code: "required", Message: "is required to confirm a " + string(kind)})
}

// confirmFactor finishes f's enrolment once its first use proved it
// (f.Sealed and f.LastStep as it gave them; pending its Sealed as begun):
// the notice to the address first, then for the account's first factor a
// new recovery set (shown once), then the factor made permanent, then
// the account read again: a confirmation relies on the caller's session
// p, and one that a reset, a revert, a sign-out everywhere or a
// suspension stopped while the confirmation was under way (before the
// factor's compare-and-set landed, or the read would have found it
// still working) takes its factor away again and answers ErrNoSession,
// as a login in flight deletes its session again (openSession): else a
// thief's confirmation slower than the owner's reset leaves the thief's
// factor standing between her new password and a session. The account
// is read again after a compare-and-set whose answer was lost too (the
// factor may stand). A process that dies between the two leaves the
// factor; its notice's link removes it. A first factor then checks that
// it stands alone (standsAlone), and its set is fenced last
// (keepRecovery), so that the codes shown are the set's.
func (a *Service) confirmFactor(ctx context.Context, p domain.Principal, u domain.User, factors []Factor, set RecoverySet, f Factor, pending string) (Confirmation, error) {
	first := !slices.ContainsFunc(factors, Factor.Confirmed)
	if f.PasswordOnly && !first {
		// Proven by the password alone, and a first factor was confirmed
		// since: its confirmation removes such enrolments
		// (dropPendingBesides), but a removal that failed, or a process
		// that died before it, left this one, and a factor more takes a
		// code of one the account has
		// (TestAnEnrolmentTheFirstFactorLeftPendingIsNotConfirmedBesideIt).
		// Taken away (a removal that fails leaves it refused), and begun
		// again with a code.
		_, _ = a.factors.Remove(ctx, f.UserID, f.ID)
		return Confirmation{}, errEnrolmentGone
	}
	if err := a.mailFactorNotice(ctx, u, f); err != nil {
		return Confirmation{}, err
	}
	// The account's first factor gets a new recovery set before it
	// works: a set left from factors removed before (whose removal
	// failed) must never come back to life with this one, so it is
	// replaced first, whatever it was. A set made for a confirmation that
	// then fails opens nothing (codes count only beside a confirmed
	// factor), and the next first factor replaces it again.
	var codes []string
	var written RecoverySet
	var err error
	if first {
		if codes, written, err = a.replaceRecovery(ctx, u.ID, set.Generation); err != nil {
			return Confirmation{}, err
		}
	}
	f.ConfirmedAt, f.LastUsedAt = a.now(), a.now()
	ok, err := a.factors.Confirm(ctx, f, pending)
	if err != nil {
		// The factor may be confirmed now or later: checked again all
		// the same (a removal fences a confirmation still on its way).
		if gone := a.confirmedBy(ctx, p, f, u.EmailKey); errors.Is(gone, domain.ErrNoSession) || errors.Is(gone, errEnrolmentGone) {
			return Confirmation{}, gone
		}
		if errors.Is(err, domain.ErrOutcomeUnknown) {
			a.fenceUnconfirmed(ctx, f)
		}
		if first {
			// The factor may be confirmed, and its retry finds it so.
			a.dropPendingBesides(ctx, u.ID, f.ID)
		}
		return Confirmation{}, err
	}
	if !ok {
		return Confirmation{}, errEnrolmentGone
	}
	if err := a.confirmedBy(ctx, p, f, u.EmailKey); err != nil {
		return Confirmation{}, err
	}
	if first {
		if err := a.standsAlone(ctx, f); err != nil {
			return Confirmation{}, err
		}
		if codes, err = a.keepRecovery(ctx, written, codes); err != nil {
			return Confirmation{}, err
		}
	}
	return Confirmation{Factor: viewOf(f), RecoveryCodes: codes}, nil
}

// confirmedBy checks again at the end that p's session, which confirmed
// factor f, still works on the account, and removes f when it does not
// (ErrNoSession once removed): the factor is written (or its write's
// answer was lost), so a reset or a sign-out landing from now on finds
// it there, one that landed before is read here. At SERIAL: one from
// another data centre is seen too, and a factor, unlike a session, is
// not checked against the epoch at each use. Likewise the account must
// still have told, the address f's notice went to: one whose change of
// address completed meanwhile would keep a factor its owner was never
// told of at the address she has, its notice's link stale
// (errEnrolmentGone once removed: begun again, its notice goes there;
// TestAFactorIsNeverConfirmedPastItsNoticesAddress).
func (a *Service) confirmedBy(ctx context.Context, p domain.Principal, f Factor, told string) error {
	again, err := a.users.GetSerial(ctx, f.UserID)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	admits, err := a.stillAdmits(ctx, again.Access(), p.Session)
	switch {
	case err != nil:
		return err
	case admits && again.EmailKey == told:
		return nil
	}
	if err := a.dropFactor(ctx, f.UserID, f.ID); err != nil {
		return err
	}
	if !admits {
		return domain.ErrNoSession
	}
	return errEnrolmentGone
}

// fenceUnconfirmed follows a confirmation of f whose answer was lost
// and whose session still worked when confirmedBy read the account: a
// row read confirmed was written (its retry says so), but one still
// pending (or unread) may yet be confirmed by the write, landing at any
// later time, after a reset or a sign-out that ends the session too, and
// nothing would check that session again. So its row is removed, a
// fence: the write lands on nothing (IF sealed = ...), and the client
// begins again (TestAFactorConfirmedLateDoesNotSurviveAReset). A removal
// that fails is logged.
func (a *Service) fenceUnconfirmed(ctx context.Context, f Factor) {
	factors, _, err := a.factors.Read(ctx, f.UserID)
	if err == nil && slices.ContainsFunc(factors, func(g Factor) bool { return g.ID == f.ID && g.Confirmed() }) {
		return
	}
	if _, err := a.factors.Remove(ctx, f.UserID, f.ID); err != nil {
		a.log.Warn(ctx, "removing an enrolment whose confirmation's answer was lost failed", "user", f.UserID, "error", err.Error())
	}
}

// checkTOTP verifies code, a pending factor f's first, through the
// throttle of userID's codes under the client's address alone: the step
// it is of, or ErrWrongCode. Its secret was shown only to the enrolment
// that wrote f, whose id nobody else was answered, so nobody guesses it
// to any end; the tier of all addresses, which whoever holds the
// password fills with wrong codes at his challenges, would refuse the
// owner every new app (TestWrongCodesFromManyAddressesLeaveTheOwnersNewAppConfirmable).
func (a *Service) checkTOTP(ctx context.Context, userID string, f Factor, code string) (int64, error) {
	if code == "" {
		return 0, errCodeRequired
	}
	c, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.guessTiers("code/"+userID, clientOf(ctx).IP)[:1]...)
	if err == nil {
		err = c.inTime()
	}
	if err != nil {
		return 0, err
	}
	step, ok, err := a.totp.Step(f.Sealed, userID, code, a.cfg.Now())
	if err != nil {
		return 0, err
	}
	ok = ok && step > f.LastStep
	if err := codeVerdict(ctx, c, ok, ErrWrongCode); err != nil {
		return 0, err
	}
	return step, nil
}

// admitCode counts an attempt at an app's code for account userID under
// tiers of its own with the password's limits, from the client's address
// and from all, and refuses it over the limit or past its time.
func (a *Service) admitCode(ctx context.Context, userID string) (*counted, error) {
	c, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.guessTiers("code/"+userID, clientOf(ctx).IP)...)
	if err != nil {
		return nil, err
	}
	return c, c.inTime()
}

// admitPasskey counts a passkey's answer for account userID under the
// client's address alone, as a recovery code is: a signature is not
// guessed, and a tier of all addresses would let whoever holds the
// password and a few addresses fill it with wrong app codes and refuse the
// owner's passkey. The address's tier keeps any one client from flooding.
func (a *Service) admitPasskey(ctx context.Context, userID string) (*counted, error) {
	c, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.guessTiers("passkey/"+userID, clientOf(ctx).IP)[:1]...)
	if err != nil {
		return nil, err
	}
	return c, c.inTime()
}

// codeVerdict records a code's verdict as verdict does a password's, and
// answers wrong (naming the code's field) where it answers
// ErrInvalidCredentials.
func codeVerdict(ctx context.Context, c *counted, right bool, wrong error) error {
	err := c.verdict(ctx, right)
	if errors.Is(err, ErrInvalidCredentials) {
		return wrong
	}
	return err
}

// replaceRecovery makes a new recovery set in place of generation prev:
// the codes to show, once. Only the hashes are stored.
func (a *Service) replaceRecovery(ctx context.Context, userID, prev string) ([]string, RecoverySet, error) {
	s, codes := a.newRecoverySet(userID)
	ok, err := a.setRecovery(ctx, s, prev)
	if err != nil {
		return nil, s, err
	}
	if !ok {
		// Another request replaced it first: its codes stand.
		return nil, s, domain.ErrBusy
	}
	return codes, s, nil
}

// setRecovery writes s in place of generation prev, unless prev is a
// deleted account's fence, which no request replaces (ErrNoSession: the
// account is gone).
func (a *Service) setRecovery(ctx context.Context, s RecoverySet, prev string) (bool, error) {
	if prev == RecoveryEnded {
		return false, domain.ErrNoSession
	}
	return a.factors.SetRecovery(ctx, s, prev)
}

// newRecoverySet makes a set of new codes for userID, and the codes.
func (a *Service) newRecoverySet(userID string) (RecoverySet, []string) {
	s := RecoverySet{UserID: userID, Generation: domain.NewID("rcs_"), Used: map[string]string{}, CreatedAt: a.now()}
	codes := make([]string, recoveryCodes)
	for i := range codes {
		codes[i] = newRecoveryCode()
		s.Codes = append(s.Codes, recoveryHash(userID, codes[i]))
	}
	return s, codes
}

// keepRecovery fences set, written for a first factor now confirmed,
// whose codes this answer shows: the same codes under a new generation,
// IF generation = set's. Another first factor's confirmation that read
// the factors before this one was confirmed replaces the set it read,
// maybe this one, and its write may land at any later time; once the
// generation moved on, it lands on nothing, and every later reader finds
// this factor confirmed (no first factor: no set written). One that
// landed first fails this write: a new set is made in place of what
// stands, and its codes shown instead
// (TestTheFirstFactorsCodesStandAgainstAnotherFirstConfirmation).
func (a *Service) keepRecovery(ctx context.Context, set RecoverySet, codes []string) ([]string, error) {
	prev := set.Generation
	for range maxChangeAttempts {
		set.Generation = domain.NewID("rcs_")
		ok, err := a.setRecovery(ctx, set, prev)
		if err != nil || ok {
			return codes, err
		}
		_, stands, err := a.factors.Read(ctx, set.UserID)
		if err != nil {
			return nil, err
		}
		prev = stands.Generation
		set, codes = a.newRecoverySet(set.UserID)
	}
	return nil, domain.ErrBusy
}

// newRecoveryCode is 80 random bits as four groups of four base32
// letters and digits ("k7qm-2xfa-..."): too many to guess online or to
// search offline from a stolen hash.
func newRecoveryCode() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	s := strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
	return s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
}

// recoveryHash is what a set stores of a code: a SHA-256 bound to the
// account, of the code without its dashes, spaces or case.
func recoveryHash(userID, code string) string {
	code = strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
	sum := sha256.Sum256([]byte("shelf recovery code\x00" + userID + "\x00" + code))
	return hex.EncodeToString(sum[:])
}

// ListFactors lists an account's confirmed factors and its recovery
// codes left: to the owner, or to an admin (never a secret), whose list
// of another's is audited before the factors are read (auditSessions).
// One read of the factors (and, for an admin, one of the account).
func (a *Service) ListFactors(ctx context.Context, p domain.Principal, userID string) (Factors, error) {
	if a.factors == nil {
		return Factors{}, ErrFactorsOff
	}
	account, err := a.mayManageSessions(ctx, p, userID, nil)
	if err != nil {
		return Factors{}, err
	}
	if err := a.auditSessions(ctx, p, account, domain.AuditFactorsListed); err != nil {
		return Factors{}, err
	}
	factors, set, err := a.factors.Read(ctx, userID)
	if err != nil {
		return Factors{}, err
	}
	out := Factors{Factors: []FactorView{}}
	for _, f := range factors {
		if f.Confirmed() {
			out.Factors = append(out.Factors, viewOf(f))
		}
	}
	if len(out.Factors) > 0 {
		out.RecoveryCodesLeft = set.Left()
	}
	return out, nil
}

// RemoveFactor removes one of an account's factors: by its owner with
// the current password and a code (of any factor, or a recovery code),
// a confirmed one told to the address first (mailFactorsChange), or by an admin on an account not an admin's, audited first, then
// fenced (fenceNonAdmin). The account's last factor takes its recovery
// set with it.
func (a *Service) RemoveFactor(ctx context.Context, p domain.Principal, userID, factorID string, proof Proof) error {
	if a.factors == nil {
		return ErrFactorsOff
	}
	m, err := a.mayManageSessions(ctx, p, userID, nil)
	if err != nil {
		return err
	}
	factors, _, err := a.factors.Read(ctx, userID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(factors, func(f Factor) bool { return f.ID == factorID })
	if i < 0 {
		return ErrFactorNotFound
	}
	if p.UserID == userID {
		u, err := a.users.Get(ctx, userID)
		if err != nil {
			return err
		}
		if err := a.proveOwner(ctx, u, proof); err != nil {
			return err
		}
		// Told to the address before the removal, as a factor added is:
		// whoever holds a session, the password and one code would
		// otherwise take the factor away untold, and log in with the
		// password alone from then on
		// (TestAThiefsRemovalOfHerFactorIsToldToTheOwnerFirst). An
		// enrolment still pending guards nothing yet: no notice.
		if factors[i].Confirmed() {
			if err := a.mailFactorsChange(ctx, u, a.factorRemovedNotice); err != nil {
				return err
			}
		}
	} else {
		if m.IsAdmin() {
			return errOtherAdminsFactors
		}
		if err := a.auditSessions(ctx, p, m, domain.AuditFactorRemoved); err != nil {
			return err
		}
		u, err := a.fenceNonAdmin(ctx, userID)
		if err != nil {
			return err
		}
		// Told to the address too: whoever asked support for it may hold
		// the password and not the phone, and the password alone logs
		// him in from then on (TestAnAdminsRemovalOfHerFactorIsToldToTheOwnerFirst).
		if factors[i].Confirmed() {
			if err := a.mailFactorsChange(ctx, u, a.factorRemovedByAdminNotice); err != nil {
				return err
			}
		}
	}
	return a.dropFactor(ctx, userID, factorID)
}

// fenceNonAdmin moves the account's version (and time of change) on,
// changing nothing else, once a SERIAL read finds it visible and no
// admin's, and returns the account as fenced (whose address the removal
// tells): the decision that lets an admin remove its factor, which is
// in another partition and carries no version of the account. A grant
// of admin that lands before the fence moves the version, so the
// fence's compare-and-set fails, it reads again and refuses; one that
// lands after it is ordered after the decision. A fence left by a
// removal that then stopped (its answer lost, its process dead) changes
// nothing the owner uses.
func (a *Service) fenceNonAdmin(ctx context.Context, userID string) (domain.User, error) {
	// An admin's: the account's own changes do not hold it back.
	out, err := a.updateByAdmin(ctx, userID, func(u domain.User) (domain.User, bool, error) {
		switch {
		case !u.Visible():
			return u, false, domain.ErrUserNotFound
		case u.IsAdmin():
			return u, false, errOtherAdminsFactors
		}
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return out, domain.ErrUserNotFound
	}
	return out, err
}

var errOtherAdminsFactors = &domain.Error{Kind: domain.ErrForbidden, Code: "forbidden",
	Message: "An admin cannot remove another admin's second factors."}

// NewRecoveryCodes replaces the caller's recovery codes, with the
// current password and a code: the new ones, shown once.
func (a *Service) NewRecoveryCodes(ctx context.Context, p domain.Principal, userID string, proof Proof) ([]string, error) {
	u, err := a.ownFactors(ctx, p, userID)
	if err != nil {
		return nil, err
	}
	factors, set, err := a.factors.Read(ctx, userID)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(factors, Factor.Confirmed) {
		return nil, errNoFactor
	}
	if err := a.mayAddFactors(u); err != nil {
		return nil, err
	}
	if err := a.proveOwner(ctx, u, proof); err != nil {
		return nil, err
	}
	// Told to the address before the codes are made, as a factor added
	// is: whoever holds a session, the password and one code (phished as
	// the owner typed it) would otherwise hold ten ways past her factor,
	// hers dead, and she would never learn it
	// (TestAThiefsNewRecoveryCodesAreToldToTheOwnerFirst).
	if err := a.mailFactorsChange(ctx, u, a.recoveryCodesNotice); err != nil {
		return nil, err
	}
	// Read again: a recovery code this proof used moved the set on.
	_, set, err = a.factors.Read(ctx, userID)
	if err != nil {
		return nil, err
	}
	codes, written, err := a.replaceRecovery(ctx, userID, set.Generation)
	if err != nil {
		return nil, err
	}
	// Checked again at the end, as a factor's confirmation is
	// (confirmedBy): a revert, a reset or a sign-out everywhere that
	// ended p's session while the set was on its way found nothing made
	// since to remove, and the set landed after it. Taken back, and never
	// shown (TestAThiefsRecoveryCodesLandingAfterTheRevertDoNotStand); a
	// process that dies first shows the codes to nobody.
	again, err := a.users.GetSerial(ctx, userID)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return nil, err
	}
	admits, err := a.stillAdmits(ctx, again.Access(), p.Session)
	if err != nil {
		return nil, err
	}
	if !admits {
		if err := a.factors.RemoveRecovery(ctx, userID, written.Generation); err != nil {
			return nil, err
		}
		return nil, domain.ErrNoSession
	}
	return codes, nil
}

// errChangeNoticeFailed answers a change of the account's second factors
// (new recovery codes, a factor removed) whose notice to the account's
// address could not be sent: nothing is changed.
var errChangeNoticeFailed = &domain.Error{Kind: domain.ErrUnavailable, Code: "notice_failed",
	Message: "The notice to your email address could not be sent, so nothing was changed; try again."}

// mailFactorsChange tells u's address, before the change is written, what
// the owner's proof is about to change of its second factors (write's
// mail), with a reset link for an owner who did not: whoever did holds her
// password, a session and a code, and a reset ends every session and the
// password. A notice not sent refuses the change (errChangeNoticeFailed),
// so no change goes untold whatever dies after; one sent for a change
// that then fails only warns. Counted as a factor's notice
// (mailFactorNotice): the account's own budget, never held back to a
// verified address, held back (429) to one that is not.
func (a *Service) mailFactorsChange(ctx context.Context, u domain.User, write func(u domain.User, token string) Message) error {
	if !a.mailOn() {
		return nil
	}
	limit := heldBack
	if !u.EmailVerifiedAt.IsZero() {
		limit = neverHeld
	}
	err := a.sendMessage(ctx, u, PurposeResetPassword, limit, owners, "", write)
	var over *mailLimited
	if errors.As(err, &over) {
		return &domain.Error{Kind: domain.ErrTooManyAttempts, Code: "too_many_mails", RetryAfter: max(over.wait, time.Second),
			Message: "Your email address had as many mails as it may this hour, and this change must be told to it first, so nothing was changed; try again later."}
	}
	if err != nil {
		a.log.Warn(ctx, "a notice of a change of the second factors failed; not changed", "user", u.ID, "error", err.Error())
		return errChangeNoticeFailed
	}
	return nil
}

// factorRemovedNotice is the notice of a factor removed by the owner's
// proof, with a reset link (token). Like every notice, it holds no text
// anyone chose (not the factor's name).
func (a *Service) factorRemovedNotice(u domain.User, token string) Message {
	return a.factorsNotice(u, token, "A second factor was removed from your shelf account",
		"a second factor (an authenticator app or a passkey) was just removed from the shelf account of this address, "+
			"from one of its sessions, with its password and a second factor's code; with the last factor, the recovery codes go too, "+
			"and the password alone logs in",
		"If it was you", "someone has your password", "Then add your second factor again.")
}

// factorRemovedByAdminNotice is the notice of a factor an admin removed,
// with a reset link (token).
func (a *Service) factorRemovedByAdminNotice(u domain.User, token string) Message {
	return a.factorsNotice(u, token, "A second factor was removed from your shelf account",
		"an administrator of shelf removed a second factor (an authenticator app or a passkey) from the shelf account "+
			"of this address, as asked by someone who said they had lost it; with the last factor, the recovery codes go too, "+
			"and the password alone logs in",
		"If it was you who asked", "someone may have your password", "Then add your second factor again.")
}

// recoveryCodesNotice is the notice of new recovery codes, with a reset
// link (token).
func (a *Service) recoveryCodesNotice(u domain.User, token string) Message {
	return a.factorsNotice(u, token, "New recovery codes were made for your shelf account",
		"new recovery codes were just made for the shelf account of this address, from one of its sessions, "+
			"with its password and a second factor's code; the codes it had before no longer work",
		"If it was you", "someone has your password and holds the new codes",
		"Then make new recovery codes on the account page, which ends the others.")
}

// factorsNotice is the body the notices of a change of the second factors
// share: what happened, nothing to do if it was the owner (mine), and if
// not, who may hold what (someone), a reset link (token) and what to do
// after the reset.
func (a *Service) factorsNotice(u domain.User, token, subject, happened, mine, someone, after string) Message {
	return Message{To: u.Email, Subject: subject, Text: fmt.Sprintf(
		"Hello,\n\n%s.\n\n%s, there is nothing to do.\n\n"+
			"If it was not you, %s: choose a new password here "+
			"(the link works once, for %s, even if the password is changed again meanwhile):\n\n%s\n\n"+
			"Choosing one signs out every session of the account. %s\n",
		happened, mine, someone, inWords(a.mail.ResetTTL), Link(a.mail.PublicURL, PurposeResetPassword, token), after)}
}

var errNoFactor = &domain.Error{Kind: domain.ErrConflict, Code: "no_factor",
	Message: "This account has no second factor; enrol one first (POST /v1/users/{id}/factors)."}

// proveFactor checks a code of one of factors, or a recovery code of
// set, and uses it: at most once, whatever the retries.
func (a *Service) proveFactor(ctx context.Context, userID string, factors []Factor, set RecoverySet, proof Proof) error {
	if proof.RecoveryCode != "" {
		return a.useRecoveryCode(ctx, userID, set, proof.RecoveryCode)
	}
	if proof.Passkey != nil && proof.Code == "" {
		return a.provePasskey(ctx, userID, factors, proof.Passkey)
	}
	if proof.Code == "" {
		return errCodeRequired
	}
	// The code is checked against every confirmed factor under one
	// throttled attempt.
	c, err := a.admitCode(ctx, userID)
	if err != nil {
		// Counted apart (useRecoveryCode, admitPasskey), so that a
		// guesser of these codes locks the owner out of neither; said
		// here, where a proof may be either (a confirmation takes its
		// new app's code alone: checkTOTP).
		return aWayPast(err, "A recovery code, or a passkey where the account has one, is counted apart from these codes and still works.")
	}
	var match *Factor
	var step int64
	for i, f := range factors {
		if !f.Confirmed() || f.Kind != FactorTOTP {
			continue
		}
		s, ok, err := a.totp.Step(f.Sealed, userID, proof.Code, a.cfg.Now())
		if err != nil {
			// A secret no configured key opens (its key dropped from
			// SHELF_FACTOR_KEYS): passed over, so the account's other
			// apps still prove their owner
			// (TestAFactorNoKeyOpensLeavesTheOthersCodesWorking).
			a.log.Warn(ctx, "a second factor's secret could not be read; its codes are not taken", "user", userID, "factor", f.ID, "error", err.Error())
			continue
		}
		if ok && s > f.LastStep && match == nil {
			match, step = &factors[i], s
		}
	}
	used := false
	if match != nil {
		// The step is the code's one use: of racers with one code, one.
		if used, err = a.factors.UseStep(ctx, *match, step, a.now()); err != nil {
			return err
		}
	}
	return codeVerdict(ctx, c, used, ErrWrongCode)
}

// useRecoveryCode uses one of set's codes, once. Throttled by the
// client's address alone: 80 bits are not guessed online, and an
// account-wide limit would let a guesser of authenticator codes lock the
// owner out of this way in too.
func (a *Service) useRecoveryCode(ctx context.Context, userID string, set RecoverySet, code string) error {
	c, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.guessTiers("recovery/"+userID, clientOf(ctx).IP)[:1]...)
	if err != nil {
		return err
	}
	if err := c.inTime(); err != nil {
		return err
	}
	h := recoveryHash(userID, code)
	known := false
	for _, c := range set.Codes {
		known = known || subtle.ConstantTimeCompare([]byte(c), []byte(h)) == 1
	}
	_, spent := set.Used[h]
	used := false
	if known && !spent {
		// Audited before it is used: no entry, no use (an entry may stand
		// for a use that then lost its race, or whose answer was lost).
		client := clientOf(ctx)
		e := domain.AuditEntry{UserID: userID, At: a.now(), Action: domain.AuditRecoveryCodeUsed, Actor: userID,
			Via: domain.ViaAPI, From: domain.Origin{IP: client.IP, UserAgent: domain.CleanText(client.UserAgent, UserAgentMax)}}
		if _, err := a.audit.RecordNew(ctx, e); err != nil {
			return err
		}
		if used, err = a.factors.UseRecovery(ctx, set, h, domain.NewID("use_")); err != nil {
			return err
		}
	}
	if err := codeVerdict(ctx, c, used, ErrWrongRecoveryCode); err != nil {
		return err
	}
	a.mailRecoveryNotice(ctx, userID, set.Left()-1)
	return nil
}

// mailRecoveryNotice tells the account's address, after the answer, that
// one of its recovery codes was used and how many are left: an owner
// whose codes were stolen learns it at the first use. Counted against the
// address's hourly limit in the budget of the account's own mails (a
// login with the password and a code caused it), never held back to a
// verified address, and sent with the time a mail holding its slot has
// (slotHeld).
func (a *Service) mailRecoveryNotice(ctx context.Context, userID string, left int) {
	if !a.mailOn() {
		return
	}
	a.afterAnswerSure(ctx, "mailing a recovery code's notice", func(ctx context.Context) error {
		u, err := a.users.Get(ctx, userID)
		if err != nil {
			return err
		}
		if err := a.countMail(ctx, u.EmailKey, owners); err != nil && u.EmailVerifiedAt.IsZero() {
			return err
		}
		// Its slot held, the mail has time of its own: a take answering
		// as the job's deadline passed left it none, and the owner no
		// warning (TestASlowTakeLeavesTheRecoveryNoticeItsTime).
		ctx, cancel := slotHeld(ctx)
		defer cancel()
		return a.mail.Mailer.Send(ctx, Message{To: u.Email, Subject: "A recovery code of your shelf account was used", Text: fmt.Sprintf(
			"Hello,\n\na recovery code of the shelf account of this address was just used in place of an authenticator's code; "+
				"%d unused codes are left.\n\n"+
				"If it was you, there is nothing to do (you can make new codes on the account page).\n\n"+
				"If it was not you, someone has your password and your recovery codes: reset your password from the login page "+
				"(it signs every session out), then make new recovery codes.\n", left)})
	})
}

// ErrWrongRecoveryCode answers a recovery code that is not one of the
// account's unused ones.
var ErrWrongRecoveryCode = &domain.Error{Kind: domain.ErrUnauthorized, Code: "invalid_code",
	Message: "The recovery code is wrong or was used already.",
	Fields:  []domain.FieldError{{Field: "recoveryCode", Code: "invalid", Message: "is not an unused recovery code of this account"}}}

// confirmedFactors reads account userID's confirmed factors: having one
// makes its password answer a challenge instead of a session.
func (a *Service) confirmedFactors(ctx context.Context, userID string) ([]Factor, error) {
	if a.factors == nil {
		return nil, nil
	}
	factors, _, err := a.factors.Read(ctx, userID)
	return slices.DeleteFunc(factors, func(f Factor) bool { return !f.Confirmed() }), err
}

// methods are the second steps factors offer, recovery codes last.
func methods(factors []Factor, passkeys bool) []string {
	var out []string
	for _, kind := range []FactorKind{FactorTOTP, FactorPasskey} {
		if slices.ContainsFunc(factors, func(f Factor) bool { return f.Kind == kind }) && (kind != FactorPasskey || passkeys) {
			out = append(out, string(kind))
		}
	}
	return append(out, domain.MadeRecoveryCode)
}

// challenge answers a proven password of an account with a factor: a
// single-use token, bound to the password's epoch, that SecondFactor
// turns into a session within challengeTTL. One lightweight transaction.
// from is what answered it (domain.MadePassword or MadeReset), kept in
// the token's subject for the session's MadeWith.
func (a *Service) challenge(ctx context.Context, u domain.Access, from string, factors []Factor) (LoginResult, error) {
	if a.mail.Tokens == nil {
		return LoginResult{}, ErrFactorsOff
	}
	token, hash := newMailToken()
	t := Token{Hash: hash, Purpose: PurposeLoginChallenge, UserID: u.ID, PasswordPrint: epochPrint(u.ID, u.PasswordEpoch),
		CreatedAt: a.now(), Subject: from}
	t.ExpiresAt = t.CreatedAt.Add(challengeTTL)
	options, err := a.passkeyOptions(u.ID, token, factors)
	if err != nil {
		return LoginResult{}, err
	}
	if err := a.mail.Tokens.Create(ctx, t); err != nil {
		return LoginResult{}, err
	}
	return LoginResult{Challenge: token, ExpiresAt: t.ExpiresAt, Methods: methods(factors, a.passkeys != nil), Passkey: options}, nil
}

// errChallenge refuses a second step's challenge, naming the field.
var errChallenge = func(code, message string) error {
	return &domain.Error{Kind: domain.ErrUnauthorized, Code: "invalid_challenge",
		Message: "The login challenge " + message + "; log in again with your password.",
		Fields:  []domain.FieldError{{Field: "challenge", Code: code, Message: message}}}
}

// SecondFactor turns a login's challenge and a code (or a recovery code,
// or a passkey's answer to this challenge) into a session. The order: the
// code is checked and used (its step, or the recovery code, taken by a
// lightweight transaction: at most once; a passkey's count moved on the
// same way, when it keeps one), the account checked as a login checks it
// (mayLogIn), then the challenge is used (at most once), then the session
// is opened as a login does (openSession: the account checked again once
// it is written), and the challenge marked done. A wrong code leaves the
// challenge for the next try (the throttle counts them); a lost answer
// after the challenge's use costs a new login, never a second session.
func (a *Service) SecondFactor(ctx context.Context, challenge string, proof Proof, client Client) (LoginResult, error) {
	if a.factors == nil || a.mail.Tokens == nil {
		return LoginResult{}, ErrFactorsOff
	}
	if proof.Code == "" && proof.RecoveryCode == "" && proof.Passkey == nil {
		return LoginResult{}, errCodeRequired
	}
	if proof.Passkey != nil {
		// The passkey signs the challenge made from this token, which is
		// used below: once.
		proof.Passkey.challenge = passkeyChallenge(challenge)
	}
	t, err := a.readToken(ctx, challenge, PurposeLoginChallenge)
	if err != nil {
		return LoginResult{}, challengeError(err)
	}
	if !t.UsedAt.IsZero() {
		return LoginResult{}, errChallenge("used", "was used already")
	}
	var u domain.Credentials
	var factors []Factor
	var set RecoverySet
	var uerr, ferr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			u, uerr = a.users.Credentials(ctx, t.UserID)
		} else {
			factors, set, ferr = a.factors.Read(ctx, t.UserID)
		}
	})
	if uerr == nil && u.Status == domain.StatusSuspended && t.PasswordPrint == epochPrint(u.ID, u.PasswordEpoch-1) {
		// A suspension since the challenge, and nothing else: its
		// compare-and-set moved the epoch on by one (S3), which alone
		// would read as a password changed; the suspension says why, as
		// the login would (TestASecondStepAfterASuspensionIsToldOfIt).
		// One whose end has passed still admits no challenge of the
		// epoch before.
		if err := a.blocked(ctx, u.Access); err != nil {
			return LoginResult{}, a.suspendedWhy(ctx, u.ID, err)
		}
	}
	if errors.Is(uerr, domain.ErrNotFound) || (uerr == nil && (!u.Visible() || t.PasswordPrint != epochPrint(u.ID, u.PasswordEpoch))) {
		return LoginResult{}, errChallenge("stale", "no longer applies: the account's password changed since")
	}
	for _, err := range []error{uerr, ferr} {
		if err != nil {
			return LoginResult{}, err
		}
	}
	ctx = WithClient(ctx, client)
	if err := a.proveFactor(ctx, u.ID, factors, set, proof); err != nil {
		return LoginResult{}, err
	}
	if err := a.mayLogIn(ctx, u); err != nil {
		return LoginResult{}, err
	}
	used := t
	used.UsedAt, used.UseID = a.now(), domain.NewID("use_")
	applied, err := a.mail.Tokens.Use(ctx, used)
	if err != nil {
		return LoginResult{}, err
	}
	if !applied {
		return LoginResult{}, errChallenge("used", "was used already")
	}
	second := domain.MadeTOTP
	switch {
	case proof.RecoveryCode != "":
		second = domain.MadeRecoveryCode
	case proof.Passkey != nil && proof.Code == "":
		second = domain.MadePasskey
	}
	out, err := a.openSession(ctx, u.Access, client, errChallenge("stale", "no longer applies"), cmp.Or(t.Subject, domain.MadePassword), second)
	if err != nil {
		return LoginResult{}, err
	}
	if err := a.finishToken(ctx, used); err != nil {
		return LoginResult{}, err
	}
	return out, nil
}

// challengeError names the challenge, not a token, in a token's refusal.
func challengeError(err error) error {
	var de *domain.Error
	if errors.As(err, &de) && de.Code == "invalid_token" && len(de.Fields) == 1 {
		fe := de.Fields[0]
		return errChallenge(fe.Code, fe.Message)
	}
	return err
}

// epochPrint binds a challenge to the password epoch it was proven at
// (PasswordPrint's, for an account read in part).
func epochPrint(userID string, epoch int) string {
	return PasswordPrint(domain.User{ID: userID, PasswordEpoch: epoch})
}

// Password is the proof of a current password alone (an account without
// a second factor).
func Password(current string) Proof { return Proof{CurrentPassword: &current} }

// ErrFactorNoticeFailed answers a confirmation whose notice to the
// account's address could not be sent: the factor stays unconfirmed.
var ErrFactorNoticeFailed = &domain.Error{Kind: domain.ErrUnavailable, Code: "notice_failed",
	Message: "The notice to your email address could not be sent, so the authenticator is not added; try again."}

// tooManyFactorMails answers a confirmation whose notice was held back
// by the hourly mail limit of an address not verified.
func tooManyFactorMails(wait time.Duration) error {
	return &domain.Error{Kind: domain.ErrTooManyAttempts, Code: "too_many_mails", RetryAfter: max(wait, time.Second),
		Message: "Your email address had as many mails as it may this hour, and a new authenticator must be told to it first, so it is not added yet; try again later."}
}

// mailFactorNotice mails u's address that factor f is being added, with
// the link that removes it and recovers the account (RevertFactor),
// before its confirmation: no factor works without its owner being told.
// A thief holding a session, the password and (for a second factor) a
// code could otherwise add one of their own and keep the owner out, a
// reset included (a reset keeps factors). The limit is the email
// change notice's: counted in the budget of the account's own mails,
// never held back to a verified address, held back over the hour's limit
// (and the confirmation refused) to one that is not.
// Without mail, none is sent.
func (a *Service) mailFactorNotice(ctx context.Context, u domain.User, f Factor) error {
	if !a.mailOn() {
		return nil
	}
	limit := heldBack
	if !u.EmailVerifiedAt.IsZero() {
		limit = neverHeld
	}
	err := a.sendTokenAbout(ctx, u, PurposeRevertFactor, limit, owners, f.ID)
	var over *mailLimited
	if errors.As(err, &over) {
		return tooManyFactorMails(over.wait)
	}
	if err != nil {
		a.log.Warn(ctx, "a new factor's notice failed; not confirmed", "user", u.ID, "error", err.Error())
		return ErrFactorNoticeFailed
	}
	return nil
}

// factorNotice is the notice of a factor added, with the link that
// removes it. Like every notice, it holds no text anyone chose (not the
// factor's name): the address may not be verified.
func (a *Service) factorNotice(u domain.User, token string) Message {
	return Message{To: u.Email, Subject: "A second factor was added to your shelf account", Text: fmt.Sprintf(
		"Hello,\n\nsomeone signed in to the shelf account of this address added a second factor to it "+
			"(an authenticator app or a passkey):\nfrom now on, logging in asks for it.\n\n"+
			"If it was you, there is nothing to do.\n\n"+
			"If it was not you, follow this link (it works once, for %s):\n\n%s\n\n"+
			"It removes that factor and any added after it, signs out every session of the account, and mails you a link to choose a new "+
			"password: whoever added it knew your password, so it opens nothing until a new one is chosen.\n",
		inWords(a.revertTTL()), Link(a.mail.PublicURL, PurposeRevertFactor, token))}
}

// ErrFactorRevertStale refuses a factor's revert link once the account
// no longer has the address it was mailed to (or is gone).
var ErrFactorRevertStale = tokenError("stale", "no longer applies: the account no longer has the address it was mailed to")

// factorRevertApplies checks the account a factor's revert token was
// mailed for: visible, with the address still.
func (a *Service) factorRevertApplies(t Token, u domain.User, err error) error {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return ErrFactorRevertStale
	case err != nil:
		return err
	case !u.Visible() || u.EmailKey != t.EmailKey:
		return ErrFactorRevertStale
	}
	return nil
}

// RevertFactor follows the link of a factor's notice: a recovery, as an
// email change's revert is. Every session ends (a new password epoch, in
// one compare-and-set, then revocation) and the password opens nothing
// until a reset (whoever added the factor knew it); then the factor is
// removed (with the recovery codes, when it was the last), the token
// marked done once a reset link was mailed to the address,
// counted but never held back. As for RevertEmailChange, a retry of a
// used token that is not done runs it again, and finishes. Whoever holds
// the link removes the factor and those added after it, even the owner's:
// following it by mistake costs a reset and their enrolment again.
func (a *Service) RevertFactor(ctx context.Context, token string) error {
	t, err := a.takeToken(ctx, token, PurposeRevertFactor, a.factorRevertApplies)
	if err != nil {
		return err
	}
	var before domain.User
	over := false
	out, err := a.updateRecovery(ctx, t.UserID, func(u domain.User) (domain.User, bool, error) {
		before = u
		if err := a.factorRevertApplies(t, u, nil); err != nil {
			return u, false, err
		}
		if over = recoveredSince(t, u); over {
			return u, false, nil
		}
		u.PasswordEpoch, u.PasswordSession, u.PasswordResetRequired = u.PasswordEpoch+1, "", true
		u.RecoveryEpoch++ // only the reset link mailed after it works
		cancelPending(&u)
		return u, true, nil
	})
	if errors.Is(err, domain.ErrNotFound) {
		return ErrFactorRevertStale
	}
	if err == nil && over && !out.PasswordResetRequired {
		// Her reset since: the revert is over but for its factor and
		// those added after it, which a run stopped before their removal
		// left (TestARevertRunAgainAfterItsResetRemovesTheThiefsFactors);
		// not those added after her reset, and the account's last change
		// (TestARevertRunAgainAfterItsResetSparesHerNewFactor).
		if a.factorRows() != nil {
			if err := a.dropFactor(ctx, t.UserID, t.Subject); err != nil {
				return err
			}
			if err := a.dropFactorsBetween(ctx, t.UserID, t.CreatedAt, out.UpdatedAt); err != nil {
				return err
			}
		}
		return a.finishToken(ctx, t)
	}
	if err := a.endSessions(ctx, err, t.UserID, "a factor's revert"); err != nil {
		return err
	}
	if out.Version != before.Version {
		a.releaseDropped(ctx, before, out)
	}
	// The factor, and every one added since its notice: a later factor
	// was proven by it, or by a session its holder opened with it
	// (TestAFactorsRevertUndoesTheFactorsAddedAfterIt).
	if a.factorRows() != nil {
		if err := a.dropFactor(ctx, t.UserID, t.Subject); err != nil {
			return err
		}
		if err := a.dropFactorsSince(ctx, t.UserID, t.CreatedAt); err != nil {
			return err
		}
	}
	// The reset link before the done mark, as for RevertEmailChange: a
	// retry of a done token mails nothing.
	if err := a.mailRevertsLink(ctx, out); err != nil {
		return err
	}
	return a.finishRevert(ctx, t, out)
}

// dropFactorsSince removes every factor of userID not confirmed
// domain.ClockSkew before since: those confirmed at or after it, by whatever clock,
// every enrolment still pending, and a recovery set made since. A factor's revert undoes those added after its notice. A
// revert of an email change undoes the factors added while
// the address was another's: a factor's notice (and revert link) goes to
// the address of its confirmation, so whoever changed the address cannot
// keep the owner out with a factor of theirs, one whose enrolment they
// began before the change included
// (TestARevertUndoesAFactorAddedAtTheThiefsAddress,
// TestARevertUndoesAFactorBegunBeforeTheChangeAndConfirmedAtTheThiefsAddress);
// a pending one is removed so that no confirmation in flight, its notice
// mailed to the address it read, makes it work after the revert. A retry
// of the revert removes what a failure left.
func (a *Service) dropFactorsSince(ctx context.Context, userID string, since time.Time) error {
	return a.dropFactorsBetween(ctx, userID, since, time.Time{})
}

// dropFactorsBetween is dropFactorsSince sparing every factor confirmed
// (an enrolment: begun) after until by every clock, ClockSkew after it
// (zero: none spared). A revert run again after the owner's reset
// removes what its run left of the thief's, confirmed before her reset,
// whose write until (the account's last change) follows; a factor she
// added after her reset is hers, and stands
// (TestARevertRunAgainAfterItsResetSparesHerNewFactor).
func (a *Service) dropFactorsBetween(ctx context.Context, userID string, since, until time.Time) error {
	rows := a.factorRows()
	if rows == nil {
		return nil
	}
	// since is its writer's clock, each confirmation's time its own
	// process's: one added after it through a process behind may record a
	// time before it (TestAFactorsRevertUndoesAFactorAddedAfterItOnAProcessBehind).
	since = since.Add(-domain.ClockSkew)
	factors, set, err := rows.Read(ctx, userID)
	if err != nil {
		return err
	}
	for _, f := range factors {
		at := f.ConfirmedAt
		if !f.Confirmed() {
			at = f.CreatedAt
		}
		if !until.IsZero() && at.After(until.Add(domain.ClockSkew)) {
			continue
		}
		if !f.Confirmed() || !f.ConfirmedAt.Before(since) {
			if err := a.dropFactor(ctx, userID, f.ID); err != nil {
				return err
			}
		}
	}
	// Recovery codes made since, by the same clocks: new codes take a
	// factor's proof, so they are of the hand of a factor added since,
	// and would stand beside the factors left as ten ways past them
	// (TestAFactorsRevertTakesTheRecoveryCodesMadeSinceItsNotice). The
	// owner's own, made since, go too: she makes new ones with her factor.
	// A removal of the last factor above took the set already (this one
	// then removes nothing); never a deleted account's fence.
	made := set.CreatedAt
	if set.Generation != "" && !set.Ended() && !made.Before(since) && (until.IsZero() || !made.After(until.Add(domain.ClockSkew))) {
		if err := rows.RemoveRecovery(ctx, userID, set.Generation); err != nil {
			return err
		}
	}
	return nil
}

// factorRows are the factors' rows whatever the setting
// (Config.FactorRows, else Factors; nil: none): what a deletion or a
// revert removes was maybe written while the service had factors.
func (a *Service) factorRows() FactorStore {
	if a.cfg.FactorRows != nil {
		return a.cfg.FactorRows
	}
	return a.factors
}

// dropFactor removes factor id of userID, and the recovery set with the
// last confirmed one (a failure there only leaves codes no login asks
// for: a first factor replaces any set); never a deleted account's
// fence, which a first set landing late would then stand in place of
// (TestARemovalInFlightLeavesADeletedAccountsFenceStanding).
func (a *Service) dropFactor(ctx context.Context, userID, id string) error {
	rows := a.factorRows()
	factors, set, err := rows.Read(ctx, userID)
	if err != nil {
		return err
	}
	if _, err := rows.Remove(ctx, userID, id); err != nil {
		return err
	}
	rest := slices.DeleteFunc(slices.Clone(factors), func(f Factor) bool { return f.ID == id || !f.Confirmed() })
	if len(rest) == 0 && set.Generation != "" && !set.Ended() {
		if err := rows.RemoveRecovery(ctx, userID, set.Generation); err != nil {
			a.log.Warn(ctx, "removing a recovery set failed", "user", userID, "error", err.Error())
		}
	}
	return nil
}
