package faults

import (
	"testing"

	"shelf/tests/memstore"
)

// TestAChangeThatNarrowedPastAFenceKeepsAMark: the owner's update of a
// lean item marks and reads the item; before its compare-and-set a worker
// whose clock runs 3.5 s ahead takes the mark, fences the item, fans it
// out and discards the mark, so the compare-and-set fails. The update
// reads the fenced row again, sees by the fence's record that its mark may
// be gone and marks again before it removes any member's lean rows
// (narrow); that fresh mark fails before it is sent, and the update
// answers 503 having removed nothing, so the item stays in every member's
// library (a change that removed rows keeps a mark behind them,
// docs/design/libraries.md#lean-rows). Before, narrow came first, and the
// rows were gone with no mark left for any worker.
func TestAChangeThatNarrowedPastAFenceKeepsAMark(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	l.lib.Hooks.BeforeRecord = fenceFromAhead(t, l, func() {
		// The update's next mark (its mark again, on the fenced row)
		// fails before it is sent.
		holdFirst(l.store, "content_marks.mark", memstore.FailBefore)
	})
	err := l.update("renamed", "")
	t.Logf("the update answered %v", err)
	l.lib.Hooks.BeforeRecord = nil
	l.store.FaultAt = nil
	if err := l.drain(); err != nil {
		t.Fatal(err)
	}
	checkContent(t, "narrowed past a fence, then its mark failed", l, l.store.ContentSnapshot())
}
