package faults

import (
	"context"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
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
