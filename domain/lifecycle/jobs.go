package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
)

// Jobs (docs/design/jobs.md). A request that deletes an account or closes
// a group does the bounded, irreversible part (the compare-and-set) and
// answers with the job; the job's worker, one in every API process
// (WorkJobs, run by internal/app), finds every operation under way through
// the indexes of deletions and closings in progress and every rebuild
// through the queue of jobs, takes its job's lease and finishes it,
// reporting as it goes; the same pass finishes interrupted membership
// changes. The operator commands (RepairDeletions, RepairClosings) are
// the deletions' and closings' part of that pass, run once by hand.

// deletionJob is the job of u's deletion (u deleting or deleted).
func deletionJob(u domain.User) jobs.Job {
	return jobs.Job{ID: jobs.IDOf(u.Deletion.Attempt, u.ID), Kind: jobs.KindDeletion, Subject: u.ID,
		By: u.Deletion.By, CreatedAt: u.Deletion.At, Phase: "queued", UpdatedAt: u.Deletion.At}
}

// closingJob is the job of gr's closing (gr closing or closed).
func closingJob(gr groups.Group) jobs.Job {
	return jobs.Job{ID: jobs.IDOf(gr.ClosingAttempt, gr.ID), Kind: jobs.KindClosing, Subject: gr.ID,
		By: gr.ClosedBy, CreatedAt: gr.ClosedAt, Phase: "queued", UpdatedAt: gr.ClosedAt}
}

// recordJob writes j's row, unless it has one (a repeat of the request),
// wakes this process's worker and returns the job as it stands. A write
// that failed is no failure of the request: the operation is under way,
// and the worker that takes it on makes the row (jobs.Acquire); the
// answer names the job all the same.
func (s *Service) recordJob(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	j.Version = 1
	created, err := s.st.Jobs.Create(ctx, j)
	s.Wake()
	if err != nil || created {
		return j, nil
	}
	if got, err := s.st.Jobs.Get(ctx, j.ID); err == nil {
		return got, nil
	}
	return j, nil
}

// Job reads a job (GET /v1/jobs/{id}): whoever holds its id may, as with
// a reset token; it names only its subject's id and counts.
func (s *Service) Job(ctx context.Context, id string) (jobs.Job, error) {
	if !jobs.Valid(id) {
		return jobs.Job{}, errJobNotFound
	}
	j, err := s.st.Jobs.Get(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return jobs.Job{}, errJobNotFound
	}
	return j, err
}

// errJobNotFound is a job without a row: an id no request answered, one
// of a job past its 30 days, or one whose request failed to write its row
// a moment ago (recordJob: the worker it woke makes it within seconds).
var errJobNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found",
	Message: "No such job: its id is the one a deletion, closing or rebuild answered with (jobs are kept 30 days); one begun a moment ago may take a few seconds to appear, so ask again shortly."}

// Now is the workflows' clock (a job's state depends on it).
func (s *Service) Now() time.Time { return s.cfg.Now() }

// Wake tells this process's worker to make a pass now (a request just
// began a job), without waiting for its interval.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Woken is told by Wake.
func (s *Service) Woken() <-chan struct{} { return s.wake }

// WorkJobs is one pass of the worker: every deletion, every closing, then
// every queued job (a rebuild) in progress is finished (or left to the
// worker holding it), then every membership change whose request is
// surely over (groups.FinishInterruptedChanges). The report says what it found, finished and left.
func (s *Service) WorkJobs(ctx context.Context) (Report, error) {
	d, derr := s.RepairDeletions(ctx, false)
	c, cerr := s.RepairClosings(ctx, false)
	q, qerr := s.workQueue(ctx)
	n, gerr := s.groups.FinishInterruptedChanges(ctx, cmp.Or(s.cfg.ChangeGrace, staleChangeAge))
	return d.add(c).add(q).add(Report{Changes: n}), errors.Join(derr, cerr, qerr, gerr)
}

// underLease runs fn under j's lease; a job another worker holds is left
// to it (ran false), and so is one whose lease this worker lost on the
// way (another took it over: the job is the holder's to finish, and no
// failure; or this worker's last report has an unknown outcome: the next
// pass takes it on again). Any other failure lets the lease go, recorded
// in the job, so the next pass of any worker takes it on at once.
func (s *Service) underLease(ctx context.Context, j jobs.Job, fn func(*jobs.Lease) error) (ran bool, err error) {
	l, err := jobs.Acquire(ctx, s.st.Jobs, s.cfg.Now, s.cfg.JobLease, j, s.cfg.Worker)
	switch {
	case errors.Is(err, jobs.ErrHeld):
		return false, nil
	case err != nil:
		return false, err
	}
	err = fn(l)
	switch {
	case errors.Is(err, jobs.ErrLost):
		return false, nil
	case err != nil:
		rerr := l.Release(context.WithoutCancel(ctx), err)
		if errors.Is(rerr, jobs.ErrLost) {
			// The job is another worker's now. Joined, the loss would read
			// as the lease of a job running this one inside its own step
			// (a deletion finishing a closing) lost too, and that job's
			// failure would go unrecorded
			// (TestADeletionWhoseClosingFailedAfterItsTakeOverIsToldAsFailed).
			rerr = nil
		}
		return true, errors.Join(err, rerr)
	}
	return true, nil
}

