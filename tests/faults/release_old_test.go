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

// pausedLookups is a claim store whose next Lookup of one key first runs
// meanwhile: the process paused after the compare-and-set of a change
// answered and before its release of an old key read that key's claim,
// while another request of the account ran.
type pausedLookups struct {
	domain.ClaimStore
	key       string
	meanwhile func()
}

func (p *pausedLookups) Lookup(ctx context.Context, kind domain.ClaimKind, key string) (domain.Claim, error) {
	if f := p.meanwhile; f != nil && key == p.key {
		p.meanwhile = nil
		f()
	}
	return p.ClaimStore.Lookup(ctx, kind, key)
}

// TestAReleaseOfAnOldNameSparesTheClaimOfAChangeBack: bob renames
// himself bobby; the request's process pauses after its compare-and-set
// answered, before its release of "bob" reads that claim. Meanwhile a
// second request renames him back to bob, adopting the committed claim
// (a new op, at the version the first rename wrote). The paused release
// then reads the claim, finds it bob's and committed, and deletes it by
// the op it found: the account holds "bob" with no claim, and a stranger
// signs up as bob (U1). A claim whose base is at or past the version
// the releasing change wrote belongs to a later change of the account,
// which may hold the key: it is not the release's to give back.
func TestAReleaseOfAnOldNameSparesTheClaimOfAChangeBack(t *testing.T) {
	t.Parallel()
	w := newWorld()
	paused := &pausedLookups{ClaimStore: w.store.Claims(), key: "bob"}
	w.svc = accounts.New(w.cfg, paused, w.rows, w.store.Sessions(), plainHasher{}, nopLog{})
	if err := w.signup("bob", "bob@example.org"); err != nil {
		t.Fatal(err)
	}
	var back error
	paused.meanwhile = func() { back = rename(w, "bob", "") }
	if err := rename(w, "bobby", ""); err != nil {
		t.Fatalf("the rename to bobby: %v", err)
	}
	if back != nil {
		t.Fatalf("the rename back to bob: %v", back)
	}
	name := "rename-back-during-release"
	holders, byKey, users := checkHeld(t, name, w)
	checkFree(t, name, w, holders, byKey, users, []string{"username/bob", "username/bobby"})
	if err := w.signup("bob", "stranger@example.org"); err == nil {
		t.Errorf("U1: a stranger signed up as bob, which %s holds", me(w).ID)
	}
}

// TestAReleaseAtAHoldsEndSparesTheAddressARevertGaveBack: a thief made
// annNext ann's address; annHome is held for her revert link. An hour
// before that hold ends, ann asks for annHome back (no claim: the
// address is held) and then resets her password, which cancels that
// change. The reset's process pauses after its compare-and-set (a slow
// read of its sweep of sessions): meanwhile ann follows her revert link,
// which finds annHome still held and makes it her address again, and the
// clock passes the hold's end. The reset's release then finds annHome
// held by the pending change it cancelled and, by the clock, by nothing
// its own write left (the hold named there has ended): it deleted the
// claim, ann has annHome with no claim, and a stranger signed up with it
// (U1). An address the written row still names, in a hold ended or not,
// is not the release's to give back: the claimer takes it over only
// after fencing the row (holders.Holder).
func TestAReleaseAtAHoldsEndSparesTheAddressARevertGaveBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	thiefTakes(t, m)
	revert := m.box.tokenTo("revert-email", annHome)
	m.store.Advance(accounts.DefaultRevertTTL - time.Hour)
	if err := changeEmailFrom(m, annHome); err != nil {
		t.Fatalf("ann asking for %s back: %v", annHome, err)
	}
	if err := m.svc.RequestPasswordReset(ctx, annNext); err != nil {
		t.Fatal(err)
	}
	reset := m.box.tokenTo("reset", annNext)
	slowed := false
	m.store.FaultAt = func(_ int, call string) memstore.Fault {
		if call == "users.access" && !slowed {
			slowed = true
			return memstore.Slow
		}
		return memstore.None
	}
	var reverted error = errors.New("did not run")
	m.store.Meanwhile = func() {
		m.store.Meanwhile = nil
		reverted = m.svc.RevertEmailChange(ctx, revert)
		m.store.Advance(2 * time.Hour)
	}
	_, _ = m.svc.ResetPassword(ctx, reset, newPassword, accounts.Client{})
	m.store.FaultAt, m.store.Meanwhile = nil, nil
	if !slowed || reverted != nil {
		t.Fatalf("the revert during the reset's pause: slowed %v, %v", slowed, reverted)
	}
	name := "release-after-a-revert-at-the-holds-end"
	u := m.account(t, name)
	if u.EmailKey != annHome {
		t.Fatalf("ann's address after her revert is %q", u.EmailKey)
	}
	checkEmailClaims(t, name, m, u)
	if err := newProbe(m.world).signup("stranger", annHome); err == nil {
		t.Errorf("U1: a stranger signed up with %s, ann's address", annHome)
	}
	checkHeld(t, name, m.world)
}
