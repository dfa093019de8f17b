package faults

import (
	"context"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
)

// TestADeletionRequestRunsNoClosingJob (work that grows with the data
// stays out of requests): the owner closes the group and the closing's
// job has not run yet (its process died after the compare-and-set, or the
// worker is busy). An admin then deletes friend, a member of the group:
// the request reads none of friend's groups and never carries out the
// closing itself (the deletion's job finishes it: finishClosingOf), so
// its store calls stay the same with 40 items shared with the group as
// with none (docs/design/cost-model.md).
func TestADeletionRequestRunsNoClosingJob(t *testing.T) {
	t.Parallel()
	calls := map[int]int{}
	for _, n := range []int{0, 40} {
		c := newCloseWorld(t)
		ctx := context.Background()
		for i := range n {
			it := c.item(t, c.owner, fmt.Sprintf("item-%d", i), library.VisibilityPublic)
			if _, err := c.lib.Share(ctx, as(c.owner), it, c.group, library.RoleViewer); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.life.CloseGroup(ctx, as(c.owner), c.group, ownersProof()); err != nil { // no worker pass
			t.Fatal(err)
		}
		before := c.store.Calls()
		_, err := c.life.DeleteUser(ctx, as(c.admin), c.friend.ID, accounts.Proof{})
		if err != nil {
			t.Fatal(err)
		}
		calls[n] = c.store.Calls() - before
		t.Logf("%d items shared with the closing group: the deletion's request made %d store calls; the group is %q after it",
			n, calls[n], c.status(c.group))
		if n > 0 && c.status(c.group) == domain.StatusClosed {
			t.Errorf("the deletion's request closed the group itself (its job's work, %d items)", n)
		}
	}
	if calls[40] > calls[0]+10 {
		t.Errorf("the deletion's request made %d store calls with 40 items shared with the closing group, %d with none", calls[40], calls[0])
	}
}

// TestADeletionRequestCostsTheSameWhateverTheGroups (work that grows with
// the data stays out of requests): ann is a plain member of n groups and,
// made so by their creator, the last manager of n others with a member
// each. Her deletion's request makes as many store calls with n = 40 as
// with n = 1 (it reads none of her groups: decision 79); its job hands
// every group she managed alone to its other member.
func TestADeletionRequestCostsTheSameWhateverTheGroups(t *testing.T) {
	t.Parallel()
	calls := map[int]int{}
	for _, n := range []int{1, 40} {
		l := newLifeWorld(t)
		ctx := context.Background()
		if err := l.signup("cat", "cat@example.org"); err != nil {
			t.Fatal(err)
		}
		cat := l.created[2]
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		var managed []string
		for i := range n {
			plain := l.group(t, l.bob, fmt.Sprintf("plain-%d", i))
			_, _, err := l.grp.SetMember(ctx, as(l.bob), plain.ID, l.ann.ID, groups.RoleMember, nil)
			must(err)
			left := l.group(t, l.bob, fmt.Sprintf("left-%d", i))
			_, _, err = l.grp.SetMember(ctx, as(l.bob), left.ID, cat.ID, groups.RoleMember, nil)
			must(err)
			_, _, err = l.grp.SetMember(ctx, as(l.bob), left.ID, l.ann.ID, groups.RoleManager, nil)
			must(err)
			must(l.grp.RemoveMember(ctx, as(l.bob), left.ID, l.bob.ID))
			managed = append(managed, left.ID)
		}
		before := l.store.Calls()
		j, err := l.life.DeleteUser(ctx, as(l.ann), l.ann.ID, accounts.Password(password))
		calls[n] = l.store.Calls() - before
		t.Logf("ann in %d groups, the last manager of %d: the deletion's request made %d store calls", 2*n, n, calls[n])
		if err := worked(l.life)(j, err); err != nil {
			t.Fatalf("the deletion with %d groups managed alone: %v", n, err)
		}
		for _, id := range managed {
			if role, err := l.grp.MemberRole(ctx, id, cat.ID); err != nil || role != groups.RoleManager {
				t.Errorf("group %s: the other member's role is %q (%v), want manager", id, role, err)
			}
		}
	}
	if calls[40] != calls[1] {
		t.Errorf("the deletion's request made %d store calls with 80 groups, %d with 2", calls[40], calls[1])
	}
}
