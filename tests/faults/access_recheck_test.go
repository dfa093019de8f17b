package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// slowFirst makes the first call named stmt Slow, running meanwhile in
// it; every other call runs as usual.
func slowFirst(st *memstore.Store, stmt string, meanwhile func()) {
	fired := false
	st.FaultAt = func(_ int, name string) memstore.Fault {
		if name == stmt && !fired {
			fired = true
			return memstore.Slow
		}
		return memstore.None
	}
	st.Meanwhile = meanwhile
}

// TestAManagerRemovedMidShareCannotShareHimselfBack: the friend manages
// the item and shares it with himself as a manager (nothing to do, as it
// stands). His access check reads his member row slowly; meanwhile the
// owner takes him off the item, and that unshare answers 204. The
// friend's share then decides on the item as it now stands, on a manager
// check of the item as it stood before: it must not make him a member
// (a manager) again after his removal answered. A change that grants
// something re-checks the state it relied on ("check again at the end").
func TestAManagerRemovedMidShareCannotShareHimselfBack(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	if err := l.share(l.friend, library.RoleManager); err != nil {
		t.Fatal(err)
	}
	var unshareErr error
	slowFirst(l.store, "content_members.find", func() {
		unshareErr = l.unshare(l.owner, l.friend)
	})
	_, shareErr := l.lib.Share(ctx, as(l.friend), l.item, l.friend.ID, library.RoleManager)
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if unshareErr != nil {
		t.Fatalf("the owner's unshare of the friend answered %v", unshareErr)
	}
	t.Logf("the friend's share answered %v", shareErr)
	if role := memberRole(l.store.ContentSnapshot(), l.item, l.friend.ID); role != "" {
		t.Errorf("after the owner's unshare of him answered, the friend is the item's %s again (his share answered %v)", role, shareErr)
	}
	name := "mine now"
	if _, err := l.lib.Update(ctx, as(l.friend), l.item, library.Input{Name: &name}); err == nil {
		t.Errorf("after the owner's unshare of him answered, the friend still changes the item")
	}
}

// TestAManagerRemovedMidUpdateCannotUndoTheOwnersLaterChange: the friend
// manages the public item and renames it, making it public again. His
// access check reads his member row slowly; meanwhile the owner takes him
// off the item (204), then makes it private (200). The friend's update,
// decided on a manager check of the item as it stood before, must not be
// recorded on top: whenever it took effect, he no longer managed the item
// or the owner's later change would stand.
func TestAManagerRemovedMidUpdateCannotUndoTheOwnersLaterChange(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	if err := l.share(l.friend, library.RoleManager); err != nil {
		t.Fatal(err)
	}
	var ownerErr error
	slowFirst(l.store, "content_members.find", func() {
		if ownerErr = l.unshare(l.owner, l.friend); ownerErr == nil {
			ownerErr = l.update("secret", string(library.VisibilityPrivate))
		}
	})
	name, public := "leaked", string(library.VisibilityPublic)
	_, updateErr := l.lib.Update(ctx, as(l.friend), l.item, library.Input{Name: &name, Visibility: &public})
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if ownerErr != nil {
		t.Fatalf("the owner's unshare and update answered %v", ownerErr)
	}
	if it := itemOf(l.store.ContentSnapshot(), l.item); it.Visibility != library.VisibilityPrivate || it.Name != "secret" {
		t.Errorf("after the owner removed the friend and made the item private, the friend's update in flight made it %s %q (it answered %v)", it.Visibility, it.Name, updateErr)
	}
}

// TestAMemberOfAClosingGroupCannotKeepWhatTheGroupManaged: the club
// manages the owner's private item "spare"; the friend is one of the
// club's members, and manages the item only through it. The owner closes
// the club: the closing answers 202 and its job has not run yet. From
// the answer on, the club is gone to every read and every membership ends
// with it; the friend must not make himself the item's manager of his
// own (nor open the item) in the window before the job drops the club's
// share, to keep it once the job has run.
func TestAMemberOfAClosingGroupCannotKeepWhatTheGroupManaged(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	if _, err := c.life.CloseGroup(ctx, as(c.owner), c.group, ownersProof()); err != nil {
		t.Fatalf("the closing answered %v", err)
	}
	if _, err := c.lib.Get(ctx, as(c.friend), c.spare); err == nil {
		t.Errorf("after the club's closing answered, its member still opens the private item shared with it")
	}
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.friend.ID, library.RoleManager)
	if err := worked(c.life)(c.life.CloseGroup(ctx, as(c.owner), c.group, ownersProof())); err != nil {
		t.Fatalf("the closing's job: %v", err)
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.friend.ID); role != "" {
		t.Errorf("the club's member made himself the item's %s after the club's closing answered (his share answered %v), and keeps it once the closing is done", role, shareErr)
	}
}

// TestAMemberWhoseRemovalIsRecordedNoLongerSeesTheGroupsPrivateItems: the
// owner removes friend from the club; the group row records the removal
// (its compare-and-set applied) but the member rows' deletes fail, so the
// removal answers an error and its rows wait for whoever finishes it.
// The group row is the record of membership: from its compare-and-set
// friend is no member, and the club's library shows him no private item
// (before: the page's check read his member row alone, still there).
func TestAMemberWhoseRemovalIsRecordedNoLongerSeesTheGroupsPrivateItems(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	secret := c.item(t, c.owner, "secret", library.VisibilityPrivate)
	if _, err := c.lib.Share(ctx, as(c.owner), secret, c.group, library.RoleViewer); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		t.Helper()
		pg, err := c.lib.Library(ctx, as(c.friend), c.group, library.NewestFirst, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(pg.Items, func(e library.Entry) bool { return e.ContentID == secret })
	}
	if !listed() {
		t.Fatal("the club's member does not see its private item")
	}
	c.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "groups_by_member.delete" || name == "group_members.delete" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	err := c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
	c.store.FaultAt = nil
	if err == nil {
		t.Fatal("the removal answered although its rows were not removed")
	}
	i := slices.IndexFunc(c.store.GroupSnapshot().Groups, func(gr groups.Group) bool { return gr.ID == c.group })
	if gr := c.store.GroupSnapshot().Groups[i]; gr.Pending == nil || gr.Pending.UserID != c.friend.ID || gr.Pending.Role != "" {
		t.Fatalf("the group row does not record friend's removal: %+v", gr.Pending)
	}
	if listed() {
		t.Error("friend, whose removal the group records, still sees the club's private item")
	}
}

