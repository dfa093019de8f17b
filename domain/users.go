package domain

import (
	"slices"
	"strings"
	"time"
)

// Status is where an account stands.
type Status string

// The statuses. Pending accounts are signups in progress: invisible to
// everyone, and gone by themselves after the claim lease if the signup dies.
const (
	StatusPending   Status = "pending"
	StatusActive    Status = "active"
	StatusSuspended Status = "suspended"
	// StatusDeleting: the account is being deleted (DELETE /v1/users/{id}):
	// invisible, no login, no session works; it still holds its names, so
	// nobody can take them before the deletion has let go of them.
	StatusDeleting Status = "deleting"
	// StatusDeleted: deleted for good. The row stays (its id is never
	// reused, its version keeps shadowing late writes) without personal
	// data, and its claims count as free (docs/design/deletion.md).
	StatusDeleted Status = "deleted"
	// StatusClosing: a group is being closed (DELETE /v1/groups/{id}): it
	// reads as gone, takes no member or share, and still holds its name.
	StatusClosing Status = "closing"
	// StatusClosed: a group closed for good. The row stays (its version
	// keeps shadowing late member writes); its name claim counts as free.
	StatusClosed Status = "closed"
)

// RoleAdmin may moderate and sees every account's email.
const RoleAdmin = "admin"

// User is an account.
type User struct {
	ID           string
	Username     string // as typed
	UsernameKey  string // unique, see NormalizeUsername
	Email        string // as typed (NFKC)
	EmailKey     string // unique, see NormalizeEmail
	DisplayName  string
	PasswordHash string // PHC string
	Roles        []string
	Status       Status
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Version counts changes; every change is a compare-and-set on it.
	Version int
	// Suspension is set while the account is suspended.
	Suspension *Suspension
	// LastLift is how the account's last suspension ended, kept until the
	// next lift (nil if none ever ended). It lets the history entries of a
	// lift be written again from the account row alone.
	LastLift *Lift
	// Deletion is set once the account is being deleted (status deleting
	// or deleted): when it began and who asked, so that a retry or the
	// repair finishes it from the row alone.
	Deletion *Deletion
	// EmailVerifiedAt is when the current email was confirmed with a
	// token mailed to it; zero while it is not (a change of email clears
	// it).
	EmailVerifiedAt time.Time
	// PasswordEpoch counts the password's changes (a change, a reset):
	// a session keeps the epoch its login checked the password at, and
	// works only while it is the account's, or is PasswordSession. A
	// rehash of the same password keeps it.
	PasswordEpoch int
	// PasswordSession is the token hash of the session whose request set
	// the current password by a change (it proved the password it
	// replaced, and goes on working); "" when a signup or a reset set it.
	PasswordSession string
	// PasswordResetRequired is set by the revert of an email change
	// (whoever changed the email knew the password) and cleared by a
	// completed reset: meanwhile the password opens no session and proves
	// nothing, even when it matches.
	PasswordResetRequired bool
	// RecoveryEpoch counts the account's recoveries (a completed reset,
	// the revert of an email change or of a new factor): a reset link is
	// mailed against it and works only while it stands. A change of the
	// password keeps it, so whoever changes the password cannot make the
	// links in the owner's mailbox stale (docs/design/tokens.md).
	RecoveryEpoch int
	// AddressEpoch is the RecoveryEpoch at which a completed email change
	// made Email the account's (migration 045; 0 before): a recovery since
	// moved RecoveryEpoch past it, and went through that address. A
	// confirmation is no recovery: a revert run again tells by it whether
	// a recovery since its use was the reader's of its link's address
	// (docs/design/email-change.md, "A revert run again").
	AddressEpoch int
	// PendingEmail is a new address asked for and not verified yet (its
	// key PendingEmailKey is claimed for this account, so nobody else
	// takes it meanwhile); Email stays the account's address, for login,
	// resets and mail, until a link mailed to the new one is followed.
	// PendingEmailAt is when it was asked for: the change, and the hold
	// of its key, end with its verification link (its TTL and the token
	// grace after it). PendingEmailSession is the public id of the
	// session that asked for it ("" when an admin did). Empty when none.
	PendingEmail, PendingEmailKey string
	PendingEmailAt                time.Time
	PendingEmailSession           string
	// RecoveryEmail is the address a completed email change replaced
	// (verified or not),
	// still claimed for this account until RecoveryUntil (the end of the
	// revert link mailed to it), so that following that link can give it
	// back whatever happened since. Empty when none.
	RecoveryEmail, RecoveryEmailKey string
	RecoveryUntil                   time.Time
	// HeldUsername is the username the owner's rename left (migration
	// 047), still claimed for this account until HeldUsernameUntil (as
	// long as an email change's revert link works): nobody else takes it
	// meanwhile, and the account may change back to it, so that an owner
	// whose password a thief used to rename her account takes her name
	// back after her reset (docs/design/renames.md, "A name left is
	// held"). Empty when none.
	HeldUsername, HeldUsernameKey string
	HeldUsernameUntil             time.Time
	// RefusedEmailKeys are the keys of the addresses whose reader
	// followed the "not me" link of a change asking for them: the account
	// may not ask for them again (migration 041,
	// docs/design/email-change.md). Only the reader of such an address
	// adds it, so none is a key the owner did not let go.
	RefusedEmailKeys []string
	// AdminChange is the audit of the last admin action on the account
	// (nil if none), written by the compare-and-set that made it and kept
	// until the next: the entries of an action that stopped after its
	// compare-and-set are written again from the row alone (CarryAdminChange).
	AdminChange []AuditEntry
	// ModerationHeld says an admin's suspension or unsuspension lost a
	// round of its compare-and-set to another change and holds the
	// account's other changes back for a few seconds (migration 043,
	// docs/design/suspension.md, "The owner gives way"). Read only: a
	// hold is written alone and expires by itself; no write of the row
	// carries it.
	ModerationHeld bool
	// RecoveryHeld says the hold ModerationHeld reads is a recovery's by
	// a mailed link (its tag made by NewRecoveryHold), not an admin's: a
	// recovery gives way to an admin's hold, not to a recovery's
	// (docs/design/suspension.md, "The owner gives way"). Read only, as
	// ModerationHeld.
	RecoveryHeld bool
}

