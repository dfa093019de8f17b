//go:build integration

package repository_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/internal/app"
	"shelf/tests/broken"
)

// lookupsMeet is a claim store whose Lookup waits until n lookups are in,
// so the claimants of a check-then-act all check before any acts.
type lookupsMeet struct {
	domain.ClaimStore
	in *sync.WaitGroup
}

func (l lookupsMeet) Lookup(ctx context.Context, kind domain.ClaimKind, key string) (domain.Claim, error) {
	c, err := l.ClaimStore.Lookup(ctx, kind, key)
	l.in.Done()
	l.in.Wait()
	return c, err
}

// TestCheckThenActClaimsLetTwoClaimantsWin: the deliberately broken
// build's claims (tests/broken, the lwt build), which the nemesis's
// self-check must catch, are broken on the real store: two claimants that
// both check before either acts both hold the key, where the
// compare-and-set lets one.
func TestCheckThenActClaimsLetTwoClaimantsWin(t *testing.T) {
	t.Parallel()
	c, db := newClaims(t)
	ctx := context.Background()
	race := func(store domain.ClaimStore, k string) (winners int) {
		var done sync.WaitGroup
		got := make([]domain.Claim, 2)
		for i, owner := range []string{"u_a", "u_b"} {
			done.Add(1)
			go func() {
				defer done.Done()
				claim, err := store.Claim(ctx, domain.KindUsername, k, owner, "op-"+owner, 0, time.Minute)
				if err != nil {
					t.Errorf("%s: %v", owner, err)
				}
				got[i] = claim
			}()
		}
		done.Wait()
		for i, owner := range []string{"u_a", "u_b"} {
			if got[i].Owner == owner {
				winners++
			}
		}
		return winners
	}
	var in sync.WaitGroup
	in.Add(2)
	brokenStore := broken.LWT(db, app.Stores{Claims: lookupsMeet{ClaimStore: c, in: &in}}).Claims
	if n := race(brokenStore, key("cta")); n != 2 {
		t.Fatalf("check-then-act: %d claimants hold the key, want both", n)
	}
	if n := race(c, key("cas")); n != 1 {
		t.Fatalf("compare-and-set: %d claimants hold the key, want one", n)
	}
}
