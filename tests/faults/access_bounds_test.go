package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
)

// TestAStrangerCannotWeighOnAUsersReadsByAddingHerToGroups: anyone who
// manages a group may add anyone to it, so "other" adds friend to n
// groups of its own. Friend's read of a private item shared with the club
// she is in, and her refused change of it, touch as many member rows with
// n = 300 as with none: access is decided on the groups the item is
// shared with, never on the whole of the caller's groups (each of which a
// stranger can add to).
func TestAStrangerCannotWeighOnAUsersReadsByAddingHerToGroups(t *testing.T) {
	t.Parallel()
	type cost struct{ calls, rows int }
	costs := map[int][2]cost{}
	for _, n := range []int{0, 300} {
		c := newCloseWorld(t)
		ctx := context.Background()
		for i := range n {
			gr, err := c.grp.CreateGroup(ctx, as(c.other), groups.CreateInput{Name: fmt.Sprintf("spam-%d", i)})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.grp.SetMember(ctx, as(c.other), gr.ID, c.friend.ID, groups.RoleMember, nil); err != nil {
				t.Fatal(err)
			}
		}
		it := c.item(t, c.owner, "plans", library.VisibilityPrivate)
		if _, err := c.lib.Share(ctx, as(c.owner), it, c.group, library.RoleViewer); err != nil {
			t.Fatal(err)
		}
		measure := func(what string, fn func() error, want error) cost {
			t.Helper()
			calls, rows := c.store.Calls(), c.store.MemberRows()
			err := fn()
			got := cost{c.store.Calls() - calls, c.store.MemberRows() - rows}
			if want == nil && err != nil || want != nil && !errors.Is(err, want) {
				t.Fatalf("friend in %d groups of a stranger's, %s: %v, want %v", n, what, err, want)
			}
			t.Logf("friend in %d groups of a stranger's, %s: %d store calls, %d member rows", n, what, got.calls, got.rows)
			return got
		}
		read := measure("reading the club's private item", func() error { _, err := c.lib.Get(ctx, as(c.friend), it); return err }, nil)
		name := "renamed"
		change := measure("renaming it (a viewer: refused)", func() error {
			_, err := c.lib.Update(ctx, as(c.friend), it, library.Input{Name: &name})
			return err
		}, domain.ErrForbidden)
		costs[n] = [2]cost{read, change}
	}
	if costs[300] != costs[0] {
		t.Errorf("the reads cost %+v with friend in 300 more groups, %+v without", costs[300], costs[0])
	}
}

// TestLeavingAStrangersItemCostsTheSameWhateverItsGroups: a stranger
// shares his private item with friend and with 120, then 240, groups of
// his that he made her a member of (both past the lean rows' limit, so
// the fan-out is alike). Her removal of herself from it costs the same
// store calls and member rows either way (before, her access was worked
// out through every group: with 100 groups 114 calls and 202 rows
// against 14 and 2 with none). Leaving it again answers not found.
func TestLeavingAStrangersItemCostsTheSameWhateverItsGroups(t *testing.T) {
	t.Parallel()
	cost := map[int][2]int{}
	for _, n := range []int{120, 240} {
		c := newCloseWorld(t)
		ctx := context.Background()
		it := c.item(t, c.other, "spam", library.VisibilityPrivate)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		_, err := c.lib.Share(ctx, as(c.other), it, c.friend.ID, library.RoleViewer)
		must(err)
		for i := range n {
			gr, err := c.grp.CreateGroup(ctx, as(c.other), groups.CreateInput{Name: fmt.Sprintf("spam-%d", i)})
			must(err)
			_, _, err = c.grp.SetMember(ctx, as(c.other), gr.ID, c.friend.ID, groups.RoleMember, nil)
			must(err)
			_, err = c.lib.Share(ctx, as(c.other), it, gr.ID, library.RoleViewer)
			must(err)
		}
		calls, rows := c.store.Calls(), c.store.MemberRows()
		must(c.lib.Unshare(ctx, as(c.friend), it, c.friend.ID))
		cost[n] = [2]int{c.store.Calls() - calls, c.store.MemberRows() - rows}
		if err := c.lib.Unshare(ctx, as(c.friend), it, c.friend.ID); !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "leave the group") {
			t.Errorf("leaving an item again (she still sees it through the groups): %v, want not found, saying how to stop seeing it", err)
		}
		notMember := c.lib.Unshare(ctx, as(c.friend), it, c.friend.ID)
		for _, id := range []string{"c_" + strings.Repeat("a", 26), "c_nothing"} {
			if err := c.lib.Unshare(ctx, as(c.friend), id, c.friend.ID); err == nil || notMember == nil || err.Error() != notMember.Error() {
				t.Errorf("leaving %s, which does not exist, answers %v; leaving one she is no member of, %v: they must not differ", id, err, notMember)
			}
		}
	}
	if cost[240] != cost[120] {
		t.Errorf("friend's leave: [calls rows] %v with the item in 240 of the stranger's groups, %v in 120", cost[240], cost[120])
	}
}
