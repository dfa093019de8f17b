package faults

import "testing"

// TestAWorkerClockAheadKeepsAChangesFanout: a change used to mark again
// by the clock (markAgainIfLate),
// with a margin of half the grace (2.5 s) of clock difference between the
// changing instance and the worker. With the worker's clock 3.5 s ahead:
// the owner's update marks at T, reads the item and removes its lean
// rows; 2 s later, before its compare-and-set, the worker (its clock at
// T+5.5 s) takes the mark, fences the item, fans it out and consumes the
// mark. The update's compare-and-set fails on the fence, its next round
// reads after the fence, removes the rows again at the fenced version,
// and, 2 s after its mark by its own clock, did not mark again; it
// applied, and its fan-out stopped at the friend. No mark was left: the
// friend's library never got the item back (its rows were removed at the
// fenced version, so even a rebuild from the index, whose entry is at
// that version, cannot write them). Now the fence's record
// (fenced_before) tells the change its mark is gone, whatever the clocks.
func TestAWorkerClockAheadKeepsAChangesFanout(t *testing.T) {
	l := newLibWorld(t)
	l.lib.Hooks.BeforeRecord = workerAheadBeforeTheRecord(t, l, nil)
	if err := l.update("renamed", ""); err != nil {
		t.Fatalf("the update answered %v", err)
	}
	l.mu.Lock()
	l.stop = ""
	l.mu.Unlock()
	if err := l.workers(); err != nil { // the worker past the grace, and rebuilds
		t.Fatal(err)
	}
	snap := l.store.ContentSnapshot()
	if snap.Marks == 0 {
		t.Logf("no mark left for the update's stopped fan-out")
	}
	checkContent(t, "worker ahead", l, snap)
}
