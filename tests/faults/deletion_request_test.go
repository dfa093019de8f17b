package faults

import (
	"context"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/library"
)

// TestADeletionRequestRunsNoClosingJob (work that grows with the data
// stays out of requests): the owner closes the group and the closing's
// job has not run yet (its process died after the compare-and-set, or the
// worker is busy). An admin then deletes friend, a member of the group:
// the request's check of friend's groups finds the group gone, skips it
// and wakes the worker (wakeForGone), never carrying out the closing
// itself, so its store calls stay the same with 40 items shared with the
// group as with none (docs/design/cost-model.md: "12 + 2 per group ...
// whatever the items").
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
		if _, err := c.life.CloseGroup(ctx, as(c.owner), c.group); err != nil { // no worker pass
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
