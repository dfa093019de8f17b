package domain

import (
	"context"
	"math/rand/v2"
	"time"
)

// Yield says how long a claimant that holds the first of its keys waits
// for a later one that another claimant's operation holds pending
// (docs/design/signup.md, ordered yielding).
type Yield struct {
	// Tries is how many more times such a key is tried; 0 never waits.
	Tries int
	// Budget bounds the pauses before those tries, all together, and no
	// try starts once it has passed. The claimer clamps it to a quarter of
	// its lease: the keys held meanwhile must still be committed well
	// within their lease.
	Budget time.Duration
}

// DefaultYield is five more tries within a second: a pending holder that
// lost the first key gives back what it holds one round trip after its
// own claims, so the first tries, a few tens of milliseconds in, usually
// find the key free; a claimant that stopped with the key leaves it
// blocked for its lease, which no wait this short can outlast.
var DefaultYield = Yield{Tries: 5, Budget: time.Second}

// maxYieldTries bounds Tries: the pauses double from one try to the next.
const maxYieldTries = 16

// WithYield is a claimer like c that waits for a split pair as y says,
// not as DefaultYield does.
func (c *Claimer) WithYield(y Yield) *Claimer {
	d := *c
	d.yield = y
	return &d
}

// split reports whether a round of AcquireAll ended in a split that the
// claimant waits out: it has the first key, and every later key it lacks
// is held pending by someone else's operation in flight. Nothing else may
// be in the way: an error, a key taken for good (a committed claim) or one
// that another operation of the owner holds is answered at once.
func split(outcomes []claimOutcome, errs []error) bool {
	if len(outcomes) < 2 || errs[0] != nil || !have(outcomes[0]) {
		return false
	}
	contended := false
	for i := 1; i < len(outcomes); i++ {
		switch {
		case errs[i] != nil:
			return false
		case outcomes[i] == claimContended:
			contended = true
		case !have(outcomes[i]):
			return false
		}
	}
	return contended
}

// have reports whether an outcome leaves the owner with the key.
func have(o claimOutcome) bool { return o == claimHeld || o == claimAdopted || o == claimNoop }

// awaitSplit waits out a split. The pending holders of the later keys lost
// the race for the first one, so AcquireAll answers them a conflict and
// their callers give back what they hold at once; this claimant keeps what
// it holds and tries the contended keys again, up to Tries times, after
// pauses that double from one try to the next, each jittered down by up to
// half, so that together they stay within the budget. A try is the same
// acquire as the first round (an insert if not exists, or a takeover),
// safe to repeat whatever became of earlier ones, and its outcome replaces
// the key's: so a try that fails, or finds a key taken for good, ends the
// wait and is answered as in the first round, and the keys still contended
// when the tries or the budget run out are answered as taken. Whatever the
// answer, the keys held are the caller's to commit or release, as before.
// A context that ends stops the wait with its error.
func (c *Claimer) awaitSplit(ctx context.Context, keys []Key, outcomes []claimOutcome, errs []error, owner, op string, base int, holders Holders) error {
	tries := min(c.yield.Tries, maxYieldTries)
	budget := min(c.yield.Budget, c.lease/4)
	if tries <= 0 || budget <= 0 {
		return nil
	}
	deadline := time.Now().Add(budget)
	step := budget / time.Duration(1<<tries-1)
	for try := 0; try < tries && split(outcomes, errs); try++ {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		pause := step << try
		pause -= rand.N(pause/2 + 1)
		if err := SleepCtx(ctx, min(pause, left)); err != nil {
			return err
		}
		var again []int
		for i := range keys {
			if outcomes[i] == claimContended {
				again = append(again, i)
			}
		}
		Parallel(ctx, len(again), func(ctx context.Context, j int) {
			i := again[j]
			outcomes[i], errs[i] = c.acquire(ctx, keys[i], owner, op, base, holders)
		})
	}
	return nil
}