// TestAnUnshareRecordedButNotFinishedIsNotListed: the owner takes friend
// off the item; the item's row records the removal (its compare-and-set
// applied, the answer given) but the member row's delete fails, left to
// the outbox worker. The item's member list, whose counts already leave
// friend out, lists him no more either: the row is the record of the
// item's members, as it is of its counts.
func TestAnUnshareRecordedButNotFinishedIsNotListed(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "content_members.delete" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	err := l.unshare(l.owner, l.friend)
	l.store.FaultAt = nil
	if err != nil {
		t.Fatalf("the unshare answered %v", err)
	}
	if role := memberRole(l.store.ContentSnapshot(), l.item, l.friend.ID); role == "" {
		t.Fatal("the member row was removed: the fault did not hold it")
	}
	list, err := l.lib.MembersPage(ctx, as(l.owner), l.item, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Page.Items {
		if m.PrincipalID == l.friend.ID {
			t.Errorf("friend, taken off the item (its counts say %d members), is still listed: %+v", list.Members, list.Page.Items)
		}
	}
}

// TestADemotionRecordedEndsTheManagersRightsAtOnce: the owner demotes
// friend, a manager of the club, to member; the group records the change
// and its member row's write fails (the demotion answers 503, its row
// left for whoever finishes it). The group row is the record: friend's
// groups already say member, and friend can no longer take the shared
// item off the club's library (before, his old member row still said
// manager until the change was finished, a minute later or more).
func TestADemotionRecordedEndsTheManagersRightsAtOnce(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	if err := c.set(c.owner, c.friend, groups.RoleManager); err != nil {
		t.Fatal(err)
	}
	holdFirst(c.store, "group_members.insert", memstore.FailBefore)
	if err := c.set(c.owner, c.friend, groups.RoleMember); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("the demotion whose member write failed answered %v, want 503", err)
	}
	c.store.FaultAt = nil
	mine, err := c.grp.ListUserGroups(ctx, as(c.friend), c.friend.ID, "", 10)
	if err != nil || len(mine.Items) != 1 || mine.Items[0].Role != groups.RoleMember {
		t.Fatalf("friend's groups: %+v, %v; want the club as member", mine.Items, err)
	}
	if err := c.lib.Unshare(ctx, as(c.friend), c.shared, c.group); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("friend, demoted to member, took the shared item off the club's library: %v, want 403", err)
	}
}

// TestAMemberRemovedFromTheGroupMidShareCannotShareHimselfIn: the club
// manages the owner's private item "spare"; the friend, one of the
// club's members, manages the item only through it, and shares it with
// himself as a manager. A call of his share is slow: his access check's
// read of his groups (it answers the club), or the share's
// compare-and-set; meanwhile the owner takes him out of the club, and
// that removal answers 204. His removal moves no version of the item, so
// the share's compare-and-set applies on the item as it checked it: he
// must not be the item's manager of his own after his removal answered,
// nor open the item any more (the share relied on a membership that had
// ended: "check again at the end").
func TestAMemberRemovedFromTheGroupMidShareCannotShareHimselfIn(t *testing.T) {
	t.Parallel()
	for _, slow := range []string{"groups_by_member.among", "content.update"} {
		c := newClubManagedWorld(t)
		ctx := context.Background()
		var removeErr error
		slowFirst(c.store, slow, func() {
			removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
		})
		_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.friend.ID, library.RoleManager)
		c.store.FaultAt, c.store.Meanwhile = nil, nil
		if removeErr != nil {
			t.Fatalf("%s slow: the owner's removal of the friend from the club answered %v", slow, removeErr)
		}
		if role := memberRole(c.store.ContentSnapshot(), c.spare, c.friend.ID); role != "" {
			t.Errorf("%s slow: after his removal from the club answered, the friend made himself the item's %s (his share answered %v)", slow, role, shareErr)
		}
		if _, err := c.lib.Get(ctx, as(c.friend), c.spare); err == nil {
			t.Errorf("%s slow: after his removal from the club answered, the friend still opens the club's private item", slow)
		}
		if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 2 || it.Managers != 2 || it.Pending != nil {
			t.Errorf("%s slow: the item counts %d members, %d managers (pending %+v), want the owner and the club", slow, it.Members, it.Managers, it.Pending)
		}
	}
}

