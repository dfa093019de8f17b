package faults

import (
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestARenameStoppedAfterCommittingFreesItsNameInTime: bob renames himself
// bobby; the rename commits the claim of bobby, and its compare-and-set of
// the account is held (its answer lost, to land at any later time), or
// its process dies once the commit is written, before sending it. Bob never asks again and changes
// nothing. Within StaleClaimAge a stranger finds bobby taken (the change
// may be in flight); past it the stranger's signup fences bob's account
// and takes bobby over, and the held compare-and-set, landing after,
// applies to nothing: bobby is the stranger's alone and bob stays bob
// (U1). Before, bobby stayed bob's claim until bob changed anything: a
// name nobody holds, kept from everyone without an end.
func TestARenameStoppedAfterCommittingFreesItsNameInTime(t *testing.T) {
	t.Parallel()
	for _, at := range []struct {
		call  string
		fault memstore.Fault
	}{{"users.update", memstore.LandLate}, {"claims.commit", memstore.Crash}} {
		name := fmt.Sprintf("%s at %s", at.fault, at.call)
		w := newWorld()
		if err := w.signup("bob", "bob@example.org"); err != nil {
			t.Fatal(err)
		}
		w.store.FaultAt = func(_ int, call string) memstore.Fault {
			if call == at.call {
				return at.fault
			}
			return memstore.None
		}
		if err := rename(w, "bobby", ""); err == nil {
			t.Fatalf("%s: the rename answered", name)
		}
		w.store.FaultAt = nil
		w.store.Recover()
		if err := w.signup("bobby", "early@example.org"); err == nil {
			t.Fatalf("%s: a stranger took bobby at once, while the rename may be in flight", name)
		}
		w.store.Advance(domain.StaleClaimAge)
		if err := w.signup("bobby", "stranger@example.org"); err != nil {
			t.Errorf("%s: a stranger's signup as bobby %s later: %v", name, domain.StaleClaimAge, err)
		}
		w.store.Land()
		holders, _, _ := checkHeld(t, name, w)
		if got := holders["username/bob"]; got != me(w).ID {
			t.Errorf("%s: bob's username is held by %q", name, got)
		}
	}
}
