// Package moderation is suspending and unsuspending accounts, the
// suspended list (newest first across time buckets), the sweeper that lifts
// ended suspensions and the repair that makes the derived records agree
// with the accounts (S1-S5 of docs/design/invariants.md, and S6 for the
// suspensions and unsuspensions admins make).
package moderation

import (
	"context"
	"time"

	"shelf/domain"
)

// Store keeps the records derived from an account's suspension:
// its row in the suspended list (users_by_status), the reverse lookup
// (suspended_users), the expiry entry, the bucket index and the account's
// moderation history (moderation_history). Writes carry the
// account version as their timestamp, so the records of an older change
// never overwrite or resurrect those of a newer one, whatever the order
// they arrive in, and repeating a write is harmless.
type Store interface {
	// Record writes the suspension's records, its history entry among
	// them.
	Record(ctx context.Context, s domain.Suspension, version int) error
	// RecordSuspended writes the suspension's history entry alone
	// (SuspendedEvent), for a suspension that ended with no lift to carry
	// it: its account was deleted.
	RecordSuspended(ctx context.Context, s domain.Suspension, version int) error
	// RecordLift writes the history entries of a lift (LiftEvents): a
	// history entry is never deleted, and each is keyed by its event, so
	// writing one again, or late, rewrites the same row.
	RecordLift(ctx context.Context, l domain.Lift, version int) error
	// History returns up to limit entries of the user's history, newest
	// first, after the cursor (nil: from the newest).
	History(ctx context.Context, userID string, after *HistoryCursor, limit int) ([]Event, error)
	// Erase deletes them, and the bucket's index entry if it is now empty.
	Erase(ctx context.Context, s domain.Suspension, version int) error
	// EraseListing is Erase without the reverse lookup, for the records of
	// an old suspension of an account that is suspended again (its lookup
	// row, keyed by user alone, belongs to the current suspension).
	EraseListing(ctx context.Context, s domain.Suspension, version int) error
	// Lookup reads the reverse lookup (ErrNotFound when there is none).
	Lookup(ctx context.Context, userID string) (domain.Suspension, error)
	// Page returns up to limit suspensions, newest first (ties by user id,
	// descending), after the cursor (nil: from the start).
	Page(ctx context.Context, after *Cursor, limit int) ([]domain.Suspension, error)
	// Expired returns up to limit expiry entries (UserID and Until set)
	// whose end is at or before t and the store's own clock (the node's),
	// whichever is earlier.
	Expired(ctx context.Context, t time.Time, limit int) ([]domain.Suspension, error)
	// EraseExpiry deletes one expiry entry.
	EraseExpiry(ctx context.Context, userID string, until time.Time, version int) error
	// NodeNow reads the clock of the store's node, which Expired bounds
	// its reads by too.
	NodeNow(ctx context.Context) (time.Time, error)
}

// Config holds the moderation tunables.
type Config struct {
	// BucketSize is month, week or day.
	BucketSize string
	// Now is the clock; tests move it.
	Now func() time.Time
	// Attempts is the index of suspensions and unsuspensions in progress
	// (nil: none kept, as in tests of other things).
	Attempts AttemptIndex
	// Audit is the audit of admin actions on accounts, where a suspension
	// or an unsuspension by an admin is recorded (written the way the
	// accounts write theirs: domain.CarryAdminChange); Log reports an
	// audit write that failed after its change applied. Without an audit
	// (tests of other protocols) the entries stay in the account rows.
	Audit domain.AuditRecorder
	Log   domain.Logger
	// EmptiedKept is how long the suspended list's index keeps an entry
	// marked emptied before IndexBuckets deletes it (0: an hour).
	EmptiedKept time.Duration
}

// Hooks let tests stop an operation after a step, as a crash
// would: the operation returns the hook's error at once.
type Hooks struct {
	// AfterStep is called with "cas" (the account changed), "history"
	// (a lift's history entries written) and "records" (the derived
	// records written or erased).
	AfterStep func(op, step string) error
}