// TestAShareWhoseAskerLeftTheGroupIsTakenBackByWhoeverFinishesIt: the
// club manages the owner's private item "spare"; the friend, one of the
// club's members, manages the item only through it (he is its viewer of
// his own, or no member), and shares it with himself as a manager. The
// share's compare-and-set applies, but its answer is lost, or his
// process stops right after it: his request never asks his check again.
// The owner then takes him out of the club (204). The share stands
// recorded and unfinished; whoever finishes it (the outbox worker, or
// the owner's next change of the item) reads the club after the removal,
// so it cannot tell the share came before it, and must take it back as
// the request's own check would have: his membership as it was. Clearing
// it instead left him the item's manager of his own after his removal
// from the only group that let him manage it answered.
func TestAShareWhoseAskerLeftTheGroupIsTakenBackByWhoeverFinishesIt(t *testing.T) {
	t.Parallel()
	finishers := []struct {
		name   string
		finish func(c *closeWorld) error
	}{
		{"the outbox worker", func(c *closeWorld) error { return c.drain() }},
		{"the owner's next change", func(c *closeWorld) error {
			name := "renamed"
			_, err := c.lib.Update(context.Background(), as(c.owner), c.spare, library.Input{Name: &name})
			return err
		}},
	}
	for _, prior := range []string{"", library.RoleViewer} {
		for _, fault := range []memstore.Fault{memstore.LoseAnswer, memstore.Crash} {
			for _, f := range finishers {
				name := fmt.Sprintf("%s, finished by %s, his own role before %q", fault, f.name, prior)
				c := newClubManagedWorld(t)
				ctx := context.Background()
				if prior != "" {
					if _, err := c.lib.Share(ctx, as(c.owner), c.spare, c.friend.ID, prior); err != nil {
						t.Fatal(err)
					}
				}
				before := itemOf(c.store.ContentSnapshot(), c.spare)
				holdFirst(c.store, "content.update", fault)
				_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.friend.ID, library.RoleManager)
				recovered(c.store)
				if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Pending == nil || it.Pending.PrincipalID != c.friend.ID {
					t.Fatalf("%s: the friend's share is not recorded and unfinished (it answered %v): %+v", name, shareErr, it.Pending)
				}
				if err := c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID); err != nil {
					t.Fatalf("%s: the owner's removal of the friend from the club answered %v", name, err)
				}
				if err := f.finish(c); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if role := memberRole(c.store.ContentSnapshot(), c.spare, c.friend.ID); role != prior {
					t.Errorf("%s: after his removal from the club answered, the friend is the item's %q of his own", name, role)
				}
				if _, err := c.lib.Get(ctx, as(c.friend), c.spare); err == nil && prior == "" {
					t.Errorf("%s: after his removal from the club answered, the friend still opens the club's private item", name)
				}
				if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != before.Members || it.Managers != before.Managers || it.Pending != nil {
					t.Errorf("%s: the item counts %d members, %d managers (pending %+v), want %d and %d as before the share", name, it.Members, it.Managers, it.Pending, before.Members, before.Managers)
				}
			}
		}
	}
}

// TestAShareClearedOnceItsAskerWasSeenInTheGroupIsNeverTakenBack: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer; the share's
// compare-and-set applies but its answer is lost (503). The outbox worker
// reads the item, the share pending, and is slow writing its member row;
// meanwhile the friend's client sends the share again, which finishes
// the pending share (the friend still in the club: cleared, the version
// left as it was) and answers success with nothing more to do, and only
// then does the owner take the friend out of the club. The worker goes on
// from its read, finds the friend out of the club and takes the share
// back by a compare-and-set on the version that recorded it, which the
// clear did not move. A share cleared by a finisher that saw its caller
// in the group is proven (any removal came after it) and answered
// success; taking it back is an undo on a guess: exactly one of the
// clear and the take-back may apply.
func TestAShareClearedOnceItsAskerWasSeenInTheGroupIsNeverTakenBack(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	holdFirst(c.store, "content.update", memstore.LoseAnswer)
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	recovered(c.store)
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Pending == nil || it.Pending.AskedBy != c.friend.ID {
		t.Fatalf("the friend's share is not recorded, named and unfinished (it answered %v): %+v", shareErr, it.Pending)
	}
	var againErr, removeErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		_, againErr = c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
	})
	drainErr := c.drain()
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if againErr != nil || removeErr != nil || drainErr != nil {
		t.Fatalf("the share sent again answered %v, the removal %v, the worker %v", againErr, removeErr, drainErr)
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID); role != library.RoleViewer {
		t.Errorf("the share sent again answered success while the friend was in the club, yet the other user is the item's %q", role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 3 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), want the owner, the club and the other user", it.Members, it.Managers, it.Pending)
	}
}

// TestAShareItsFinishSawThroughIsNotRevertedByALaterCheck: the club
// manages the owner's private item "spare", and the friend, one of its
// members, shares it with the other user as a viewer. His request
// records the share and finishes it: its finisher reads him in the club
// after the share was recorded and clears it. His request is then slow
// (deleting its outbox mark, before it asks his check again); meanwhile
// his client sends the share again,
// which finds it done and answers success (nothing to do), and only then
// does the owner take him out of the club. His request goes on, finds
// him out of the club, and reverted the share: a share its finisher saw
// through (any removal came after it), that another request answered
// success for, undone for a departure that came after it. Exactly one
// of the clear and an undo may apply, and the clear came first.
func TestAShareItsFinishSawThroughIsNotRevertedByALaterCheck(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	cleared, fired := false, false
	c.store.FaultAt = func(_ int, name string) memstore.Fault {
		switch {
		case name == "content.clear":
			cleared = true
		case name == "content_marks.done" && cleared && !fired:
			fired = true // the request, once its finish cleared the share
			return memstore.Slow
		}
		return memstore.None
	}
	shareSentAgainThenRemoved(t, c, &fired, "the request was never slow once its finish cleared the share")
}

// TestAShareItsFinishSawThroughIsNotRevertedWhenItsClearWentUnanswered:
// TestAShareItsFinishSawThroughIsNotRevertedByALaterCheck with the
// finish's clear applied and its answer lost. The finish read the friend
// in the club after the share was recorded, so the share stands proven
// whatever became of the clear; his request is slow right after it, his
// client's share sent again answers success (nothing to do) and the
// owner takes him out of the club. The request then asked his check
// again, found him out, and reverted the share the retry had answered
// success for.
func TestAShareItsFinishSawThroughIsNotRevertedWhenItsClearWentUnanswered(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	cleared, fired := false, false
	c.store.FaultAt = func(_ int, name string) memstore.Fault {
		switch {
		case name == "content.clear" && !cleared:
			cleared = true
			return memstore.LoseAnswer
		case cleared && !fired:
			fired = true // the request's next call, once its clear's answer was lost
			return memstore.Slow
		}
		return memstore.None
	}
	shareSentAgainThenRemoved(t, c, &fired, "the request was never slow once its clear's answer was lost")
}

