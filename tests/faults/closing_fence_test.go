package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestAClosingFenceThatLosesToTheStaleClosingKeepsItsEntry (fence before
// you forget): the owner's closing writes its entry and sends its
// compare-and-set, which lands late (a hung node's queue); the request
// answers 503. Eleven minutes on, the repair finds the entry, reads the
// group active and fences it (groups.Fence): the fence reads the group
// (slowly), and while it does the closing's compare-and-set lands, so the
// fence's own compare-and-set, on the version read, does not apply. The
// fence reads again, finds the group closing and answers busy, so the
// repair keeps the entry, and the worker's next passes finish the closing
// (before, a compare-and-set that did not apply counted as a fence: the
// entry was ended and the group stayed closing for good).
func TestAClosingFenceThatLosesToTheStaleClosingKeepsItsEntry(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	heldClosing(t, c)
	gets := 0
	c.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "groups.get" {
			gets++
			if gets == 2 { // groups.Fence's read, after the repair's own
				return memstore.Slow
			}
		}
		return memstore.None
	}
	c.store.Meanwhile = c.store.Land
	_, rerr := c.life.RepairClosings(ctx, false)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	t.Logf("repair: %v; group %q; entries %+v", rerr, c.status(c.group), c.store.ClosingSnapshot())
	if c.status(c.group) == domain.StatusClosing && len(c.store.ClosingSnapshot()) == 0 {
		t.Errorf("the group is closing with no entry left: nothing can find it")
	}
	// Later passes of the worker (and a repeat of the closing by its owner)
	// must still finish it.
	for range 3 {
		c.store.Advance(11 * time.Minute)
		if _, err := c.life.CloseGroup(ctx, as(c.owner), c.group, ownersProof()); err != nil {
			t.Logf("repeat: %v", err)
		}
		if _, err := c.life.WorkJobs(ctx); err != nil {
			t.Logf("pass: %v", err)
		}
	}
	if st := c.status(c.group); st != domain.StatusClosed {
		t.Errorf("after the repeat and three passes the group is %q, not closed", st)
	}
}

// heldClosing has the owner close c's group with the closing's
// compare-and-set held (a hung node's queue: the request answers 503, its
// entry stays), then lets 11 minutes pass, past the entry's stale age.
func heldClosing(t *testing.T, c *closeWorld) {
	t.Helper()
	updates := 0
	c.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "groups.update" {
			updates++
			if updates == 1 {
				return memstore.LandLate // the closing's compare-and-set
			}
		}
		return memstore.None
	}
	if _, err := c.life.CloseGroup(context.Background(), as(c.owner), c.group, ownersProof()); err == nil {
		t.Fatal("the closing whose compare-and-set is held answered success")
	}
	c.store.FaultAt = nil
	if st := c.status(c.group); st != domain.StatusActive {
		t.Fatalf("before the held write lands the group is %q", st)
	}
	c.store.Advance(11 * time.Minute)
}
