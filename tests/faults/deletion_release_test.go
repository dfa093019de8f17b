package faults

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// faultFirst has the first call named call meet fault, and no other; it
// answers whether that call came.
func faultFirst(store *memstore.Store, call string, fault memstore.Fault) *atomic.Bool {
	var hit atomic.Bool
	store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == call && hit.CompareAndSwap(false, true) {
			return fault
		}
		return memstore.None
	}
	return &hit
}

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
	failed := faultFirst(w.store, "claims.release", memstore.FailBefore)
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

// TestADeletionStoppedAfterItsMarkLeavesNoClaimOfANameItHeld: bob renamed
// his account and asked for a new address, so its row holds his old
// username and the address asked for, each claimed for the account. He
// deletes it, and the job's process dies just after the compare-and-set
// that marks it deleted (or the release of a held claim fails). Those
// keys were recorded only in the row that compare-and-set erased, so
// the next pass could not give them back: the claims named the deleted
// account by his old username and a second address for good. The
// deleted row now keeps the held keys (and nothing else of them) until
// their release is proven, and the job's next pass releases them and
// then clears them.
func TestADeletionStoppedAfterItsMarkLeavesNoClaimOfANameItHeld(t *testing.T) {
	t.Parallel()
	for _, fault := range []struct {
		name  string
		call  string
		fault memstore.Fault
	}{{"crash at the mark", "users.update", memstore.Crash}, {"a release not sent", "claims.release", memstore.FailBefore}} {
		w := renameHoldWorld(t)
		wireDeletion(w)
		if err := rename(w, "bobby", "robert@example.org"); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		id, current := me(w).ID, w.passwords[me(w).ID]
		p := w.signedIn(t, "bob@example.org")
		if _, err := w.life.DeleteUser(ctx, p, id, accounts.Proof{CurrentPassword: &current}); err != nil {
			t.Fatal(err)
		}
		// The job's first write of the row is its mark.
		hit := faultFirst(w.store, fault.call, fault.fault)
		_, _ = w.life.WorkJobs(ctx)
		recovered(w.store)
		if !hit.Load() {
			t.Fatalf("%s: the fault never struck", fault.name)
		}
		w.store.Advance(lease + time.Second)
		for range 2 {
			_, _ = w.life.WorkJobs(ctx)
		}
		if u := account(t, w); u.Status != domain.StatusDeleted || u.HeldUsernameKey != "" || u.PendingEmailKey != "" || u.RecoveryEmailKey != "" {
			t.Errorf("%s: the account is %s, holding %q %q %q", fault.name, u.Status, u.HeldUsernameKey, u.PendingEmailKey, u.RecoveryEmailKey)
		}
		claims, _ := w.store.Snapshot()
		for _, c := range claims {
			if c.Owner == id {
				t.Errorf("%s: the deleted account still has the claim of %s %s (%s)", fault.name, c.Kind, c.Key, c.State)
			}
		}
	}
}