// TestAShareAnotherFinisherSawThroughIsNotRevertedByALaterCheck: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer. The share is
// recorded and its request's finish fails (writing the member row); his
// request is then slow asking his check again; meanwhile his client
// sends the share again, which finishes the pending share (the friend
// read in the club: cleared) and answers success with nothing more to
// do, and only then does the owner take him out of the club. His request
// goes on, finds him out of the club, and reverted the share by a change
// of its own: a share a finisher saw through (any removal came after
// it), answered success, undone for a departure that came after it.
// Exactly one of a clear and a take-back may apply, and the clear did.
func TestAShareAnotherFinisherSawThroughIsNotRevertedByALaterCheck(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	failed, fired := false, false
	c.store.FaultAt = func(_ int, name string) memstore.Fault {
		switch {
		case name == "content_members.put" && !failed:
			failed = true // the request's own finish
			return memstore.FailBefore
		case name == "content_members.groups" && failed && !fired:
			fired = true // the request's own check again
			return memstore.Slow
		}
		return memstore.None
	}
	shareSentAgainThenRemoved(t, c, &fired, "the request's check after its failed finish was never slow")
}

// TestAShareWhoseAskerStillManagesThroughAnotherGroupStands: the club
// and a second group, the circle, both manage the owner's private item
// "spare", and the friend is a member of both. He shares the item with
// the other user as a viewer; the share's compare-and-set applies but
// its answer is lost (503), and it names one of his two groups. The owner
// then takes him out of that group alone, and the outbox worker finishes
// the share. The friend managed the item throughout, through the other
// group: the request's own check (heldAfter) would pass, and so must its
// finisher's. Taking the share back because the one group named lost him
// undoes a share his right saw through.
func TestAShareWhoseAskerStillManagesThroughAnotherGroupStands(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	circle, err := c.grp.CreateGroup(ctx, as(c.owner), groups.CreateInput{Name: "circle"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.grp.SetMember(ctx, as(c.owner), circle.ID, c.friend.ID, groups.RoleMember, nil); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{c.group, circle.ID} {
		if _, err := c.lib.Share(ctx, as(c.owner), c.spare, g, library.RoleManager); err != nil {
			t.Fatal(err)
		}
	}
	holdFirst(c.store, "content.update", memstore.LoseAnswer)
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	recovered(c.store)
	it := itemOf(c.store.ContentSnapshot(), c.spare)
	if it.Pending == nil || it.Pending.Through == "" {
		t.Fatalf("the friend's share is not recorded, named and unfinished (it answered %v): %+v", shareErr, it.Pending)
	}
	if err := c.grp.RemoveMember(ctx, as(c.owner), it.Pending.Through, c.friend.ID); err != nil {
		t.Fatalf("the owner's removal of the friend from the group the share names answered %v", err)
	}
	if err := c.drain(); err != nil {
		t.Fatal(err)
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID); role != library.RoleViewer {
		t.Errorf("the friend, still managing the item through his other group, shared it with the other user, who is its %q", role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 4 || it.Managers != 3 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), want the owner, both groups and the other user", it.Members, it.Managers, it.Pending)
	}
}

// TestARefusedShareLeavesNothingAnotherFinisherCleared: the friend, a
// member of the club that manages the owner's private item, shares it
// with the other user as a viewer. Once the share is recorded, his
// request is slow writing its member row; meanwhile the owner shares
// the item with the club again (nothing to do), which finishes the
// friend's share first (the friend in the club: cleared, the version
// left as it was), and then takes the friend out of the club. The
// friend's request goes on, finds him out of the club, and its take-back
// finds the share cleared. Whatever it answers must be true: a refusal
// (403) with the share standing tells the client nothing was shared
// while the other user holds the item.
func TestARefusedShareLeavesNothingAnotherFinisherCleared(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		refusedShareAfterAnotherFinisher(t, lost)
	}
}

// refusedShareAfterAnotherFinisher runs
// TestARefusedShareLeavesNothingAnotherFinisherCleared's schedule, and
// with lost the friend's take-back's answer is lost too (it did not
// apply: the share stands). A take-back whose outcome is unknown is no
// proof the share was taken back: a refusal then (404, the friend no
// longer seeing the private item) would tell the client nothing was
// shared while the other user holds the item. It may answer 503
// (unknown), or what its own check leaves true.
func refusedShareAfterAnotherFinisher(t *testing.T, lost bool) {
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var againErr, removeErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		_, againErr = c.lib.Share(ctx, as(c.owner), c.spare, c.group, library.RoleManager)
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
		if lost {
			holdFirst(c.store, "content.update", memstore.LoseAnswer) // the friend's take-back
		}
	})
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	recovered(c.store)
	c.store.Meanwhile = nil
	if againErr != nil || removeErr != nil {
		t.Fatalf("take-back's answer lost %v: the owner's share again answered %v, the removal %v", lost, againErr, removeErr)
	}
	if err := c.drain(); err != nil {
		t.Fatal(err)
	}
	role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
	if shareErr != nil && !(lost && errors.Is(shareErr, domain.ErrUnavailable)) && role != "" {
		t.Errorf("take-back's answer lost %v: the friend's share was refused (%v), yet the other user is the item's %s", lost, shareErr, role)
	}
	if shareErr == nil && role != library.RoleViewer {
		t.Errorf("take-back's answer lost %v: the friend's share answered success, yet the other user is the item's %q", lost, role)
	}
	members := 2 // the owner and the club
	if role != "" {
		members++
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != members || it.Managers != 2 || it.Pending != nil {
		t.Errorf("take-back's answer lost %v: the item counts %d members, %d managers (pending %+v), want %d and 2", lost, it.Members, it.Managers, it.Pending, members)
	}
}

