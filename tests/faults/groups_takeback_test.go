package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestATakeBackWonByAReaderKeepsAnEntry (every attempt's record is its
// own): the owner adds other to the group; after the add's
// compare-and-set, other's deletion runs whole (it reads other's groups
// before the add wrote them). The add writes the member rows; a reader of
// the group (ShowGroup) finishes the same pending add, finds the account
// departed and takes it back: its compare-and-set records other's
// removal, and its removal's first write fails (the reader answers 503).
// The add's own take-back then loses to the reader's, and the add ends
// its entry of the change index. The reader's take-back wrote an entry of
// its own before its compare-and-set, so the worker finds the removal and
// finishes it: the deleted account keeps no member row (before, the
// removal was left pending with no entry anywhere).
func TestATakeBackWonByAReaderKeepsAnEntry(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	var readerErr error
	addErr := addWithOthersDeletion(t, c, func() {
		fails := 0
		c.store.FaultAt = func(_ int, name string) memstore.Fault {
			if name == "groups_by_member.delete" {
				fails++
				if fails == 1 {
					return memstore.FailBefore
				}
			}
			return memstore.None
		}
		_, readerErr = c.grp.ShowGroup(ctx, c.group)
		c.store.FaultAt = nil
	})
	t.Logf("reader: %v; add: %v", readerErr, addErr)
	if readerErr == nil {
		t.Fatalf("the reader's removal did not fail: the schedule did not happen")
	}
	t.Logf("change entries after the add: %d", len(c.store.ChangeSnapshot()))
	workersLeaveNoTraceOf(t, c, c.other.ID)
}

// addWithOthersDeletion has the owner add other to c's group. other's
// deletion runs whole right after the add's compare-and-set (its groups
// step finds no row of the group yet), and atApply runs once the add
// wrote the member rows. It returns the add's answer; the deletion must
// answer success.
func addWithOthersDeletion(t *testing.T, c *closeWorld, atApply func()) error {
	t.Helper()
	var delErr error
	c.grp.Hooks.AfterStep = func(op, step string) error {
		switch {
		case op == "set" && step == "cas":
			delErr = worked(c.life)(c.life.DeleteUser(context.Background(), as(c.admin), c.other.ID, accounts.Proof{}))
		case op == "set" && step == "apply":
			c.grp.Hooks.AfterStep = nil
			atApply()
		}
		return nil
	}
	addErr := c.set(c.owner, c.other, "member")
	if delErr != nil {
		t.Fatalf("the deletion answered %v", delErr)
	}
	return addErr
}

// workersLeaveNoTraceOf runs three passes of the jobs' worker, well past
// a change's grace, then checks the deleted account userID left nothing
// in c's group: no change pending, no member row, no group listed for it.
func workersLeaveNoTraceOf(t *testing.T, c *closeWorld, userID string) {
	t.Helper()
	for range 3 {
		c.store.Advance(2 * time.Minute)
		if _, err := c.life.WorkJobs(context.Background()); err != nil {
			t.Logf("pass: %v", err)
		}
	}
	snap := c.store.GroupSnapshot()
	for _, gr := range snap.Groups {
		if gr.ID == c.group && gr.Pending != nil {
			t.Errorf("after the worker's passes the group still has a change pending: %+v (member count %d, version %d)", *gr.Pending, gr.MemberCount, gr.Version)
		}
	}
	for _, m := range snap.Members[c.group] {
		if m.UserID == userID {
			t.Errorf("the deleted account is still a member row of the group (%s)", m.Role)
		}
	}
	if gs := snap.GroupsOf[userID]; len(gs) > 0 {
		t.Errorf("the deleted account still lists groups %v", gs)
	}
	_, users := c.store.Snapshot()
	for _, u := range users {
		if u.ID == userID && u.Status != domain.StatusDeleted {
			t.Errorf("the deleted account is %q", u.Status)
		}
	}
}
