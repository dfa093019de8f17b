package domain

import (
	"context"
	"errors"
	"time"
)

// StaleIndex is an index of attempts in progress as a worker's pass reads
// it: every entry from the index's start, and the end of one entry (never
// another's).
type StaleIndex[E any] interface {
	End(ctx context.Context, e E) error
	InProgress(ctx context.Context, fn func(E) error) error
}

// FinishStale is one worker's pass over idx: every entry begun (began)
// at least grace before now, whose request is surely over, is finished
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
	err := idx.InProgress(ctx, func(e E) error {
		if now.Sub(began(e)) < grace {
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
