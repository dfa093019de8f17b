package faults

import (
	"context"
	"testing"

	"shelf/domain/library"
	"shelf/tests/memstore"
)

// TestACreationWhoseMembershipFailedKeepsItsCreatorPastALaterChange: the
// owner creates a private item; the write of her membership fails (not
// sent), so the creation answers 201 and leaves its mark to the worker.
// Before the worker runs, an admin renames the item (version 2). Then the
// worker runs. The item counts one member and one manager, its creator:
// she must be that member, with the item in her library. Without the
// creator's membership written by the first change, the worker's fence
// (which writes it again only at version 1) finds version 2 and never
// does: the item counts a manager nobody is, its creator, answered 201,
// can no longer see it, and only an admin can ever change it.
func TestACreationWhoseMembershipFailedKeepsItsCreatorPastALaterChange(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	name, private := "mine", string(library.VisibilityPrivate)
	holdFirst(l.store, "content_members.put", memstore.FailBefore)
	c, err := l.lib.Create(ctx, as(l.owner), library.Input{Name: &name, Visibility: &private})
	if err != nil {
		t.Fatalf("the creation whose membership failed answered %v, want 201", err)
	}
	l.store.FaultAt = nil
	renamed := "renamed by an admin"
	if _, err := l.lib.Update(ctx, l.admin, c.ID, library.Input{Name: &renamed}); err != nil {
		t.Fatalf("the admin's rename: %v", err)
	}
	if err := l.drain(); err != nil {
		t.Fatalf("the worker: %v", err)
	}
	if _, err := l.lib.Get(ctx, as(l.owner), c.ID); err != nil {
		t.Errorf("the creator reads her own item: %v", err)
	}
	checkContent(t, "creation whose membership failed, then an admin's rename", l, l.store.ContentSnapshot())
}