// TestAShareTakenBackWhileItsRequestWasSlowIsNotAnsweredCreated: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer. Once the share
// is recorded, his request is slow writing its member row; meanwhile the
// owner takes him out of the club, the outbox worker finishes the share
// (the friend out of the club: taken back) and the owner adds him to the
// club again. His request goes on: its own check finds him in the club,
// and its clear finds the row moved on, as a clear after any later change
// would. Answering 201 tells the client the other user holds the item
// while the share is gone; the request must tell its share was taken
// back (409 share_taken_back), or answer a share that stands.
func TestAShareTakenBackWhileItsRequestWasSlowIsNotAnsweredCreated(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var removeErr, drainErr, addErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
		drainErr = c.drain()
		addErr = c.set(c.owner, c.friend, groups.RoleMember)
	})
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if removeErr != nil || drainErr != nil || addErr != nil {
		t.Fatalf("the removal answered %v, the worker %v, the friend's return to the club %v", removeErr, drainErr, addErr)
	}
	role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
	if shareErr == nil && role != library.RoleViewer {
		t.Errorf("the friend's share answered success, yet the other user is the item's %q", role)
	}
	var refusal *domain.Error
	if shareErr != nil && (!errors.As(shareErr, &refusal) || refusal.Code != "share_taken_back" || role != "") {
		t.Errorf("the friend's share answered %v, the other user being the item's %q; want 409 share_taken_back and no share", shareErr, role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 2 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), want the owner and the club", it.Members, it.Managers, it.Pending)
	}
}

// TestAShareAnsweredOnceItsAskerWasSeenInTheGroupIsNeverTakenBack: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer. Once the share
// is recorded, his request's finish fails (writing the member row, or
// clearing the share); its own check then finds him in the club, and it
// answers success, leaving the share pending for the outbox worker. Only
// then does the owner take him out of the club, and the worker finishes
// the share. His check passed after the share was recorded, so his
// removal came after it: the share stands, as its answer said. Taking it
// back on the worker's later read of the club undoes a share answered
// success, for a departure that came after it.
func TestAShareAnsweredOnceItsAskerWasSeenInTheGroupIsNeverTakenBack(t *testing.T) {
	t.Parallel()
	for _, failing := range []string{"content_members.put", "content.clear"} {
		c := newClubManagedWorld(t)
		ctx := context.Background()
		holdFirst(c.store, failing, memstore.FailBefore)
		_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
		c.store.FaultAt = nil
		if err := c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID); err != nil {
			t.Fatalf("%s failing: the owner's removal of the friend from the club answered %v", failing, err)
		}
		if err := c.drain(); err != nil {
			t.Fatal(err)
		}
		role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
		if shareErr == nil && role != library.RoleViewer {
			t.Errorf("%s failing: the friend's share answered success while he was in the club, yet the other user is the item's %q", failing, role)
		}
		if shareErr != nil && !errors.Is(shareErr, domain.ErrUnavailable) {
			t.Errorf("%s failing: the friend's share answered %v, want success or 503", failing, shareErr)
		}
		members := 2 // the owner and the club
		if role != "" {
			members++
		}
		if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != members || it.Managers != 2 || it.Pending != nil {
			t.Errorf("%s failing: the item counts %d members, %d managers (pending %+v), want %d and 2", failing, it.Members, it.Managers, it.Pending, members)
		}
	}
}

// TestAShareWhoseOwnTakeBackFoundItTakenBackIsNotAnsweredCreated: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer. Once the share
// is recorded, his request is slow writing its member row; meanwhile the
// owner takes him out of the club and the outbox worker finishes the
// share (the friend out of the club: taken back). His request goes on,
// finds him out of the club too, and is slow with its own take-back,
// while the owner adds him to the club again; that take-back then finds
// the row moved on (the worker's), and his own check finds him in the
// club. Answering 201 tells the client the other user holds the item
// while the share is gone: a take-back that did not apply proves only
// that another finisher cleared the share or took it back, and the row
// says which (409 share_taken_back here).
func TestAShareWhoseOwnTakeBackFoundItTakenBackIsNotAnsweredCreated(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var removeErr, drainErr, addErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
		drainErr = c.drain()
		slowFirst(c.store, "content.update", func() { // the friend's take-back
			c.store.Meanwhile = nil
			addErr = c.set(c.owner, c.friend, groups.RoleMember)
		})
	})
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if removeErr != nil || drainErr != nil || addErr != nil {
		t.Fatalf("the removal answered %v, the worker %v, the friend's return to the club %v", removeErr, drainErr, addErr)
	}
	role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
	if shareErr == nil && role != library.RoleViewer {
		t.Errorf("the friend's share answered success, yet the other user is the item's %q", role)
	}
	var refusal *domain.Error
	if shareErr != nil && (!errors.As(shareErr, &refusal) || refusal.Code != "share_taken_back" || role != "") {
		t.Errorf("the friend's share answered %v, the other user being the item's %q; want 409 share_taken_back and no share", shareErr, role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 2 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), want the owner and the club", it.Members, it.Managers, it.Pending)
	}
}

