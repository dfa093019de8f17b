package groups

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// A membership change recorded in the group row (Pending) and not
// finished, because its request died or its member writes failed, would
// otherwise wait for the group's next change or member list, the group
// counting it meanwhile (a deleted account among member_count, a
// creation's group open with its departed creator). So every change
// writes an entry into an index of changes in progress before its
// compare-and-set (keyed by the attempt, so one attempt's end never
// deletes another's), and ends it once the change is finished or its
// compare-and-set lost. The jobs' worker finishes what an entry older
// than a grace still points at (FinishInterruptedChanges): it fences the
// group first (a compare-and-set that moves its version on, so a
// compare-and-set still in flight can no longer land), finishes the
// change pending there, and only then forgets the entry
// (docs/design/groups.md#interrupted-changes).

// ChangeEntry is one attempt of a membership change as the index records
// it: the group, the attempt's tag, when it began.
type ChangeEntry struct {
	GroupID string
	Attempt string
	At      time.Time
}

// ChangeIndex keeps the entries of membership changes in progress.
type ChangeIndex interface {
	// Begin records an attempt; writing it again is harmless.
	Begin(ctx context.Context, e ChangeEntry) error
	// End deletes this attempt's entry, never another's; a Begin of it
	// landing late never outlives it.
	End(ctx context.Context, e ChangeEntry) error
	// InProgress calls fn with every entry, from the index's start on, and
	// the pass's clock (domain.StaleIndex).
	InProgress(ctx context.Context, fn func(e ChangeEntry, now time.Time) error) error
}

// beginChange records an attempt of a change of the group before the
// compare-and-set that records it; a failed write ends the attempt with
// nothing changed (its entry, if it landed, ended now, else by the jobs'
// worker, FinishInterruptedChanges).
func (g *Service) beginChange(ctx context.Context, groupID string) (ChangeEntry, error) {
	e := ChangeEntry{GroupID: groupID, Attempt: domain.NewAttempt(), At: g.now()}
	if err := domain.Entered(g.cfg.Changes.Begin(ctx, e), e.At, g.now()); err != nil {
		return e, errors.Join(err, g.cfg.Changes.End(ctx, e))
	}
	return e, nil
}

// endChange ends an attempt whose change is finished, or whose
// compare-and-set lost. A failed end leaves the entry to the jobs'
// worker (FinishInterruptedChanges), which finds nothing left to do.
func (g *Service) endChange(ctx context.Context, e ChangeEntry) {
	_ = g.cfg.Changes.End(context.WithoutCancel(ctx), e)
}

// FinishInterruptedChanges is the jobs' worker's pass over the entries of
// changes older than grace (their request is surely over): each group is
// fenced, the change pending there, whoever recorded it, is finished as
// its next change would finish it (taken back, or the group closed, for
// an account being deleted), and then the entry ends. A group gone (a
// creation that never activated and expired), or closing or closed (a
// closing finishes every change first) needs nothing; one still being
// created keeps its entry for a later pass. It returns how many entries
// it finished.
func (g *Service) FinishInterruptedChanges(ctx context.Context, grace time.Duration) (int, error) {
	return domain.FinishStale(ctx, g.cfg.Changes, g.cfg.Now(), grace,
		func(e ChangeEntry) time.Time { return e.At },
		func(e ChangeEntry) (bool, error) { return g.finishInterrupted(ctx, e.GroupID) })
}

// finishInterrupted fences the group, which finishes the change pending
// there first (Fence); done is false for a group still being created.
func (g *Service) finishInterrupted(ctx context.Context, id string) (done bool, err error) {
	gr, err := g.groups.GetSerial(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	case gr.Status == domain.StatusPending:
		return false, nil
	case gr.Status != domain.StatusActive:
		return true, nil
	}
	if err := g.Fence(ctx, id); err != nil {
		if errors.Is(err, errGroupBusy) {
			// Found closing by the fence (the fence's own finish may have
			// closed it, for a departed sole manager): a closing finishes
			// every change first, so nothing is left to this entry.
			if again, rerr := g.groups.GetSerial(ctx, id); rerr == nil && again.ClosingOrClosed() {
				return true, nil
			}
		}
		return false, err
	}
	// The fence finished whatever was pending before it applied: nothing
	// of this entry's change is left at the fenced version.
	return true, nil
}