// Users reads and changes account rows; the account row is where a
// suspension is decided and takes effect (S1).
type Users interface {
	// Standing reads an account's status and suspension alone: what the
	// reads that show or check a suspension need.
	Standing(ctx context.Context, id string) (domain.Standing, error)
	// GetSerial reads at SERIAL: the latest committed state, the whole
	// row (what a change writes back).
	GetSerial(ctx context.Context, id string) (domain.User, error)
	// Update writes u if the stored version is still u.Version-1.
	Update(ctx context.Context, u domain.User) (bool, error)
	// Hold holds the visible account's other changes back for d under
	// attempt tag (domain.User.ModerationHeld): a compare-and-set on no
	// version, which no change of the account stands in the way of.
	Hold(ctx context.Context, id, tag string, d time.Duration) (bool, error)
}

// Admins says whether the caller may moderate, and which of an account's
// holds a suspension's write drops (the accounts' rules).
type Admins interface {
	// RequireAdmin answers ErrNoSession for no session and ErrDenied for
	// a caller who is not an active admin.
	RequireAdmin(ctx context.Context, p domain.Principal) (domain.Access, error)
	// DropEndedHolds is u with every hold that has ended dropped (a
	// username its owner's rename left, an address asked for or held for
	// a revert, past their time), and whether any was: a suspension
	// stops the clock of a username's hold that still stands, and must
	// not bring back one that ended before it
	// (TestASuspensionAfterAHoldEndedDoesNotBringTheNameBack).
	DropEndedHolds(u domain.User) (domain.User, bool)
	// ReleaseLeft gives back, once after (written over before) applied,
	// the claims of the keys before names and after does not.
	ReleaseLeft(ctx context.Context, before, after domain.User)
}

// Service is suspending and unsuspending accounts and listing the
// suspended.
type Service struct {
	cfg         Config
	admins      Admins
	users       Users
	suspensions Store
	// audit and log are Config's.
	audit domain.AuditRecorder
	log   domain.Logger
	// Hooks are nil in production.
	Hooks Hooks
}

// New wires the service.
func New(cfg Config, admins Admins, users Users, suspensions Store) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Attempts == nil {
		cfg.Attempts = noAttempts{}
	}
	if cfg.EmptiedKept <= 0 {
		cfg.EmptiedKept = time.Hour
	}
	audit := cfg.Audit
	if audit == nil {
		audit = noAudit{}
	}
	return &Service{cfg: cfg, admins: admins, users: users, suspensions: suspensions, audit: audit, log: cfg.Log}
}

// recordApplied writes the audit entries of an applied action, and
// answers a failure: the action's attempt then stays in the index, so
// that the sweeper writes them from the row (FinishInterrupted), the
// audit of every account reading no account row
// (TestAnAdminActionWhoseEntryFailedIsInTheAuditOfEveryAccountOnceSwept).
func (m *Service) recordApplied(ctx context.Context, entries []domain.AuditEntry) error {
	return domain.RecordApplied(ctx, m.audit, m.log, entries)
}

// noAudit is the audit of a service built without one.
type noAudit struct{}

func (noAudit) Record(context.Context, []domain.AuditEntry) error { return nil }

// maxAttempts bounds the rounds of a change that keeps losing the account's
// compare-and-set to other changes of the same account.
const maxAttempts = 8

var (
	errAlreadySuspended = &domain.Error{Kind: domain.ErrConflict, Code: "already_suspended", Message: "The user is already suspended."}
	errNotSuspended     = &domain.Error{Kind: domain.ErrNotFound, Code: "not_suspended", Message: "The user is not suspended."}
	// errOtherAdmin answers a suspension of another admin: an admin ends
	// no other admin's sessions, as they change no other admin's username,
	// email or deletion (accounts.ErrOtherAdmin).
	errOtherAdmin = &domain.Error{Kind: domain.ErrForbidden, Code: "forbidden", Message: "An admin cannot suspend another admin."}
)

// SuspendInput is a suspension request.
type SuspendInput struct {
	Reason string
	Until  *time.Time
}

func (m *Service) now() time.Time { return m.cfg.Now().UTC().Truncate(time.Millisecond) }

func (m *Service) hook(op, step string) error {
	if m.Hooks.AfterStep == nil {
		return nil
	}
	return m.Hooks.AfterStep(op, step)
}
