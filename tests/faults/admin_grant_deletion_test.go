package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestAGrantRacingADeletionGrantsNothing (rule 3, check again at the end;
// docs/design/deletion.md): the operator runs `api admin grant ann`. Its
// lookup finds ann's account visible, and is slow: meanwhile ann deletes
// her account and the worker finishes the deletion (the row deleted, its
// roles among the personal data cleared). The grant then reads the row at
// SERIAL and must decide again on what it finds: an account no longer
// visible is no one to grant, so the command answers not found, and the
// deleted row keeps no role and its audit no grant. Before, the grant
// wrote the admin role into the deleted row (which no step clears again)
// and told the operator "ann is now an admin".
func TestAGrantRacingADeletionGrantsNothing(t *testing.T) {
	t.Parallel()
	l := newLifeWorld(t)
	ctx := context.Background()
	slowed := false
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "users.credentials" && !slowed {
			slowed = true
			return memstore.Slow
		}
		return memstore.None
	}
	var deleted error
	l.store.Meanwhile = func() { deleted = l.deleteSelf(l.ann) }
	_, err := l.svc.SetAdmin(ctx, "ann", true)
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if !slowed || deleted != nil {
		t.Fatalf("the schedule did not run: lookup slowed %v, deletion %v", slowed, deleted)
	}
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the grant of an account deleted meanwhile answered %v, want not found", err)
	}
	u, gerr := l.store.Users().GetSerial(ctx, l.ann.ID)
	if gerr != nil {
		t.Fatal(gerr)
	}
	if u.Status != domain.StatusDeleted || len(u.Roles) != 0 {
		t.Errorf("the deleted account is %q with roles %v, want deleted with none", u.Status, u.Roles)
	}
}
