package faults

import (
	"context"
	"testing"

	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// TestChangeRoundAfterTheWorkersFenceHasItsOwnEntry: an add's
// compare-and-set is slow past the stale age; meanwhile the jobs' worker
// takes the add's entry, fences the group (so that compare-and-set
// loses) and ends the entry. The add goes on to another round, whose
// compare-and-set lands, and its process dies there. The change pending
// in the group must still have an entry for the worker to finish it from:
// each round writes its own (docs/design/groups.md#interrupted-changes),
// where one entry per change, ended by the worker before the round began,
// would leave the add pending until the group's next change.
func TestChangeRoundAfterTheWorkersFenceHasItsOwnEntry(t *testing.T) {
	t.Parallel()
	const name = "add slow past the worker's fence, then crashed"
	g := newGroupWorld(t)
	ctx := context.Background()
	working, updates := false, 0
	g.store.Meanwhile = func() {
		working = true
		defer func() { working = false }()
		g.store.Advance(staleChangeAge)
		if n, err := g.grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil || n != 1 {
			t.Errorf("%s: the worker's pass while the compare-and-set is slow: %d entries finished, %v", name, n, err)
		}
	}
	g.store.FaultAt = func(_ int, call string) memstore.Fault {
		if working || call != "groups.update" {
			return memstore.None
		}
		updates++
		switch updates {
		case 1:
			return memstore.Slow
		case 2:
			return memstore.Crash
		}
		return memstore.None
	}
	if err := g.set(g.owner, g.other, groups.RoleMember); !expected(err) {
		t.Fatalf("%s: the add answered %v, want the crash's unavailable", name, err)
	}
	if updates != 2 {
		t.Fatalf("%s: %d compare-and-sets of the add, want the slow one and the next round's", name, updates)
	}
	recovered(g.store)
	pending := false
	for _, gr := range g.store.GroupSnapshot().Groups {
		pending = pending || (gr.ID == g.group && gr.Pending != nil)
	}
	if !pending {
		t.Fatalf("%s: the second round's add is not pending in the group", name)
	}
	g.store.Advance(staleChangeAge)
	if _, err := g.grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil {
		t.Errorf("%s: the worker's pass after the crash: %v", name, err)
	}
	if left := g.store.ChangeSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of changes left after the worker's pass: %+v", name, left)
	}
	checkGroups(t, name, g, g.store.GroupSnapshot())
	checkUserGroups(t, name, g, true)
}
