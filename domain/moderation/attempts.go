package moderation

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// Interrupted suspensions and unsuspensions finish themselves
// (docs/design/suspension.md, "Finished by the sweeper"). An admin's
// suspension or unsuspension records its attempt in an index before its
// compare-and-set and ends the entry once its records are written (or
// once it is refused). An entry left behind is of a request that stopped
// (a crash, a lost answer nobody repeated): the sweeper's pass
// (FinishInterrupted) fences the account (a compare-and-set that moves
// its version on, so the attempt's compare-and-set, however late, can no
// longer land), makes its records agree with the row, as a retry would,
// and only then ends the entry: fence before you forget.

// Attempt is one suspension's or unsuspension's entry in the index of
// those in progress: the account, the attempt's tag (its own: another
// attempt's end never takes it), when it began and what it was.
type Attempt struct {
	UserID string
	Tag    string
	At     time.Time
	Action string
}

// The actions an attempt records.
const (
	ActionSuspend   = "suspend"
	ActionUnsuspend = "unsuspend"
	// ActionAdminChange is a round of an admin's change of another
	// account (accounts.Intents: a PATCH, a grant or a revoke), whose
	// audit entries its compare-and-set writes into the row: the sweeper
	// finishes it as it finishes a suspension, fencing the account and
	// writing the entries the row carries, so that a round whose process
	// died after its compare-and-set is in the audit of every account
	// without anyone reading that account's audit
	// (TestASuspensionWhoseProcessDiedIsInTheAuditOfEveryAccountOnceSwept).
	ActionAdminChange = "admin_change"
)

// AttemptIndex keeps the entries of suspensions and unsuspensions in
// progress.
type AttemptIndex interface {
	// Begin records an attempt at its start; writing it again is harmless.
	Begin(ctx context.Context, a Attempt) error
	// End deletes this attempt's entry, never another's; a Begin of it
	// landing late never outlives it.
	End(ctx context.Context, a Attempt) error
	// InProgress calls fn with every entry, from the index's start on, and
	// the pass's clock (domain.StaleIndex).
	InProgress(ctx context.Context, fn func(a Attempt, now time.Time) error) error
}

// noAttempts is the index of a service built without one (tests of other
// things): nothing recorded, nothing to finish.
type noAttempts struct{}

func (noAttempts) Begin(context.Context, Attempt) error                             { return nil }
func (noAttempts) End(context.Context, Attempt) error                               { return nil }
func (noAttempts) InProgress(context.Context, func(Attempt, time.Time) error) error { return nil }

// begin records an attempt of action on userID before its compare-and-set;
// a write that fails, or is acknowledged too late to be sure the sweeper
// reads it (domain.Entered), ends the request (nothing was changed: 503)
// and the entry with it.
func (m *Service) begin(ctx context.Context, userID, action string) (Attempt, error) {
	return BeginAttempt(ctx, m.cfg.Attempts, m.now, userID, action)
}

// AdminIntents is accounts.Intents on an index of attempts in progress
// (the one a moderation service keeps): an admin's change of another
// account records each round there before its compare-and-set, and
// FinishInterrupted finishes an entry left behind as it finishes a
// suspension's (docs/design/account-audit.md).
type AdminIntents struct {
	Index AttemptIndex
	// Now is the clock of the entries (whole milliseconds, UTC, are
	// taken of it).
	Now func() time.Time
}

// Begin records a round of an admin's change of userID.
func (x AdminIntents) Begin(ctx context.Context, userID string) (domain.Intent, error) {
	at := func() time.Time { return x.Now().UTC().Truncate(time.Millisecond) }
	a, err := BeginAttempt(ctx, x.Index, at, userID, ActionAdminChange)
	return domain.Intent{UserID: a.UserID, Tag: a.Tag, At: a.At}, err
}

// End ends the round's entry.
func (x AdminIntents) End(ctx context.Context, i domain.Intent) error {
	return x.Index.End(ctx, Attempt{UserID: i.UserID, Tag: i.Tag, At: i.At, Action: ActionAdminChange})
}

