package domain

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// staleEntry is an entry of the test's index: its name, when it began,
// and what finishing it does.
type staleEntry struct {
	name    string
	began   time.Time
	done    bool
	failure error
}

type staleIndex struct {
	entries []staleEntry
	// now is the pass's clock.
	now    time.Time
	ended  []string
	endErr map[string]error
}

func (x *staleIndex) End(_ context.Context, e staleEntry) error {
	if err := x.endErr[e.name]; err != nil {
		return err
	}
	x.ended = append(x.ended, e.name)
	return nil
}

func (x *staleIndex) InProgress(_ context.Context, fn func(staleEntry, time.Time) error) error {
	for _, e := range x.entries {
		if err := fn(e, x.now); err != nil {
			return err
		}
	}
	return nil
}

// TestFinishStale: an entry younger than the grace is not touched; one
// whose finish fails, or is not done yet, stays; one finished is ended;
// an end that fails is reported and not counted; the pass goes on past
// every failure.
func TestFinishStale(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	finishFailed, endFailed := errors.New("finish failed"), errors.New("end failed")
	x := &staleIndex{
		entries: []staleEntry{
			{name: "young", began: now.Add(-time.Minute), done: true},
			{name: "failing", began: old, failure: finishFailed},
			{name: "not-yet", began: old},
			{name: "finished", began: old, done: true},
			{name: "end-fails", began: old, done: true},
			{name: "at-grace", began: now.Add(-10 * time.Minute), done: true},
		},
		endErr: map[string]error{"end-fails": endFailed},
		now:    now,
	}
	var finished []string
	n, err := FinishStale(context.Background(), x, now, 10*time.Minute,
		func(e staleEntry) time.Time { return e.began },
		func(e staleEntry) (bool, error) { finished = append(finished, e.name); return e.done, e.failure })
	if want := []string{"failing", "not-yet", "finished", "end-fails", "at-grace"}; !slices.Equal(finished, want) {
		t.Errorf("finished %v, want %v (the young entry's request may still run)", finished, want)
	}
	if want := []string{"finished", "at-grace"}; !slices.Equal(x.ended, want) || n != 2 {
		t.Errorf("ended %v (counted %d), want %v", x.ended, n, want)
	}
	if !errors.Is(err, finishFailed) || !errors.Is(err, endFailed) {
		t.Errorf("the pass answered %v, want both failures", err)
	}
}

// TestFinishStaleByTheEarlierClock: an entry is judged by the worker's
// clock or the pass's, whichever is behind: 30 s old by the one, 2.5
// minutes by the other, it is not touched with a grace of a minute,
// whichever clock runs ahead.
func TestFinishStaleByTheEarlierClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		now, pass  time.Time
		wantFinish bool
	}{
		{"the worker ahead", at.Add(2 * time.Minute), at, false},
		{"the node ahead", at, at.Add(2 * time.Minute), false},
		{"both past the grace", at.Add(2 * time.Minute), at.Add(time.Minute), true},
	} {
		x := &staleIndex{entries: []staleEntry{{name: "begun", began: at.Add(-30 * time.Second), done: true}}, now: tc.pass}
		finished := false
		n, err := FinishStale(context.Background(), x, tc.now, time.Minute,
			func(e staleEntry) time.Time { return e.began },
			func(e staleEntry) (bool, error) { finished = true; return e.done, e.failure })
		if finished != tc.wantFinish || err != nil || n != len(x.ended) {
			t.Errorf("%s: finished %v (ended %v, %v), want %v", tc.name, finished, x.ended, err, tc.wantFinish)
		}
	}
}
