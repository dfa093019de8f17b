package memstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"shelf/domain/groups"
)

// TestAPassReadsEachDayWhenItReachesIt: the repository reads an index of
// work in progress a partition at a time, each when the pass reaches it,
// so an entry begun on a later day while the pass works on an earlier
// one is read in the same pass, and one begun on a day already read is
// not (it waits for the next pass); a day after the clock's at the
// pass's start is not read either. The fake read the whole index at
// once, so no explorer could meet the first (a pass that crosses UTC
// midnight while a sweep runs; TestAWorkerAheadEndsNoRepeatAskedAfterItsSweepBegan
// had to wrap the index to show it).
func TestAPassReadsEachDayWhenItReachesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	day := time.Date(2026, 12, 7, 23, 59, 0, 0, time.UTC)
	st := New(day.Add(2 * time.Minute)) // the pass begins past midnight
	idx := st.Closings()
	entry := func(id string, at time.Time) groups.ClosingEntry {
		return groups.ClosingEntry{GroupID: id, Attempt: "a-" + id, At: at, By: "admin"}
	}
	if err := idx.Begin(ctx, entry("first", day)); err != nil {
		t.Fatal(err)
	}
	var read []string
	err := idx.InProgress(ctx, func(e groups.ClosingEntry, _ time.Time) error {
		read = append(read, e.GroupID)
		if e.GroupID == "first" {
			for _, e := range []groups.ClosingEntry{entry("same day", day.Add(time.Second)), entry("next day", day.Add(90*time.Second)), entry("tomorrow", day.Add(25*time.Hour))} {
				if err := idx.Begin(ctx, e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"first", "next day"}; !slices.Equal(read, want) {
		t.Errorf("the pass read %v, want %v", read, want)
	}
	read = nil
	if err := idx.InProgress(ctx, func(e groups.ClosingEntry, _ time.Time) error { read = append(read, e.GroupID); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"first", "same day", "next day"}; !slices.Equal(read, want) { // tomorrow: once the clock is there
		t.Errorf("the next pass read %v, want %v", read, want)
	}
}