// TestAShareTakenBackBeforeItsPrincipalDepartedIsNotAnsweredCreated: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer. Once the share
// is recorded, his request is slow writing its member row; meanwhile the
// owner takes him out of the club, the outbox worker finishes the share
// (the friend out of the club: taken back), and an admin begins the
// deletion of the other user's account. His request goes on, finds the
// other user departing, and its take-back finds the row moved on (the
// worker's). It answered 201 on that alone, as if another finisher had
// cleared the share: a share taken back because his right ended before
// it was recorded, answered created. A take-back that did not apply
// proves only that another finisher cleared the share or took it back,
// and the row says which.
func TestAShareTakenBackBeforeItsPrincipalDepartedIsNotAnsweredCreated(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var removeErr, drainErr, deleteErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
		drainErr = c.drain()
		_, deleteErr = c.life.DeleteUser(ctx, as(c.admin), c.other.ID, accounts.Proof{}) // no worker pass
	})
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if removeErr != nil || drainErr != nil || deleteErr != nil {
		t.Fatalf("the removal answered %v, the worker %v, the other user's deletion %v", removeErr, drainErr, deleteErr)
	}
	role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
	if shareErr == nil {
		t.Errorf("the friend's share, taken back since he was out of the club, answered success; the other user is the item's %q", role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); role != "" || it.Members != 2 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), the other user its %q; want the owner and the club", it.Members, it.Managers, it.Pending, role)
	}
}

// TestAShareTakenBackForItsDepartedPrincipalIsNotAnsweredCreated: the
// club manages the owner's private item "spare", and the friend, one of
// its members, shares it with the other user as a viewer. Once the share
// is recorded, his request is slow writing its member row; meanwhile the
// owner takes him out of the club, an admin begins the deletion of the
// other user's account, and the outbox worker finishes the share (the
// other user departing: taken back, a removal that records no share's
// version). His request goes on, finds the other user departing, and its
// take-back finds the row moved on; the row records no take-back, and
// the request answered 201 as if another finisher had cleared the share,
// with no check of its own: a share that is gone, by a caller out of the
// club, answered created. The principal is departing, so the share is
// gone or going: it answers as a share to an unknown principal.
func TestAShareTakenBackForItsDepartedPrincipalIsNotAnsweredCreated(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var removeErr, deleteErr, drainErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
		_, deleteErr = c.life.DeleteUser(ctx, as(c.admin), c.other.ID, accounts.Proof{}) // no worker pass
		drainErr = c.drain()
	})
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if removeErr != nil || deleteErr != nil || drainErr != nil {
		t.Fatalf("the removal answered %v, the other user's deletion %v, the worker %v", removeErr, deleteErr, drainErr)
	}
	role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
	if shareErr == nil {
		t.Errorf("the friend's share, taken back since the other user is departing, answered success; the other user is the item's %q", role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); role != "" || it.Members != 2 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), the other user its %q; want the owner and the club", it.Members, it.Managers, it.Pending, role)
	}
}

// TestAShareRecordedAfterItsAskersRemovalIsTakenBack: the club manages
// the owner's private item "spare", and the friend, one of its members,
// shares it with the other user as a viewer. Once his check passed and
// before the share's compare-and-set, the owner takes him out of the
// club: the removal is recorded in the club's row, and its member rows
// are not yet removed (its write failed). The share is then recorded,
// and its finish (or, the finish failing first, the request's own check
// again) reads his membership of the club: the reverse index still lists
// him, and that read is slow; meanwhile the owner's next change of the
// club finishes the removal. The read then reads the club's row, which
// records no removal now, and took him for a member: the share was
// cleared (or vouched for) and the request answered 201, a share
// recorded after its caller's removal was recorded (his right ended
// before it), standing. Neither read alone saw him out, though he was
// out at both.
func TestAShareRecordedAfterItsAskersRemovalIsTakenBack(t *testing.T) {
	t.Parallel()
	for _, failing := range []string{"", "content_members.put"} {
		name := "its finish reading the club"
		if failing != "" {
			name = "its check again, its finish failing at " + failing
		}
		c := newClubManagedWorld(t)
		ctx := context.Background()
		var removeErr, againErr error
		fired := false
		c.lib.Hooks.BeforeRecord = func(string) {
			c.lib.Hooks.BeforeRecord = nil
			holdFirst(c.store, "groups_by_member.delete", memstore.FailBefore)
			removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
			failed := failing == ""
			c.store.FaultAt = func(_ int, stmt string) memstore.Fault {
				switch {
				case stmt == failing && !failed:
					failed = true
					return memstore.FailBefore
				case stmt == "groups_by_member.among" && failed && !fired:
					fired = true
					return memstore.Slow
				}
				return memstore.None
			}
			c.store.Meanwhile = func() {
				c.store.Meanwhile = nil
				againErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
			}
		}
		_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
		c.lib.Hooks.BeforeRecord, c.store.FaultAt, c.store.Meanwhile = nil, nil, nil
		if !fired || removeErr == nil || !errors.Is(againErr, groups.ErrNotMember) {
			t.Fatalf("%s: the schedule did not run: slow read %v, the removal answered %v, its finish %v", name, fired, removeErr, againErr)
		}
		if err := c.drain(); err != nil {
			t.Fatal(err)
		}
		role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
		if shareErr == nil || role != "" {
			t.Errorf("%s: the friend's share, recorded after his removal from the club was, answered %v; the other user is the item's %q", name, shareErr, role)
		}
		if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 2 || it.Managers != 2 || it.Pending != nil {
			t.Errorf("%s: the item counts %d members, %d managers (pending %+v), want the owner and the club", name, it.Members, it.Managers, it.Pending)
		}
	}
}

