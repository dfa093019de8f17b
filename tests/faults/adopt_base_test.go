package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// pausedClaimOf is a claim store whose next Claim of one key first runs
// meanwhile: the request paused after its read of the account and before
// its claim of the new key, while other requests of the account ran.
type pausedClaimOf struct {
	domain.ClaimStore
	key       string
	meanwhile func()
}

func (p *pausedClaimOf) Claim(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int, lease time.Duration) (domain.Claim, error) {
	if f := p.meanwhile; f != nil && key == p.key {
		p.meanwhile = nil
		f()
	}
	return p.ClaimStore.Claim(ctx, kind, key, owner, op, base, lease)
}

// TestASlowRenameNeverLowersTheBaseOfAClaimInFlight: bob asks twice to
// be bobby. The first request reads his account at version 1 and pauses
// before its claim. Meanwhile bob changes his display name (version 2)
// and the second request, reading version 2, claims and commits bobby
// (base 2) and sends its compare-and-set, whose answer is lost: it may
// land at any later time. The first request then finds bobby committed
// to another operation of bob's, not held by the account; its process
// dies at the commit that follows. It had adopted the claim at the base
// it read (1), so the claim looked like an orphan (bob at version 2, past
// 1) and a stranger took bobby over; the held compare-and-set (IF version
// = 2) then landed and bobby was two accounts' (U1). An operation that
// read the owner before it moved on can never apply: it adopts nothing
// and starts over, so the claim keeps the base of the change that may
// still land.
func TestASlowRenameNeverLowersTheBaseOfAClaimInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld()
	if err := w.signup("bob", "bob@example.org"); err != nil {
		t.Fatal(err)
	}
	var display, second error = errors.New("did not run"), errors.New("did not run")
	paused := &pausedClaimOf{ClaimStore: w.store.Claims(), key: "bobby"}
	w.svc = accounts.New(w.cfg, paused, w.rows, w.store.Sessions(), plainHasher{}, nopLog{})
	paused.meanwhile = func() {
		name := "Bob B."
		_, display = w.svc.UpdateUser(context.Background(), principal(me(w)), me(w).ID, accounts.UpdateInput{DisplayName: &name})
		faultNamed(w.store, "users.update", 0, memstore.LandLate)
		second = rename(w, "bobby", "")
		faultNamed(w.store, "claims.commit", 0, memstore.Crash)
	}
	if err := rename(w, "bobby", ""); err == nil {
		t.Fatal("the first rename answered though its process died")
	}
	recovered(w.store)
	if display != nil || !errors.Is(second, domain.ErrOutcomeUnknown) {
		t.Fatalf("meanwhile: the display name %v, the second rename %v", display, second)
	}
	name := "slow-rename-beside-one-in-flight"
	if err := w.signup("bobby", "stranger@example.org"); err == nil {
		t.Errorf("%s: a stranger took bobby while bob's rename to it may still land", name)
	}
	w.store.Land()
	checkHeld(t, name, w)
}
