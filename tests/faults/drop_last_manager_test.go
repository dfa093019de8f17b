package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
	"shelf/domain/library"
)

// TestADropThatFoundTheLastManagerDeletesNothingAManagerWasAddedTo: the
// club is the item's one manager (the owner left it), the friend a
// viewer. The club's closing drops it from the item (library.Drop, as
// the closing's job does; an account's deletion leaves an item the same
// way): the club is the last manager, so the item is to be deleted.
// Just before that deletion is recorded, an admin makes the friend a
// manager, and that share answers. The club is then no longer the
// item's last manager: the drop must take the club off and leave the
// item to the friend, not delete it on the count it read before the
// share ("check again at the end": the deletion rested on a state it
// did not hold at the version it wrote on).
func TestADropThatFoundTheLastManagerDeletesNothingAManagerWasAddedTo(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	if _, err := l.lib.Share(ctx, as(l.owner), l.item, l.group, library.RoleManager); err != nil {
		t.Fatal(err)
	}
	if err := l.lib.Unshare(ctx, as(l.owner), l.item, l.owner.ID); err != nil {
		t.Fatal(err)
	}
	var shareErr error
	fired := false
	l.lib.Hooks.BeforeRecord = func(string) {
		if fired {
			return
		}
		fired = true
		_, shareErr = l.lib.Share(ctx, l.admin, l.item, l.friend.ID, library.RoleManager)
	}
	dropErr := l.lib.Drop(ctx, l.item, l.group)
	l.lib.Hooks.BeforeRecord = nil
	if shareErr != nil {
		t.Fatalf("the admin's share of the friend as manager answered %v", shareErr)
	}
	if dropErr != nil {
		t.Fatalf("the club's drop answered %v", dropErr)
	}
	it := itemOf(l.store.ContentSnapshot(), l.item)
	if it.Deleted {
		t.Fatalf("the item was deleted although the admin's share made the friend its manager before the drop was recorded (managers then: %d)", it.Managers)
	}
	if role := memberRole(l.store.ContentSnapshot(), l.item, l.friend.ID); role != library.RoleManager {
		t.Errorf("the friend is the item's %q, want manager", role)
	}
	if role := memberRole(l.store.ContentSnapshot(), l.item, l.group); role != "" {
		t.Errorf("the club is still the item's %s after its drop", role)
	}
	if it.Managers != 1 || it.Members != 1 {
		t.Errorf("the item counts %d members, %d managers; want 1 and 1 (the friend)", it.Members, it.Managers)
	}
}

// TestADeletionThatFoundTheLastManagerDeletesNothingAManagerWasAddedTo:
// the same schedule through an account's deletion. The friend is the
// last manager of an item the owner made and left, the other user a
// viewer. An admin deletes the friend's account; its job leaves the item
// (the friend did not make it), is refused as the last manager, and is
// to delete it. Just before that deletion is recorded, an admin makes the
// other user a manager, and that share answers. The item must stay, the
// other user's to manage.
func TestADeletionThatFoundTheLastManagerDeletesNothingAManagerWasAddedTo(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	item := c.item(t, c.owner, "handed", library.VisibilityPublic)
	for _, u := range []struct {
		id, role string
	}{{c.friend.ID, library.RoleManager}, {c.other.ID, library.RoleViewer}} {
		if _, err := c.lib.Share(ctx, as(c.owner), item, u.id, u.role); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.lib.Unshare(ctx, as(c.owner), item, c.owner.ID); err != nil {
		t.Fatal(err)
	}
	var shareErr error
	fired := false
	c.lib.Hooks.BeforeRecord = func(id string) {
		if fired || id != item {
			return
		}
		fired = true
		_, shareErr = c.lib.Share(ctx, as(c.admin), item, c.other.ID, library.RoleManager)
	}
	err := worked(c.life)(c.life.DeleteUser(ctx, as(c.admin), c.friend.ID, accounts.Proof{}))
	c.lib.Hooks.BeforeRecord = nil
	if err != nil {
		t.Fatalf("the friend's deletion: %v", err)
	}
	if !fired || shareErr != nil {
		t.Fatalf("the admin's share of the other user as manager: fired %v, answered %v", fired, shareErr)
	}
	snap := c.store.ContentSnapshot()
	if it := itemOf(snap, item); it.Deleted {
		t.Fatalf("the item was deleted although the admin's share made the other user its manager before the deletion was recorded (managers then: %d)", it.Managers)
	}
	if role := memberRole(snap, item, c.other.ID); role != library.RoleManager {
		t.Errorf("the other user is the item's %q, want manager", role)
	}
	if role := memberRole(snap, item, c.friend.ID); role != "" {
		t.Errorf("the deleted friend is still the item's %s", role)
	}
}