// Deletion is when an account's deletion began and who asked for it (the
// user, or an admin), and the tag of the attempt whose compare-and-set
// began it: its index entry is that attempt's own, and only the finish of
// this deletion ends it ("" for a deletion begun before migration 014).
type Deletion struct {
	At      time.Time
	By      string
	Attempt string
}

// NewAttempt tags one attempt of an operation whose index entry must be
// its own (a deletion, a closing): random, so two attempts begun in the
// same millisecond, even by the same caller, never share an entry.
func NewAttempt() string { return NewID("") }

// recoveryHoldPrefix begins the tag of a recovery's hold: no id has a
// colon, so no admin's attempt reads as one.
const recoveryHoldPrefix = "recovery:"

// NewRecoveryHold tags the hold of one recovery by a mailed link (a
// reset, a revert), told apart from an admin's by IsRecoveryHold.
func NewRecoveryHold() string { return recoveryHoldPrefix + NewAttempt() }

// IsRecoveryHold reports whether a hold's tag is a recovery's
// (NewRecoveryHold).
func IsRecoveryHold(tag string) bool { return strings.HasPrefix(tag, recoveryHoldPrefix) }

// IsAdmin reports whether the user has the admin role.
func (u User) IsAdmin() bool { return slices.Contains(u.Roles, RoleAdmin) }

// Visible reports whether the account exists for everyone else (a pending
// signup does not).
func (u User) Visible() bool { return u.Status.Visible() }

// Visible reports a status whose account exists for everyone: active or
// suspended.
func (s Status) Visible() bool { return s == StatusActive || s == StatusSuspended }

// Departed reports an account being deleted or deleted: it may hold no
// membership, and one carried out for it after its deletion read its
// memberships is taken back (docs/design/deletion.md).
func (u User) Departed() bool { return u.Status.Departed() }

// Departed reports a status of an account being deleted or deleted.
func (s Status) Departed() bool { return s == StatusDeleting || s == StatusDeleted }

// KeyOf returns the user's key of the given kind.
func (u User) KeyOf(kind ClaimKind) string { return keyOf(kind, u.UsernameKey, u.EmailKey) }

// keyOf is the key of the given kind of the two an account holds.
func keyOf(kind ClaimKind, usernameKey, emailKey string) string {
	if kind == KindUsername {
		return usernameKey
	}
	return emailKey
}

// Suspension is why and since when an account is suspended.
type Suspension struct {
	UserID string
	// Username is the account's username when the suspension took effect
	// (the row its compare-and-set was decided on), kept in the account
	// row with it: a rename while suspended changes it nowhere.
	Username    string
	Reason      string
	SuspendedAt time.Time
	SuspendedBy string
	// Until is when it ends by itself; zero for "until lifted".
	Until time.Time
	// Bucket is the time bucket its status row lives in.
	Bucket string
}

// ActiveAt reports whether the suspension still blocks at t.
func (s Suspension) ActiveAt(t time.Time) bool { return s.Until.IsZero() || t.Before(s.Until) }

// LiftKind says how a suspension ended.
type LiftKind string

// The ways a suspension ends.
const (
	// LiftUnsuspended: an admin lifted it.
	LiftUnsuspended LiftKind = "unsuspended"
	// LiftExpired: its end passed and the sweeper lifted it.
	LiftExpired LiftKind = "expired"
)

// Lift is the end of a suspension, as the compare-and-set that ended it
// wrote it into the account row.
type Lift struct {
	Kind LiftKind
	// At is when it ended: the admin's moment for an unsuspension, the
	// suspension's end for an expiry; always after the suspension began.
	At time.Time
	// By is the admin who lifted it; empty for an expiry.
	By string
	// Suspension is the suspension it ended (UserID, Reason, SuspendedAt,
	// SuspendedBy and Until set).
	Suspension Suspension
}

// ErrSuspended builds the 403 a suspended account's login gets, once its
// password has matched.
func ErrSuspended(s Suspension) *Error {
	details := map[string]any{"suspendedAt": s.SuspendedAt}
	if !s.Until.IsZero() {
		details["until"] = s.Until
	}
	if s.Reason != "" {
		details["reason"] = s.Reason
	}
	// The words say it too: a caller reading only the detail learns
	// whether to wait (and how long) or to ask a moderator.
	message := "This account is suspended since " + s.SuspendedAt.UTC().Format(time.RFC3339)
	if s.Until.IsZero() {
		message += " until an admin lifts it."
	} else {
		message += " until " + s.Until.UTC().Format(time.RFC3339) + ", when it ends by itself: log in again then."
	}
	if s.Reason != "" {
		message += " The reason given: " + s.Reason
		if last := s.Reason[len(s.Reason)-1]; last != '.' && last != '!' && last != '?' {
			message += "."
		}
	}
	return &Error{Kind: ErrForbidden, Code: "suspended", Message: message, Details: details}
}
