package domain

import (
	"context"
	"math/rand/v2"
	"time"
)

// Retry is the one loop behind every read -> decide -> compare-and-set
// change of a row (accounts, suspensions, groups, content). It calls round
// with the attempt number (0 first) until round reports done or fails, and
// gives up with busy after attempts rounds. A round that lost its
// compare-and-set to another writer returns (false, nil); the loop pauses
// before the next one (see Backoff) so racing writers spread out instead of
// colliding again. A context that ends stops the loop with its error.
func Retry(ctx context.Context, attempts int, busy error, round func(attempt int) (done bool, err error)) error {
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			if err := SleepCtx(ctx, Backoff(attempt)); err != nil {
				return err
			}
		}
		done, err := round(attempt)
		if err != nil || done {
			return err
		}
	}
	return busy
}

// Backoff is the pause before retry number attempt (1 for the first
// retry): a random 1 ms up to 5 ms per attempt, at most 50 ms. Short,
// because the writer that won is done after one more round trip; random,
// because writers that collided once would collide again in step.
func Backoff(attempt int) time.Duration {
	return time.Duration(1+rand.IntN(5*min(max(attempt, 1), 10))) * time.Millisecond
}

// SleepCtx waits d or until ctx ends.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