// BeginAttempt records an attempt of action on userID in index, begun at
// now(): a write that fails, or is acknowledged too late to be sure the
// sweeper reads it (domain.Entered), is an error, and the entry is ended
// with it (the attempt changes nothing).
func BeginAttempt(ctx context.Context, index AttemptIndex, now func() time.Time, userID, action string) (Attempt, error) {
	a := Attempt{UserID: userID, Tag: domain.NewAttempt(), At: now(), Action: action}
	if err := domain.Entered(index.Begin(ctx, a), a.At, now()); err != nil {
		return a, errors.Join(err, index.End(context.WithoutCancel(ctx), a))
	}
	return a, nil
}

// end ends an attempt once its request is over: done (its records
// written) or answered with a 4xx of the domain's (refused, nothing of it
// applied; or its account turned out to be being deleted, whose deletion
// erases the records). An attempt whose outcome is unknown keeps its
// entry for FinishInterrupted, and so does one that applied but whose
// audit entry was not written (its caller does not call end then). A failed end leaves the entry too:
// finishing it again changes nothing.
func (m *Service) end(ctx context.Context, a Attempt, err error) {
	if err != nil && (errors.Is(err, domain.ErrUnavailable) || errors.Is(err, domain.ErrOutcomeUnknown) || !isRefusal(err)) {
		return
	}
	_ = m.cfg.Attempts.End(context.WithoutCancel(ctx), a)
}

// isRefusal reports an answer that says the attempt changed nothing it
// did not finish itself (a 4xx of the domain's).
func isRefusal(err error) bool {
	var e *domain.Error
	return errors.As(err, &e) || errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrForbidden)
}

// FinishInterrupted is the sweeper's pass over the attempts left in
// progress older than grace (their request is surely over), by this
// process's clock and the node's both (domain.FinishStale): each account
// is fenced, the audit entries its row carries written, its records
// made to agree with its row (the suspension's
// list row, lookup, expiry entry and history, its sessions ended; or the
// last lift's history and the leftovers erased), and then its entry ends.
// An account being deleted is its deletion's to clean (the entry just
// ends). It returns how many entries it finished.
func (m *Service) FinishInterrupted(ctx context.Context, grace time.Duration) (int, error) {
	return domain.FinishStale(ctx, m.cfg.Attempts, m.cfg.Now(), grace,
		func(a Attempt) time.Time { return a.At },
		func(a Attempt) (bool, error) { return true, m.finishAttempt(ctx, a) })
}

// finishAttempt fences the attempt's account, then finishes its records
// from the row as fenced: the audit entries the row carries first (an
// admin's suspension or unsuspension whose process died after its
// compare-and-set left them there, and the audit of every account reads
// no account row:
// TestASuspensionWhoseProcessDiedIsInTheAuditOfEveryAccountOnceSwept),
// then the list's records and the history.
func (m *Service) finishAttempt(ctx context.Context, a Attempt) error {
	u, err := m.changeAccount(ctx, a.UserID, nil, func(u domain.User) (domain.User, error) { return u, nil })
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil // gone or being deleted: the deletion erases the records
	case err != nil:
		return err
	}
	if len(u.AdminChange) > 0 {
		if err := m.audit.Record(ctx, u.AdminChange); err != nil {
			return err
		}
	}
	if u.Status == domain.StatusSuspended && u.Suspension != nil {
		err := m.finishSuspension(ctx, *u.Suspension, u.Version)
		if err == nil {
			err = m.liftIfEnded(ctx, *u.Suspension)
		}
		if errors.Is(err, domain.ErrNotFound) {
			return nil
		}
		return err
	}
	if l := u.LastLift; l != nil {
		if err := m.suspensions.RecordLift(ctx, *l, u.Version); err != nil {
			return err
		}
	}
	return m.eraseLeftovers(ctx, u)
}
