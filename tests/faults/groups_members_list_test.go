package faults

import (
	"context"
	"errors"
	"slices"
	"testing"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// TestAMemberWhoseRemovalIsRecordedNoLongerListsTheMembers: the owner's
// add of other is recorded in the club's row and its member write fails
// (503), so the add waits for whoever finishes it. Friend lists the
// club's members: his list finds the add pending and finishes it; once
// its rows are written, the owner removes friend, whose removal the
// group row records while its member deletes fail (503). The list's
// second read of the group finds friend's removal recorded, his member
// row still there. The group row is the record of membership (Standing):
// from its compare-and-set friend is no member, and the list answers 403
// (before, it read his member row alone and listed the members).
func TestAMemberWhoseRemovalIsRecordedNoLongerListsTheMembers(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	holdFirst(c.store, "group_members.insert", memstore.FailBefore)
	if err := c.set(c.owner, c.other, groups.RoleMember); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("the add whose member write failed answered %v, want 503", err)
	}
	c.store.FaultAt = nil
	var removeErr error
	c.grp.Hooks.AfterStep = func(op, step string) error {
		if op == "list" && step == "apply" {
			c.grp.Hooks.AfterStep = nil
			holdFirst(c.store, "groups_by_member.delete", memstore.FailBefore)
			removeErr = c.grp.RemoveMember(ctx, as(c.owner), c.group, c.friend.ID)
			c.store.FaultAt = nil
		}
		return nil
	}
	page, err := c.grp.ListMembers(ctx, as(c.friend), c.group, "", 10)
	c.grp.Hooks.AfterStep = nil
	if !errors.Is(removeErr, domain.ErrUnavailable) {
		t.Fatalf("the removal whose member delete failed answered %v, want 503", removeErr)
	}
	snap := c.store.GroupSnapshot()
	i := slices.IndexFunc(snap.Groups, func(gr groups.Group) bool { return gr.ID == c.group })
	if gr := snap.Groups[i]; gr.Pending == nil || gr.Pending.UserID != c.friend.ID || gr.Pending.Role != "" {
		t.Fatalf("the group row does not record friend's removal: %+v", gr.Pending)
	}
	if !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("friend, whose removal the group records, lists the club's members: %+v, %v; want 403", page.Items, err)
	}
}
