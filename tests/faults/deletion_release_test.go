package faults

import (
	"context"
	"sync/atomic"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestADeletionWhoseNameReleaseFailedLeavesNoClaimOfIt: ann deletes her
// account; the job marks it deleted, and the release of her username's
// claim is not sent (the node timed out). The claims are the last record
// of her names (the erased row has none): her username and her email,
// keyed as she typed them, naming her account's id. A job that went on
// past the failure finished, ended its entry and left the claim for good,
// read by no pass again (a signup may take it over, but nobody need
// ever come). The run fails instead, its entry kept, and the next pass
// gives the name back.
func TestADeletionWhoseNameReleaseFailedLeavesNoClaimOfIt(t *testing.T) {
	t.Parallel()
	w := newWorld()
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	ann := w.created[0]
	wireDeletion(w)
	ctx := context.Background()
	var failed atomic.Bool
	w.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "claims.release" && failed.CompareAndSwap(false, true) {
			return memstore.FailBefore
		}
		return memstore.None
	}
	if _, err := w.life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password)); err != nil {
		t.Fatal(err)
	}
	_, _ = w.life.WorkJobs(ctx)
	w.store.FaultAt = nil
	if !failed.Load() {
		t.Fatal("no release of a claim was sent")
	}
	for range 2 {
		if _, err := w.life.WorkJobs(ctx); err != nil {
			t.Errorf("a later pass: %v", err)
		}
	}
	claims, _ := w.store.Snapshot()
	for _, c := range claims {
		if c.Owner == ann.ID {
			t.Errorf("the deleted account keeps a claim of its %s %q", c.Kind, c.Key)
		}
	}
	if left := w.store.DeletionSnapshot(); len(left) != 0 {
		t.Errorf("entries of the deletion left: %+v", left)
	}
}
