package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// A deletion finds the user's items through the user's library index and
// the user's groups through the reverse index (groups_by_member). Those
// are derived records, written after the row that records the membership
// (the item's, the group's). These tests are the memberships a deletion
// cannot see there: a derived write that failed, or a membership recorded
// by a compare-and-set that lands after the deletion read the index.
// Whoever carries such a membership out checks the account again at
// the end and takes it back (docs/design/deletion.md, "Memberships the
// deletion cannot see").

// TestCreateWhoseLibraryWriteFailedIsDeletedWithItsCreator: a creation
// answers 201 once its row is written, its creator's library left to the
// outbox worker when that write fails. The deletion, reading the creator's
// library index, does not find the item; unless it is taken back, it
// stays live with the deleted account as its only manager, and the worker
// writes it back into the deleted account's library. The item must end
// deleted, and the deletion complete (checkDeletion).
func TestCreateWhoseLibraryWriteFailedIsDeletedWithItsCreator(t *testing.T) {
	t.Parallel()
	sc := delScenarios[0]
	d := newDelWorld(t, sc)
	name, vis := "unseen", string(library.VisibilityPublic)
	faultNamed(d.store, "library_index.put", 0, memstore.FailBefore)
	c, err := d.lib.Create(context.Background(), as(d.doomed), library.Input{Name: &name, Visibility: &vis})
	recovered(d.store)
	if err != nil {
		t.Fatalf("the creation answered %v", err)
	}
	if err := d.deleteAs(sc); err != nil {
		t.Fatalf("the deletion answered %v", err)
	}
	checkDeletion(t, "create-library-failed", d)
	if item := itemOf(d.store.ContentSnapshot(), c.ID); !item.Deleted {
		t.Errorf("the item %s the deleted account made is live: %+v", c.ID, item)
	}
}

// TestShareWhoseLibraryWriteFailedIsTakenBackAfterTheDeletion: a share to
// the user answers 201 once recorded in the item's row; its library write
// failed, so the deletion does not find the item in the user's index.
// Unless it is taken back, the outbox worker finishes the share: the item
// counts the deleted account, and its library is written again
// (checkDeletion runs the worker, then checks).
func TestShareWhoseLibraryWriteFailedIsTakenBackAfterTheDeletion(t *testing.T) {
	t.Parallel()
	sc := delScenarios[0]
	d := newDelWorld(t, sc)
	item := newItemOf(t, d, "shared-late")
	faultNamed(d.store, "library_index.put", 0, memstore.FailBefore)
	_, err := d.lib.Share(context.Background(), as(d.friend), item, d.doomed.ID, library.RoleViewer)
	recovered(d.store)
	if err != nil {
		t.Fatalf("the share answered %v", err)
	}
	if err := d.deleteAs(sc); err != nil {
		t.Fatalf("the deletion answered %v", err)
	}
	checkDeletion(t, "share-library-failed", d)
}

// TestAddWhoseReverseIndexWriteFailedIsTakenBackAfterTheDeletion: a group
// add of the user recorded in the group row, whose groups_by_member write
// failed: the deletion, reading that index, does not find the group;
// unless the add is taken back, the group's next reader finishes it,
// counting and listing the deleted account (checkDeletion runs a reader
// of each group's members, then checks).
func TestAddWhoseReverseIndexWriteFailedIsTakenBackAfterTheDeletion(t *testing.T) {
	t.Parallel()
	sc := delScenarios[0]
	d := newDelWorld(t, sc)
	group := newGroupOf(t, d, "addedlate")
	faultNamed(d.store, "groups_by_member.insert", 0, memstore.FailBefore)
	_, _, err := d.grp.SetMember(context.Background(), as(d.friend), group, d.doomed.ID, groups.RoleMember, nil)
	recovered(d.store)
	if err != nil && !expected(err) {
		t.Fatalf("the add answered %v", err)
	}
	if err := d.deleteAs(sc); err != nil {
		t.Fatalf("the deletion answered %v", err)
	}
	checkDeletion(t, "add-reverse-index-failed", d)
}