// TestAShareItsFinishSawThroughReadsItsAskersGroupRowOnce: the club
// manages the owner's private item "spare", and the friend, one of its
// members, shares it with the other user as a viewer, nobody else
// acting. Once the share is recorded, its finish reads his membership of
// the club: the reverse index, the club's row, and, found in it, the
// index once more, which alone tells a removal finished between the first
// two reads. It read the club's row a second time as well, a round trip
// on every share through a group that proves nothing more: a removal
// recorded after the first row read came after the share.
func TestAShareItsFinishSawThroughReadsItsAskersGroupRowOnce(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	reads := friendSharesCounting(t, c, false)
	if reads["groups.get"] != 1 || reads["groups_by_member.among"] != 2 {
		t.Errorf("once recorded, the friend's share read the club's row %d times and the reverse index %d times, want once and twice",
			reads["groups.get"], reads["groups_by_member.among"])
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID); role != library.RoleViewer {
		t.Errorf("the other user is the item's %q, want viewer", role)
	}
}

// TestAShareWhoseFinishFailedChecksItsAskerOnceMore: the club manages
// the owner's private item "spare", and the friend, one of its members,
// shares it with the other user as a viewer, nobody else acting. Once
// the share is recorded, its finish fails writing the other user's
// library, and the request checks him again: the item's groups and his
// own membership, the reverse index, the club's row, and, found in it,
// the index once more (a removal finished between the first two reads).
// It asked the whole check a second time for that last read, the item's
// groups and the club's row again with it: three round trips where one
// does.
func TestAShareWhoseFinishFailedChecksItsAskerOnceMore(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	reads := friendSharesCounting(t, c, true)
	if reads["groups.get"] != 1 || reads["groups_by_member.among"] != 2 {
		t.Errorf("its finish failed, the friend's share checked him again reading the club's row %d times and the reverse index %d times, want once and twice (all: %v)",
			reads["groups.get"], reads["groups_by_member.among"], reads)
	}
	if err := c.drain(); err != nil {
		t.Fatal(err)
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID); role != library.RoleViewer {
		t.Errorf("the other user is the item's %q, want viewer", role)
	}
}

// TestAShareTakenBackForItsPrincipalAfterItsRequestReadItIsNotAnsweredCreated:
// the club manages the owner's private item "spare", and the friend, one
// of its members, shares it with the other user as a viewer. Once the
// share is recorded, his request reads the other user's account (still
// active) slowly, or its finish fails writing the other user's library;
// meanwhile the owner takes him out of the club, an admin begins the
// deletion of the other user's account, and the outbox worker finishes
// the share (the other user departing: taken back, a removal that
// records no share's version). His request goes on: its take-back (he is
// out of the club), or its check again and the settling after it, finds
// the row moved on, and the row records no take-back, so it read the
// share as cleared by another finisher and answered 201: a share that is
// gone, by a caller found out of the club, answered created. A row moved
// on with no record of a take-back proves no clear while its principal
// is departing; the share is gone or going, and it answers as one to an
// unknown principal, or as its check refused.
func TestAShareTakenBackForItsPrincipalAfterItsRequestReadItIsNotAnsweredCreated(t *testing.T) {
	t.Parallel()
	for _, slowRead := range []bool{true, false} {
		name := "its take-back after a slow read of the other user"
		if !slowRead {
			name = "its check again, its finish failing"
		}
		c := newClubManagedWorld(t)
		ctx := context.Background()
		var removeErr, deleteErr, drainErr error
		ran := false
		meanwhile := func() {
			ran = true
			c.store.Meanwhile = nil
			removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
			_, deleteErr = c.life.DeleteUser(ctx, as(c.admin), c.other.ID, accounts.Proof{}) // no worker pass
			drainErr = c.drain()
		}
		c.lib.Hooks.BeforeRecord = func(string) {
			c.lib.Hooks.BeforeRecord = nil
			if slowRead {
				slowFirst(c.store, "users.profile", meanwhile)
				return
			}
			c.lib.Hooks.BeforeMember = func(string, string) error {
				c.lib.Hooks.BeforeMember = nil
				meanwhile()
				return domain.ErrUnavailable
			}
		}
		_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
		c.lib.Hooks.BeforeRecord, c.lib.Hooks.BeforeMember, c.store.FaultAt, c.store.Meanwhile = nil, nil, nil, nil
		if !ran || removeErr != nil || deleteErr != nil || drainErr != nil {
			t.Fatalf("%s: the schedule did not run (%v): the removal answered %v, the other user's deletion %v, the worker %v", name, ran, removeErr, deleteErr, drainErr)
		}
		role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
		if shareErr == nil {
			t.Errorf("%s: the friend's share, taken back since the other user is departing, answered success; the other user is the item's %q", name, role)
		}
		if it := itemOf(c.store.ContentSnapshot(), c.spare); role != "" || it.Members != 2 || it.Managers != 2 || it.Pending != nil {
			t.Errorf("%s: the item counts %d members, %d managers (pending %+v), the other user its %q; want the owner and the club", name, it.Members, it.Managers, it.Pending, role)
		}
	}
}

// TestAShareVouchedForAfterItsPrincipalsTakeBackIsNotAnsweredCreated:
// the club manages the owner's private item "spare", and the friend, one
// of its members, shares it with the other user as a viewer. Once the
// share is recorded, its finish fails writing the other user's library;
// meanwhile an admin begins the deletion of the other user's account and
// the outbox worker finishes the share (the other user departing: taken
// back, a removal that records no share's version). His request goes on:
// its check again passes (he is still in the club), and its vouch finds
// the row moved on; the row read says the share was taken back for its
// principal, yet the vouch read only a take-back for its caller as one,
// and the request answered 201 for a share that is gone. It answers as a
// share to an unknown principal, as its finish would have.
func TestAShareVouchedForAfterItsPrincipalsTakeBackIsNotAnsweredCreated(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var deleteErr, drainErr error
	ran := false
	c.lib.Hooks.BeforeRecord = func(string) {
		c.lib.Hooks.BeforeRecord = nil
		c.lib.Hooks.BeforeMember = func(string, string) error {
			c.lib.Hooks.BeforeMember = nil
			ran = true
			_, deleteErr = c.life.DeleteUser(ctx, as(c.admin), c.other.ID, accounts.Proof{}) // no worker pass
			drainErr = c.drain()
			return domain.ErrUnavailable
		}
	}
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.lib.Hooks.BeforeRecord, c.lib.Hooks.BeforeMember = nil, nil
	if !ran || deleteErr != nil || drainErr != nil {
		t.Fatalf("the schedule did not run (%v): the other user's deletion answered %v, the worker %v", ran, deleteErr, drainErr)
	}
	role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID)
	if shareErr == nil && role == "" {
		t.Errorf("the friend's share, taken back since the other user is departing, answered success; the other user is not the item's member")
	}
}

