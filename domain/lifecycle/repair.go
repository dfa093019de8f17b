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
	swept := newSweeps(s.cfg.Now)
	err := s.st.Deletions.InProgress(ctx, func(d accounts.DeletionEntry, pass time.Time) error {
		u, err := s.accounts.AccountSerial(ctx, d.UserID)
		e := entryFound{what: "deletion", id: d.UserID, at: d.At, pass: pass, readErr: err,
			end:   func() error { return s.st.Deletions.End(ctx, d) },
			fence: s.accounts.FenceDeletion}
		if err == nil && (u.Status == domain.StatusDeleting || u.Status == domain.StatusDeleted) {
			e.status = string(u.Status)
			e.ofIt = func() bool { return d.Of(*u.Deletion) }
			e.finish = swept.finish(pass, d.UserID, d.At, e.ofIt, func() (bool, error) { return s.finishDeletionJob(ctx, u) })
		}
		errs = append(errs, s.repairEntry(ctx, &r, dryRun, e))
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
	swept := newSweeps(s.cfg.Now)
	err := s.st.Closings.InProgress(ctx, func(c groups.ClosingEntry, pass time.Time) error {
		gr, err := s.groups.GetSerial(ctx, c.GroupID)
		e := entryFound{what: "closing", id: c.GroupID, at: c.At, pass: pass, readErr: err,
			end:   func() error { return s.st.Closings.End(ctx, c) },
			fence: s.groups.Fence}
		if err == nil && gr.ClosingOrClosed() {
			e.status = string(gr.Status)
			e.ofIt = func() bool { return c.Of(gr) }
			e.finish = swept.finish(pass, c.GroupID, c.At, e.ofIt, func() (bool, error) { return s.finishClosingJob(ctx, gr) })
		}
		errs = append(errs, s.repairEntry(ctx, &r, dryRun, e))
		return nil
	})
	return r, errors.Join(append(errs, err)...)
}

// sweeps is one repair pass's record of the operations it finished to
// their end (by the account's or group's id), each with when its finish
// began by the pass's clock (passClock). A repeat of a finished deletion or
// closing (an admin's, or the closer's) writes an entry of its own, so
// the steps are swept again; one asked before a sweep this pass ran
// began, by any process's clock (domain.ClockSkew apart at most), is done
// by it: a session, a stolen one too, repeating from many addresses
// (each limited on its own) costs the worker one sweep a pass, not one a
// request (TestRepeatsAskedBeforeASweepBeganAreDoneByIt).
type sweeps struct {
	clock passClock
	began map[string]time.Time
}

// newSweeps is a pass's record of its sweeps, on this process's clock.
func newSweeps(now func() time.Time) *sweeps {
	return &sweeps{clock: passClock{own: now}, began: map[string]time.Time{}}
}

// finish is the finish of an entry asked at, of the operation on id, read
// by the pass whose clock is pass: run (under the job's lease), or nothing
// where a sweep of id covers it. The entry of the attempt that began the
// operation (ofIt) always runs.
func (sw *sweeps) finish(pass time.Time, id string, at time.Time, ofIt func() bool, run func() (bool, error)) func() (bool, error) {
	sw.clock.read(pass)
	if began, ok := sw.began[id]; ok && at.Add(domain.ClockSkew).Before(began) && !ofIt() {
		return func() (bool, error) { return true, nil }
	}
	return func() (bool, error) {
		began := sw.clock.now()
		ran, err := run()
		if ran && err == nil {
			sw.began[id] = began
		}
		return ran, err
	}
}

// passClock is a pass's clock for when a sweep or a rebuild began, which
// ends the entries asked more than domain.ClockSkew before it: the earlier
// of this process's clock and the pass's (the node's, read before any
// entry), carried on by the time this process saw go by since it first
// saw the pass's (decision 76). The index is read a partition at a time,
// each when the pass reaches it, so the pass may read an entry asked
// while an earlier entry's sweep ran: judged by a clock ahead alone, that
// sweep began long after it, and the entry was ended with no sweep ever
// begun after it was asked
// (TestAWorkerAheadEndsNoRepeatAskedAfterItsSweepBegan).
type passClock struct {
	own        func() time.Time
	pass, seen time.Time
}

// read takes the pass's clock as an entry gives it; the first one counts.
func (c *passClock) read(pass time.Time) {
	if c.seen.IsZero() {
		c.pass, c.seen = pass, c.own()
	}
}

// now is the pass's now: never ahead of the node's, as far as this
// process can tell.
func (c *passClock) now() time.Time {
	own := c.own()
	if c.seen.IsZero() {
		return own
	}
	return domain.Behind(own, c.pass.Add(own.Sub(c.seen)))
}

// entryFound is an entry of an operation in progress (a deletion, a
// closing) as a repair pass read it with the record it names.
type entryFound struct {
	what, id string    // "deletion" and the account's id, ...
	at, pass time.Time // the entry's time; when the pass read it
	readErr  error     // reading the record (domain.ErrNotFound: none)
	// status is the record's when it reads the operation under way, with
	// finish (under the job's lease: ran is false when another worker
	// holds it) and ofIt (the entry is the attempt's whose compare-and-set
	// began it); "" otherwise.
	status string
	finish func() (ran bool, err error)
	ofIt   func() bool
	end    func() error // ends the entry
	fence  func(context.Context, string) error
}

// repairEntry is a repair pass's step for one entry: an operation the
// record reads under way is finished, and the entry of an attempt whose
// compare-and-set lost (decided on an older version, it can never apply
// now) ended; one the record does not read under way is left while its
// compare-and-set may still be on its way (staleEntryAge, by this
// process's clock and the node's both: domain.Age), and then removed
// after fencing the record. It answers what the pass could not do.
func (s *Service) repairEntry(ctx context.Context, r *Report, dryRun bool, e entryFound) error {
	defer r.found(e.at)()
	begun := e.what + " of " + e.id + " begun at " + e.at.Format(time.RFC3339)
	switch {
	case e.readErr != nil && !errors.Is(e.readErr, domain.ErrNotFound):
		return e.readErr
	case e.status != "":
		r.Problems = append(r.Problems, begun+" is "+e.status+": finishing it")
		if dryRun {
			return nil
		}
		ran, err := e.finish()
		switch {
		case err != nil:
			r.Failed++
			return err
		case !ran:
			r.Held++
			return nil
		}
		r.Finished++
		if e.ofIt() {
			return nil
		}
		return e.end()
	case domain.Age(s.cfg.Now(), e.pass, e.at) < staleEntryAge:
		// Its compare-and-set may still be on its way.
		return nil
	}
	r.Problems = append(r.Problems, begun+" never took effect: removing its entry")
	if dryRun {
		return nil
	}
	if err := s.removeStale(ctx, e.fence, e.id, e.end); err != nil {
		return err
	}
	r.Stale++
	return nil
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
