package faults

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
)

// pausedOnce runs pause once, before the first of the calls it wraps:
// the creation's process stalls between its entry's acknowledgement and
// its first writes (a pause, a hung connection), both branches of its
// claim ∥ create waiting behind it.
type pausedOnce struct {
	once  sync.Once
	pause func()
}

type pausedClaims struct {
	domain.ClaimStore
	p *pausedOnce
}

func (c pausedClaims) Claim(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int, lease time.Duration) (domain.Claim, error) {
	c.p.once.Do(c.p.pause)
	return c.ClaimStore.Claim(ctx, kind, key, owner, op, base, lease)
}

type pausedGroups struct {
	groups.Store
	p *pausedOnce
}

func (s pausedGroups) Create(ctx context.Context, gr groups.Group, lease time.Duration) (string, error) {
	s.p.once.Do(s.p.pause)
	return s.Store.Create(ctx, gr, lease)
}

// TestACreationSlowPastTheWorkersPassKeepsAnEntry: a group's creation
// writes its change's entry, then its process stalls past the stale age
// before its claim and its pending group row. The jobs' worker takes the
// entry, finds no group (not yet written, which proves nothing: the
// insert is still to come) and ends it. The creation goes on: the name
// claimed and committed, the group activated, and its process dies before
// the creator's membership is written. The change pending in the group
// must still have an entry for the worker to finish it from
// (docs/design/groups.md#interrupted-changes: "a pending change never
// waits for a user"); with the entry forgotten on a read that proved
// nothing, the creator's membership stays pending, its member rows
// unwritten, until someone reads the group, and a creator deleted
// meanwhile leaves the group open and its name held.
func TestACreationSlowPastTheWorkersPassKeepsAnEntry(t *testing.T) {
	t.Parallel()
	const name = "creation stalled past the worker's pass, then crashed after activation"
	w := newWorld()
	if err := w.signup("owner", "owner@example.org"); err != nil {
		t.Fatal(err)
	}
	owner := w.created[0]
	ctx := context.Background()
	var grp *groups.Service
	p := &pausedOnce{pause: func() {
		w.store.Advance(staleChangeAge + time.Minute)
		if n, err := grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil || n > 1 {
			t.Errorf("%s: the worker's pass while the creation stalls: %d entries finished, %v", name, n, err)
		}
	}}
	grp = groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, TurnWait: time.Millisecond, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		pausedClaims{ClaimStore: w.store.Claims(), p: p}, pausedGroups{Store: groupRows(w.store), p: p}, w.store.GroupMembers(), nopLog{})
	grp.Hooks.AfterStep = func(op, step string) error {
		if op == "create" && step == "activate" {
			return errors.New("crashed (test hook)")
		}
		return nil
	}
	if _, err := grp.CreateGroup(ctx, as(owner), groups.CreateInput{Name: "club"}); err == nil {
		t.Fatalf("%s: the creation did not stop after its activation", name)
	}
	grp.Hooks.AfterStep = nil
	for range 2 {
		w.store.Advance(staleChangeAge + time.Minute)
		if _, err := grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil {
			t.Errorf("%s: the worker's pass after the crash: %v", name, err)
		}
	}
	snap := w.store.GroupSnapshot()
	found := false
	for _, gr := range snap.Groups {
		if gr.Status != domain.StatusActive {
			continue
		}
		found = true
		if gr.Pending != nil {
			t.Errorf("%s: the creator's membership is still pending in the group after the worker's passes: %+v", name, *gr.Pending)
		}
		if len(snap.Members[gr.ID]) != 1 {
			t.Errorf("%s: the group's member rows %+v; want its creator's", name, snap.Members[gr.ID])
		}
	}
	if !found {
		t.Fatalf("%s: no group was activated", name)
	}
	if left := w.store.ChangeSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of changes left after the worker's passes: %+v", name, left)
	}
}
