package lifecycle

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
	"shelf/domain/jobs"
	"shelf/domain/library"
)

// RebuildLibrary begins an admin's rebuild of a principal's library
// (POST /v1/admin/libraries/{id}/rebuild) and returns its job: the
// request checks the caller and the id, writes the job's entry in the
// queue and its row, and answers; the worker rebuilds (library.Rebuild),
// however large the library. Each request is a job of its own; the
// worker runs one rebuild for all those of a library asked before it
// began (workQueue).
func (s *Service) RebuildLibrary(ctx context.Context, p domain.Principal, principalID string) (jobs.Job, error) {
	if _, err := s.accounts.RequireAdmin(ctx, p); err != nil {
		return jobs.Job{}, err
	}
	if !library.ValidPrincipal(principalID) {
		return jobs.Job{}, library.ErrLibraryNotFound
	}
	e := jobs.Entry{JobID: jobs.IDOf(domain.NewAttempt(), ""), Kind: jobs.KindRebuild, Subject: principalID,
		By: p.UserID, At: s.cfg.Now().UTC().Truncate(time.Millisecond)}
	if err := domain.Entered(s.st.Queue.Begin(ctx, e), e.At, s.cfg.Now()); err != nil {
		return jobs.Job{}, errors.Join(err, s.st.Queue.End(ctx, e))
	}
	return s.recordJob(ctx, e.Job())
}

// rebuilt is a rebuild this pass of the worker ran to its end: when it
// began, by the pass's clock (passClock), and the items it counted.
type rebuilt struct {
	began time.Time
	total int
}

// covers reports whether the rebuild r, run to its end, did what the
// entry e asked: e was asked before r began, by any process's clock
// (domain.ClockSkew apart at most), so r read the library as it stood
// after the request.
func (r rebuilt) covers(e jobs.Entry) bool {
	return e.At.Add(domain.ClockSkew).Before(r.began)
}

// workQueue is the worker's pass over the queue of jobs in progress: each
// is run under its lease (one finished already, whose entry's end failed,
// is only ended), finished, and only then its entry ended. A rebuild of a
// library asked before another of it that this pass ran to its end began
// is finished without running again, with that one's count: an admin's
// session (a stolen one too) asking from many addresses at once costs the
// worker one rebuild a library, not one a request
// (TestRebuildsAskedBeforeOneBeganAreFinishedByIt).
func (s *Service) workQueue(ctx context.Context) (Report, error) {
	var r Report
	var errs []error
	done := rebuilds{clock: passClock{own: s.cfg.Now}, of: map[string]rebuilt{}}
	err := s.st.Queue.InProgress(ctx, func(e jobs.Entry, pass time.Time) error {
		defer r.found(e.At)()
		done.clock.read(pass)
		if e.Kind != jobs.KindRebuild {
			r.Problems = append(r.Problems, "job "+e.JobID+" of kind "+string(e.Kind)+": not one this version runs")
			return nil
		}
		ran, err := s.underLease(ctx, e.Job(), func(l *jobs.Lease) error {
			if l.Job().FinishedAt.IsZero() {
				if err := s.rebuildOnce(ctx, e, newProgress(l), &done); err != nil {
					return err
				}
				if err := l.Finish(ctx); err != nil {
					return err
				}
			}
			return s.st.Queue.End(ctx, e)
		})
		switch {
		case err != nil:
			r.Failed++
			errs = append(errs, err)
		case !ran:
			r.Held++
		default:
			r.Finished++
		}
		return nil
	})
	return r, errors.Join(append(errs, err)...)
}

// rebuilds are the rebuilds one pass ran to their end, by library, on the
// pass's clock.
type rebuilds struct {
	clock passClock
	of    map[string]rebuilt
}

// rebuildOnce runs the rebuild e asks for, unless one this pass ran (done)
// covers it: then it only reports that one's count.
func (s *Service) rebuildOnce(ctx context.Context, e jobs.Entry, p *progress, done *rebuilds) error {
	if r, ok := done.of[e.Subject]; ok && r.covers(e) {
		p.done, p.total = r.total, r.total
		return p.enter(ctx, "rows")
	}
	began := done.clock.now()
	if err := s.rebuild(ctx, e.Subject, p); err != nil {
		return err
	}
	done.of[e.Subject] = rebuilt{began: began, total: p.total}
	return nil
}

// rebuild runs a library's rebuild, reporting each page to the job; once
// its rows phase begins, nothing is left of the items it counted.
func (s *Service) rebuild(ctx context.Context, principalID string, p *progress) error {
	total, err := s.library.CountIndex(ctx, principalID)
	if err != nil {
		return err
	}
	p.done, p.total = 0, total
	if err := p.enter(ctx, "items"); err != nil {
		return err
	}
	_, err = s.library.Rebuild(ctx, principalID, func(phase string, done int) error {
		p.done, p.total = done, max(p.total, done)
		if phase != "items" {
			// Every entry is written again: one counted that no page held
			// was taken away meanwhile, and is done, as in eachItem.
			p.done = p.total
		}
		return p.enter(ctx, phase)
	})
	return err
}

// noQueue is the queue of a workflow built without one (tests of other
// things): nothing queued.
type noQueue struct{}

func (noQueue) Begin(context.Context, jobs.Entry) error                             { return nil }
func (noQueue) End(context.Context, jobs.Entry) error                               { return nil }
func (noQueue) InProgress(context.Context, func(jobs.Entry, time.Time) error) error { return nil }
