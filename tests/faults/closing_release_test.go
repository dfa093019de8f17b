package faults

import (
	"context"
	"testing"

	"shelf/tests/memstore"
)

// TestAClosingWhoseNameReleaseFailedLeavesNoClaimOfIt: the owner closes
// her group; the job removes its members and marks it closed, and the
// release of the group name's claim is not sent (the node timed out).
// The closing went on past the failure: it ended its entry, the last
// record the job read, and the claim of "club" named the closed group
// for good (a creator may take a closed group's claim over, but nobody
// need ever come). The run fails instead, its entry kept, and the next
// pass gives the name back, as a deletion's does
// (TestADeletionWhoseNameReleaseFailedLeavesNoClaimOfIt).
func TestAClosingWhoseNameReleaseFailedLeavesNoClaimOfIt(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	failed := faultFirst(c.store, "claims.release", memstore.FailBefore)
	if _, err := c.life.CloseGroup(ctx, as(c.owner), c.group, ownersProof()); err != nil {
		t.Fatal(err)
	}
	_, _ = c.life.WorkJobs(ctx)
	c.store.FaultAt = nil
	if !failed.Load() {
		t.Fatal("no release of the group name's claim was sent")
	}
	for range 2 {
		if _, err := c.life.WorkJobs(ctx); err != nil {
			t.Errorf("a later pass: %v", err)
		}
	}
	claims, _ := c.store.Snapshot()
	for _, cl := range claims {
		if cl.Owner == c.group {
			t.Errorf("the closed group keeps a claim of its %s %q", cl.Kind, cl.Key)
		}
	}
	if left := c.store.ClosingSnapshot(); len(left) != 0 {
		t.Errorf("entries of the closing left: %+v", left)
	}
}
