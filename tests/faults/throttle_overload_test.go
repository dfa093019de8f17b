package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// A throttle that only the guesser pays for (docs/design/throttle.md):
// what one address does, refused or failed to be recorded, never locks
// the login for the owner at another address.

// TestOverloadMade503sDoNotLockTheOwner: five wrong passwords from one
// address, then 40 tries from it, 8 at once, while every call of the
// throttle's store faults (as an overloaded node does: a write applied
// whose answer is lost, one held back that lands later, one never sent).
// The tries answer 503 or 429, never a verdict; and the owner, from
// another address, still logs in. Were an attempt that ended in 503
// counted, the 40 rows would fill the login's tier (12) and the owner
// would get 429 from every address for a window.
func TestOverloadMade503sDoNotLockTheOwner(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.LoseAnswer, memstore.LandLate, memstore.FailBefore} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc, st, _, _ := newThrottled(t)
			for i := range perAddress {
				if _, err := svc.Login(ctx, "ann", "wrong", from("192.0.2.1")); !errors.Is(err, accounts.ErrInvalidCredentials) {
					t.Fatalf("wrong %d: %v", i, err)
				}
			}
			st.FaultAt = func(_ int, name string) memstore.Fault {
				if strings.HasPrefix(name, "attempts.") {
					return fault
				}
				return memstore.None
			}
			var wg sync.WaitGroup
			errs := make([]error, 40)
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(errs); i += 8 {
						_, errs[i] = svc.Login(ctx, "ann", "wrong", from("192.0.2.1"))
					}
				}()
			}
			wg.Wait()
			unavailable := 0
			for i, err := range errs {
				switch {
				case errors.Is(err, domain.ErrUnavailable):
					unavailable++
				case errors.Is(err, domain.ErrTooManyAttempts):
				default:
					t.Fatalf("try %d under faults: %v, want 503 or 429", i, err)
				}
			}
			st.FaultAt = nil
			st.Land()
			if unavailable == 0 {
				t.Fatal("no try answered 503: the faults did not bite")
			}
			if _, err := svc.Login(ctx, "ann", password, from("198.51.100.7")); err != nil {
				t.Fatalf("after %d×503 from one address, the owner from another: %v", unavailable, err)
			}
		})
	}
}

// TestUnrecordedFailuresStopCounting: wrong passwords from 20 addresses
// whose failure could not be recorded answer 503, never 401 (a guess the
// throttle did not record tells the guesser nothing); while their tries
// are in flight they count (the 13th and later may be refused: with Slow,
// whose call moves the clock past the minute the tries before it count
// for, they answer 503 too), and a minute later none of them counts
// against the owner.
func TestUnrecordedFailuresStopCounting(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.FailBefore, memstore.LoseAnswer, memstore.Slow} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc, st, _, _ := newThrottled(t)
			st.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "attempts.fail" {
					return fault
				}
				return memstore.None
			}
			unavailable := 0
			for i := range 20 {
				_, err := svc.Login(ctx, "ann", "wrong", from(fmt.Sprintf("198.51.100.%d", i+1)))
				switch {
				case errors.Is(err, domain.ErrUnavailable):
					unavailable++
				case errors.Is(err, domain.ErrTooManyAttempts) && i >= perLogin:
				default:
					t.Fatalf("address %d, its failure not recorded: %v, want 503 (or 429 past the login's %d)", i, err, perLogin)
				}
			}
			if unavailable < perLogin {
				t.Fatalf("%d answered 503; want the first %d", unavailable, perLogin)
			}
			st.FaultAt = nil
			st.Advance(time.Minute)
			if _, err := svc.Login(ctx, "ann", password, from("203.0.113.9")); err != nil {
				t.Fatalf("a minute after 20 unrecorded failures, the owner: %v", err)
			}
		})
	}
}

// TestARefusedAttemptWritesNothingToTheLogin: once an address is over
// its limit, its tries (the right password too) are refused having
// written to one partition only, the address's own: the login's scope,
// which every address's attempts read, is not touched (a row written
// there and deleted would leave a tombstone every reader of the login
// meets).
func TestARefusedAttemptWritesNothingToTheLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, _, _ := newThrottled(t)
	for range perAddress {
		if _, err := svc.Login(ctx, "ann", "wrong", from("192.0.2.1")); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatal(err)
		}
	}
	before := st.AttemptWrites()
	for range 20 {
		refusedFor(t, "a try over the address's limit", func() error {
			_, err := svc.Login(ctx, "ann", password, from("192.0.2.1"))
			return err
		}())
	}
	refused := changedScopes(before, st.AttemptWrites())
	if len(refused) > 1 {
		t.Fatalf("20 refused tries wrote to %d scopes; want the address's own at most", len(refused))
	}
	before = st.AttemptWrites()
	if _, err := svc.Login(ctx, "ann", password, from("198.51.100.7")); err != nil {
		t.Fatal(err)
	}
	for scope := range changedScopes(before, st.AttemptWrites()) {
		if refused[scope] {
			t.Fatalf("the refused tries wrote to a scope the owner's login from elsewhere writes too: the login's")
		}
	}
}

// changedScopes are the scopes whose writes differ between two counts.
func changedScopes(before, after map[string]int) map[string]bool {
	out := map[string]bool{}
	for scope, n := range after {
		if before[scope] != n {
			out[scope] = true
		}
	}
	return out
}

// TestAVerdictNotRecordedTellsNothing: when the store fails to record a
// checked password's verdict (a wrong one's failure, a right one's tries
// passed), or records it later than the attempt may take, the answer is
// 503 for either: a 201 against a 503 would tell a right password from a
// wrong one exactly when the throttle did not count it.
func TestAVerdictNotRecordedTellsNothing(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.FailBefore, memstore.LoseAnswer, memstore.LandLate, memstore.Slow} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			for _, guess := range []struct{ password, call string }{{password, "attempts.settle"}, {"wrong", "attempts.fail"}} {
				svc, st, _, _ := newThrottled(t)
				st.FaultAt = func(_ int, name string) memstore.Fault {
					if name == guess.call {
						return fault
					}
					return memstore.None
				}
				_, err := svc.Login(ctx, "ann", guess.password, from("192.0.2.1"))
				if !errors.Is(err, domain.ErrUnavailable) {
					t.Fatalf("%s with %s faulted: %v, want 503", guess.password, guess.call, err)
				}
			}
		})
	}
}
