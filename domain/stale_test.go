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
	ended   []string
	endErr  map[string]error
}

func (x *staleIndex) End(_ context.Context, e staleEntry) error {
	if err := x.endErr[e.name]; err != nil {
		return err
	}
	x.ended = append(x.ended, e.name)
	return nil
}

func (x *staleIndex) InProgress(_ context.Context, fn func(staleEntry) error) error {
	for _, e := range x.entries {
		if err := fn(e); err != nil {
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
