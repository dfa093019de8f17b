package domain

import (
	"context"
	"errors"
	"time"
)

// StaleIndex is an index of attempts in progress as a worker's pass reads
// it: every entry from the index's start, and the end of one entry (never
// another's). InProgress calls fn with each entry and the pass's clock:
// the earlier of the index's process clock and its node's, read as the
// pass began.
type StaleIndex[E any] interface {
	End(ctx context.Context, e E) error
	InProgress(ctx context.Context, fn func(e E, now time.Time) error) error
}

// Age is how long an attempt began (began) before the worker's clock (now)
// or the pass's (pass), whichever is behind: a worker whose clock runs ahead
// never takes an attempt still under way for one whose request is over.
func Age(now, pass, began time.Time) time.Duration {
	if pass.Before(now) {
		now = pass
	}
	return now.Sub(began)
}

// FinishStale is one worker's pass over idx: every entry begun (began)
// at least grace before now (this process's clock) and the pass's clock
// both (Age), whose request is surely over, is finished
// (finish fences the record it names and makes it whole) and, once
// finish reports it done, ended: an intent is forgotten only after what
// it stood for is proven applied or fenced
// (docs/design/faults.md#background-rules). An entry whose finish fails, or
// is not done yet, stays for a later pass. It returns how many entries
// it ended, and every error met.
func FinishStale[E any](ctx context.Context, idx StaleIndex[E], now time.Time, grace time.Duration,
	began func(E) time.Time, finish func(E) (done bool, err error)) (int, error) {
	ended := 0
	var errs []error
	err := idx.InProgress(ctx, func(e E, pass time.Time) error {
		if Age(now, pass, began(e)) < grace {
			return nil // its request may still be running
		}
		done, err := finish(e)
		if err == nil && done {
			err = idx.End(ctx, e)
		}
		switch {
		case err != nil:
			errs = append(errs, err)
		case done:
			ended++
		}
		return nil
	})
	return ended, errors.Join(append(errs, err)...)
}