// TestAShareIsNotTakenBackOnACheckThatCouldNotBeRead: the club manages
// the owner's private item "spare", and the friend, one of its members,
// shares it with the other user as a viewer. Once the share is recorded,
// his request is slow writing its member row; meanwhile his client sends
// the share again, which finishes the first (the friend in the club:
// cleared) and answers success with nothing more to do. The first
// request goes on, finds him in the club too, and its own check after
// the share cannot read the item's groups (the database fails). The
// friend was in the club throughout: a failed read proves nothing, and
// taking the share back on it undoes a share answered success, on a
// guess. The request may answer 503; the share stands.
func TestAShareIsNotTakenBackOnACheckThatCouldNotBeRead(t *testing.T) {
	t.Parallel()
	c := newClubManagedWorld(t)
	ctx := context.Background()
	var againErr error
	slowFirst(c.store, "content_members.put", func() {
		c.store.Meanwhile = nil
		_, againErr = c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
		holdFirst(c.store, "content_members.groups", memstore.FailBefore) // the first request's check
	})
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if againErr != nil {
		t.Fatalf("the share sent again answered %v", againErr)
	}
	if err := c.drain(); err != nil {
		t.Fatal(err)
	}
	if shareErr != nil && !errors.Is(shareErr, domain.ErrUnavailable) {
		t.Errorf("the first share answered %v, want success or 503", shareErr)
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID); role != library.RoleViewer {
		t.Errorf("the share sent again answered success while the friend was in the club, yet the other user is the item's %q", role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 3 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), want the owner, the club and the other user", it.Members, it.Managers, it.Pending)
	}
}

// newClubManagedWorld is a closing's world whose club manages the
// owner's private item "spare": the friend, one of its members, manages
// it only through the club.
func newClubManagedWorld(t *testing.T) *closeWorld {
	t.Helper()
	c := newCloseWorld(t)
	if _, err := c.lib.Share(context.Background(), as(c.owner), c.spare, c.group, library.RoleManager); err != nil {
		t.Fatal(err)
	}
	return c
}

// friendSharesCounting: the friend shares "spare" with the other user as
// a viewer (its finish failing writing the other user's library when
// failFinish), and the store's calls once the share is recorded (from
// the finish's failure when failFinish) are counted.
func friendSharesCounting(t *testing.T, c *closeWorld, failFinish bool) map[string]int {
	t.Helper()
	reads := map[string]int{}
	// Counted from a hook the finish may run beside another store call:
	// the store's fault is set before, and counts once the hook says so.
	var counting atomic.Bool
	c.store.FaultAt = func(_ int, stmt string) memstore.Fault {
		if counting.Load() {
			reads[stmt]++
		}
		return memstore.None
	}
	c.lib.Hooks.BeforeRecord = func(string) {
		c.lib.Hooks.BeforeRecord = nil
		if !failFinish {
			counting.Store(true)
			return
		}
		c.lib.Hooks.BeforeMember = func(string, string) error {
			c.lib.Hooks.BeforeMember = nil
			counting.Store(true)
			return domain.ErrUnavailable
		}
	}
	_, err := c.lib.Share(context.Background(), as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.lib.Hooks.BeforeRecord, c.lib.Hooks.BeforeMember, c.store.FaultAt = nil, nil, nil
	if err != nil {
		t.Fatal(err)
	}
	return reads
}

// shareSentAgainThenRemoved: the friend shares "spare" with the other
// user as a viewer under the store's faults, his request slow where they
// say (fired then tells it was); meanwhile his client sends the share
// again, which answers success while he is in the club, and only then
// does the owner take him out of it. A share answered success while its
// caller's right held stands: the other user ends the item's viewer.
func shareSentAgainThenRemoved(t *testing.T, c *closeWorld, fired *bool, slow string) {
	t.Helper()
	ctx := context.Background()
	var againErr, removeErr error
	c.store.Meanwhile = func() {
		c.store.Meanwhile = nil
		_, againErr = c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
		removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
	}
	_, shareErr := c.lib.Share(ctx, as(c.friend), c.spare, c.other.ID, library.RoleViewer)
	c.store.FaultAt, c.store.Meanwhile = nil, nil
	if !*fired {
		t.Fatalf("%s: the schedule did not run", slow)
	}
	if againErr != nil || removeErr != nil {
		t.Fatalf("the share sent again answered %v, the removal %v", againErr, removeErr)
	}
	if err := c.drain(); err != nil {
		t.Fatal(err)
	}
	if role := memberRole(c.store.ContentSnapshot(), c.spare, c.other.ID); role != library.RoleViewer {
		t.Errorf("the share sent again answered success while the friend was in the club (the first answered %v), yet the other user is the item's %q", shareErr, role)
	}
	if it := itemOf(c.store.ContentSnapshot(), c.spare); it.Members != 3 || it.Managers != 2 || it.Pending != nil {
		t.Errorf("the item counts %d members, %d managers (pending %+v), want the owner, the club and the other user", it.Members, it.Managers, it.Pending)
	}
}
