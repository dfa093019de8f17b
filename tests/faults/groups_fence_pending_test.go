package faults

import (
	"context"
	"testing"
)

// TestAnAddWhoseClearLosesToAClosingFenceKeepsAnEntry (fence before you
// forget): the owner's closing sends its compare-and-set, which is held
// (the request answers 503; its entry stays). Eleven minutes on the owner
// adds other; after the add's compare-and-set, other's deletion runs whole
// (it reads other's groups before the add wrote them). The add writes the
// member rows; meanwhile the closings' repair finds the stale closing
// entry and fences the group. The fence finishes the pending add first
// (it takes it back: other is departed) and only then moves the version
// on, so the add's own take-back, losing to it, ends its entry with
// nothing left pending: the deleted account is no member, and no row of
// it is left. (Before, the fence carried the pending add to a version of
// its own; the add took its lost take-back for another finisher's and
// ended its entry, and the deleted account stayed a member, with no entry
// for the worker.)
func TestAnAddWhoseClearLosesToAClosingFenceKeepsAnEntry(t *testing.T) {
	t.Parallel()
	c := newCloseWorld(t)
	ctx := context.Background()
	heldClosing(t, c)
	var repErr error
	addErr := addWithOthersDeletion(t, c, func() { _, repErr = c.life.RepairClosings(ctx, false) })
	t.Logf("closing repair: %v; add: %v; change entries %d", repErr, addErr, len(c.store.ChangeSnapshot()))
	workersLeaveNoTraceOf(t, c, c.other.ID)
}
