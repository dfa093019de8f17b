package lifecycle

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
)

// Report is what a repair of operations left in progress (deletions,
// closings) found and did.
type Report struct {
	// Found counts the entries of operations in progress read.
	Found int
	// Finished counts operations finished (deleted or closed, names
	// released).
	Finished int
	// Stale counts entries of operations that never began (their
	// compare-and-set lost), removed.
	Stale int
	// Held counts operations another worker holds the job of (left to
	// it).
	Held int
	// Failed counts operations whose job failed in this pass (left to the
	// next).
	Failed int
	// Changes counts membership changes of groups finished after their
	// request ended (groups.FinishInterruptedChanges).
	Changes int
	// Oldest is when the oldest operation found and not finished or
	// removed began (zero: none).
	Oldest time.Time
	// Problems says what was found, one line each.
	Problems []string
}

// add sums two reports.
func (r Report) add(o Report) Report {
	r.Found += o.Found
	r.Finished += o.Finished
	r.Stale += o.Stale
	r.Held += o.Held
	r.Failed += o.Failed
	r.Changes += o.Changes
	if r.Oldest.IsZero() || (!o.Oldest.IsZero() && o.Oldest.Before(r.Oldest)) {
		r.Oldest = o.Oldest
	}
	r.Problems = append(r.Problems, o.Problems...)
	return r
}

// found counts an operation under way begun at; the function it returns,
// called once the pass is done with it, counts it in Oldest unless the
// pass finished it or removed its entry.
func (r *Report) found(at time.Time) (done func()) {
	r.Found++
	finished, stale := r.Finished, r.Stale
	return func() {
		if r.Finished == finished && r.Stale == stale && (r.Oldest.IsZero() || at.Before(r.Oldest)) {
			r.Oldest = at
		}
	}
}

// RepairDeletions finishes every deletion in progress, the worker's pass
// over them (WorkJobs; by hand, `api admin repair-deletions`): it reads
// the index of deletions in progress, not the accounts, and finishes each
// from the account row under its job's lease (one another worker holds is
// left to it). An entry of a deletion that never took effect is removed
// once old enough (staleEntryAge, by this process's clock and the node's
// both: domain.Age), after accounts.FenceDeletion: that
// deletion's compare-and-set, still on its way however late, can no
// longer land. dryRun only reports.
func (s *Service) RepairDeletions(ctx context.Context, dryRun bool) (Report, error) {
	var r Report
	var errs []error
	err := s.st.Deletions.InProgress(ctx, func(d accounts.DeletionEntry, pass time.Time) error {
		defer r.found(d.At)()
		u, err := s.accounts.AccountSerial(ctx, d.UserID)
		begun := "deletion of " + d.UserID + " begun at " + d.At.Format(time.RFC3339)
		switch {
		case err != nil && !errors.Is(err, domain.ErrNotFound):
			errs = append(errs, err)
		case err == nil && (u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted):
			r.Problems = append(r.Problems, begun+" is "+string(u.Status)+": finishing it")
			if dryRun {
				return nil
			}
			ran, err := s.finishDeletionJob(ctx, u)
			switch {
			case err != nil:
				r.Failed++
				errs = append(errs, err)
				return nil
			case !ran:
				r.Held++
				return nil
			}
			if !d.Of(*u.Deletion) {
				// An entry of an attempt whose compare-and-set lost to
				// the one that began the deletion: decided on an older
				// version, it can never apply now.
				errs = append(errs, s.st.Deletions.End(ctx, d))
			}
			r.Finished++
		case domain.Age(s.cfg.Now(), pass, d.At) < staleEntryAge:
			// Its compare-and-set may still be on its way.
		default:
			r.Problems = append(r.Problems, begun+" never took effect: removing its entry")
			if dryRun {
				return nil
			}
			if err := s.removeStale(ctx, s.accounts.FenceDeletion, d.UserID, func() error { return s.st.Deletions.End(ctx, d) }); err != nil {
				errs = append(errs, err)
				return nil
			}
			r.Stale++
		}
		return nil
	})
	return r, errors.Join(append(errs, err)...)
}

// RepairClosings finishes every closing in progress, the worker's pass
// over them (WorkJobs; by hand, `api admin repair-closings`): it reads
// the index of closings in progress, not the groups, and finishes each
// from the group row under its job's lease. An entry of a closing that never took effect is
// removed once old enough (as a deletion's), after groups.Fence (TestExploreClosing,
// close-repair-early). dryRun only reports.
func (s *Service) RepairClosings(ctx context.Context, dryRun bool) (Report, error) {
	var r Report
	var errs []error
	err := s.st.Closings.InProgress(ctx, func(e groups.ClosingEntry, pass time.Time) error {
		defer r.found(e.At)()
		gr, err := s.groups.GetSerial(ctx, e.GroupID)
		begun := "closing of " + e.GroupID + " begun at " + e.At.Format(time.RFC3339)
		switch {
		case err != nil && !errors.Is(err, domain.ErrNotFound):
			errs = append(errs, err)
		case err == nil && gr.ClosingOrClosed():
			r.Problems = append(r.Problems, begun+" is "+string(gr.Status)+": finishing it")
			if dryRun {
				return nil
			}
			ran, err := s.finishClosingJob(ctx, gr)
			switch {
			case err != nil:
				r.Failed++
				errs = append(errs, err)
				return nil
			case !ran:
				r.Held++
				return nil
			}
			if !e.Of(gr) {
				// An entry of an attempt whose compare-and-set lost:
				// decided on an older version, it can never apply now.
				errs = append(errs, s.st.Closings.End(ctx, e))
			}
			r.Finished++
		case domain.Age(s.cfg.Now(), pass, e.At) < staleEntryAge:
			// Its compare-and-set may still be on its way.
		default:
			r.Problems = append(r.Problems, begun+" never took effect: removing its entry")
			if dryRun {
				return nil
			}
			if err := s.removeStale(ctx, s.groups.Fence, e.GroupID, func() error { return s.st.Closings.End(ctx, e) }); err != nil {
				errs = append(errs, err)
				return nil
			}
			r.Stale++
		}
		return nil
	})
	return r, errors.Join(append(errs, err)...)
}

// removeStale fences the record an entry names (its version moves on, so
// the stale attempt's compare-and-set can no longer land) and then ends
// the entry.
func (s *Service) removeStale(ctx context.Context, fence func(context.Context, string) error, id string, end func() error) error {
	if err := fence(ctx, id); err != nil {
		return err
	}
	return end()
}