// progress reports a job's steps and counts to its lease; every report
// renews the lease, and a lease lost (another worker took the job over)
// stops the job (jobs.ErrLost). The counts are the items', carried over
// from the row, so a job taken on again goes on counting where the last
// holder stopped.
type progress struct {
	lease       *jobs.Lease
	phase       string
	done, total int
	// waiting is the progress of the job that runs this one inside its
	// own step and waits for it (a deletion finishing a closing it found,
	// or closing a group its user is alone in), nil for none: each report
	// renews its lease too, so a worker at work on the inner job keeps
	// the outer one (TestAWorkerKeepsADeletionsLeaseThroughAClosingItFinishes).
	waiting *progress
}

// newProgress is the progress of the job l holds, as its row stands.
func newProgress(l *jobs.Lease) *progress {
	j := l.Job()
	return &progress{lease: l, phase: j.Phase, done: j.Done, total: j.Total}
}

// enter reports the step the job begins.
func (p *progress) enter(ctx context.Context, phase string) error {
	p.phase = phase
	return p.report(ctx)
}

// report renews the job's lease with its progress as it stands, and the
// lease of the job waiting on it. That one's report failing (its lease
// lost) stops nothing here: this job holds its own lease, and the outer
// job learns of its loss at its own next report.
func (p *progress) report(ctx context.Context) error {
	if err := p.lease.Report(ctx, p.phase, p.done, p.total); err != nil {
		return err
	}
	if p.waiting != nil {
		_ = p.waiting.report(ctx)
	}
	return nil
}

// everyPage reports the step under way again before the i-th unit of a
// loop (a group read or left) that starts a page past the first: a step
// whose work grows with the data keeps the job's lease however long it
// runs.
func (p *progress) everyPage(ctx context.Context, i int) error {
	if i == 0 || i%page != 0 {
		return nil
	}
	return p.report(ctx)
}

// eachItem calls fn with every entry of the principal's library index, a
// page at a time, reporting each page; it counts them first. A job taken
// on again finds fewer (what it handled is gone from the index): its
// total stays, and done is what is no longer there; so too, once the
// last page is read, for an item taken away before its page. An item
// found gone meanwhile is no failure.
func (s *Service) eachItem(ctx context.Context, principalID string, p *progress, fn func(library.Entry) error) error {
	left, err := s.library.CountIndex(ctx, principalID)
	if err != nil {
		return err
	}
	if p.total > 0 {
		p.total = max(p.total, p.done+left)
		p.done = p.total - left
	} else {
		p.done, p.total = 0, left
	}
	if err := p.report(ctx); err != nil {
		return err
	}
	after := ""
	for {
		items, err := s.library.IndexPage(ctx, principalID, after, page)
		if err != nil {
			return err
		}
		if err := atOnce(s.cfg.JobItemsAtOnce, items, fn); err != nil {
			return err
		}
		p.done += len(items)
		p.total = max(p.total, p.done)
		if len(items) < page {
			// Read to its end: an item counted that no page held was taken
			// away meanwhile, and is done, as a job taken on again counts
			// it (TestAFinishedJobHasNothingLeft).
			p.done = p.total
		}
		if err := p.report(ctx); err != nil {
			return err
		}
		if len(items) < page {
			return nil
		}
		after = items[len(items)-1].ContentID
	}
}

// atOnce calls fn with each item, width (JobItemsAtOnce) at a time (each
// item's change is its own: its row, its members, its libraries; a
// session's revocation), and joins the failures; an item found gone
// meanwhile is none.
func atOnce[T any](width int, items []T, fn func(T) error) error {
	width = max(width, 1)
	if width == 1 {
		var errs []error
		for _, it := range items {
			if err := fn(it); err != nil && !errors.Is(err, domain.ErrNotFound) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(it); err != nil && !errors.Is(err, domain.ErrNotFound) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// finishDeletionJob finishes u's deletion under its job's lease.
func (s *Service) finishDeletionJob(ctx context.Context, u domain.User) (ran bool, err error) {
	return s.underLease(ctx, deletionJob(u), func(l *jobs.Lease) error { return s.finishDeletion(ctx, u, l) })
}

// finishClosingJob finishes gr's closing under its job's lease.
func (s *Service) finishClosingJob(ctx context.Context, gr groups.Group) (ran bool, err error) {
	return s.underLease(ctx, closingJob(gr), func(l *jobs.Lease) error { return s.finishClosing(ctx, gr, l, nil) })
}