// TestShareAndAddLandingAfterTheDeletionAreTakenBack: a share and a group
// add of the user, each decided while the account was visible, whose
// compare-and-set is held back and lands only after the deletion
// finished; then the sharer and the adder ask again (404: the account is
// gone), and the outbox worker and the group's next reader run
// (checkDeletion). Whoever carries them out takes them back, else the
// deleted account would stay a member of both.
func TestShareAndAddLandingAfterTheDeletionAreTakenBack(t *testing.T) {
	t.Parallel()
	sc := delScenarios[0]
	d := newDelWorld(t, sc)
	ctx := context.Background()
	item := newItemOf(t, d, "landing-late")
	group := newGroupOf(t, d, "joinedlate")
	faultNamed(d.store, "content.update", 0, memstore.LandLate)
	if _, err := d.lib.Share(ctx, as(d.friend), item, d.doomed.ID, library.RoleManager); !expected(err) {
		t.Fatalf("the held share answered %v", err)
	}
	faultNamed(d.store, "groups.update", 0, memstore.LandLate)
	if _, _, err := d.grp.SetMember(ctx, as(d.friend), group, d.doomed.ID, groups.RoleManager, nil); !expected(err) {
		t.Fatalf("the held add answered %v", err)
	}
	recovered(d.store)
	if err := d.deleteAs(sc); err != nil {
		t.Fatalf("the deletion answered %v", err)
	}
	d.store.Land()
	if _, err := d.lib.Share(ctx, as(d.friend), item, d.doomed.ID, library.RoleManager); !domainIs(err, domain.ErrNotFound) {
		t.Errorf("the share's retry answered %v, want 404", err)
	}
	if _, _, err := d.grp.SetMember(ctx, as(d.friend), group, d.doomed.ID, groups.RoleManager, nil); !domainIs(err, domain.ErrNotFound) {
		t.Errorf("the add's retry answered %v, want 404", err)
	}
	checkDeletion(t, "late-memberships", d)
}

// newItemOf makes an item of friend's, checked with the others.
func newItemOf(t *testing.T, d *delWorld, name string) string {
	t.Helper()
	vis := string(library.VisibilityLoggedIn)
	c, err := d.lib.Create(context.Background(), as(d.friend), library.Input{Name: &name, Visibility: &vis})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// newGroupOf makes a group of friend's, checked with the others.
func newGroupOf(t *testing.T, d *delWorld, name string) string {
	t.Helper()
	gr, err := d.grp.CreateGroup(context.Background(), as(d.friend), groups.CreateInput{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	d.groupIDs = append(d.groupIDs, gr)
	return gr.ID
}

// TestADepartedCreatorTakenOffMeanwhileLeavesTheItemStanding: the
// creation's library write failed, so the deletion of its creator does
// not find the item; the creator had made the friend a manager of it. The
// outbox worker, finishing the creation, finds the creator deleted and
// still a manager: the item is to be deleted, as the deletion would have
// deleted it. Just before that deletion is recorded, the friend takes the
// deleted account off the item, and that answers. The creator is then no
// member at all, and the deletion would not touch an item it is not on:
// the item is the friend's and must stay ("check again at the end": the
// item's deletion rested on a membership read before the version it
// wrote on).
func TestADepartedCreatorTakenOffMeanwhileLeavesTheItemStanding(t *testing.T) {
	t.Parallel()
	sc := delScenarios[0]
	d := newDelWorld(t, sc)
	ctx := context.Background()
	name, vis := "handed-over", string(library.VisibilityPublic)
	faultNamed(d.store, "library_index.put", 0, memstore.FailBefore)
	c, err := d.lib.Create(ctx, as(d.doomed), library.Input{Name: &name, Visibility: &vis})
	recovered(d.store)
	if err != nil {
		t.Fatalf("the creation answered %v", err)
	}
	if _, err := d.lib.Share(ctx, as(d.doomed), c.ID, d.friend.ID, library.RoleManager); err != nil {
		t.Fatalf("the creator's share with the friend answered %v", err)
	}
	if err := d.deleteAs(sc); err != nil {
		t.Fatalf("the deletion answered %v", err)
	}
	var unshareErr error
	fired := false
	d.lib.Hooks.BeforeRecord = func(id string) {
		if fired || id != c.ID {
			return
		}
		fired = true
		unshareErr = d.lib.Unshare(ctx, as(d.friend), c.ID, d.doomed.ID)
	}
	d.store.Advance(time.Minute)
	_, drainErr := d.lib.DrainOutbox(ctx, 30*time.Second, 100)
	d.lib.Hooks.BeforeRecord = nil
	if drainErr != nil {
		t.Fatalf("the outbox worker: %v", drainErr)
	}
	if !fired || unshareErr != nil {
		t.Fatalf("the friend's removal of the deleted creator: fired %v, answered %v", fired, unshareErr)
	}
	// The lost deletion had taken the item's lean rows away before its
	// compare-and-set; its mark stays, and the worker's next pass brings
	// back what still stands.
	d.store.Advance(time.Minute)
	if _, err := d.lib.DrainOutbox(ctx, 30*time.Second, 100); err != nil {
		t.Fatalf("the outbox worker's next pass: %v", err)
	}
	snap := d.store.ContentSnapshot()
	if it := itemOf(snap, c.ID); it.Deleted {
		t.Fatalf("the item was deleted although the friend took its deleted creator off it before the deletion was recorded (members then: %d)", it.Members)
	}
	if role := memberRole(snap, c.ID, d.friend.ID); role != library.RoleManager {
		t.Errorf("the friend is the item's %q, want manager", role)
	}
	if role := memberRole(snap, c.ID, d.doomed.ID); role != "" {
		t.Errorf("the deleted creator is still the item's %s", role)
	}
	checkContent(t, "creator-taken-off-meanwhile", &libWorld{world: d.world, lib: d.lib, admin: d.admin, owner: d.friend, friend: d.other, other: d.root}, snap)
}
