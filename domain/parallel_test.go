package domain

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelRunsEachAtOnceAndWaitsForAll: every index runs once, all of
// them at the same time (each waits until all have started), and Parallel
// returns only once every one has ended.
func TestParallelRunsEachAtOnceAndWaitsForAll(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 5} {
		var started sync.WaitGroup
		started.Add(n)
		all := make(chan struct{})
		go func() { started.Wait(); close(all) }()
		runs := make([]atomic.Int32, n)
		var ended atomic.Int32
		Parallel(context.Background(), n, func(_ context.Context, i int) {
			runs[i].Add(1)
			started.Done()
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				t.Errorf("n=%d: index %d waited for the others to start: they ran one after another", n, i)
			}
			ended.Add(1)
		})
		if int(ended.Load()) != n {
			t.Errorf("n=%d: returned after %d of %d ended", n, ended.Load(), n)
		}
		for i := range runs {
			if runs[i].Load() != 1 {
				t.Errorf("n=%d: index %d ran %d times", n, i, runs[i].Load())
			}
		}
	}
}

type probeKey struct{}

// TestParallelSendsTogether: each index gets a context of the caller's (its
// values), and a request's round trips count statements sent on them as
// one even when one is sent after the other has answered (a goroutine
// started late); a statement after Parallel returns is a round trip more.
func TestParallelSendsTogether(t *testing.T) {
	t.Parallel()
	ctx, counted := CountTrips(context.WithValue(context.Background(), probeKey{}, "caller's"))
	first := make(chan struct{})
	Parallel(ctx, 2, func(ctx context.Context, i int) {
		if ctx.Value(probeKey{}) != "caller's" {
			t.Errorf("index %d: the caller's values are lost", i)
		}
		if i == 0 {
			<-first // sent only once the other has answered
		}
		start := time.Now()
		time.Sleep(time.Millisecond)
		RecordTrip(ctx, start, time.Now())
		if i == 1 {
			close(first)
		}
	})
	if got := counted.Count(); got != 1 {
		t.Fatalf("two statements sent together, one after the other's answer: %d round trips, want 1", got)
	}
	start := time.Now()
	RecordTrip(ctx, start, start.Add(time.Millisecond))
	if got := counted.Count(); got != 2 {
		t.Fatalf("and one after: %d round trips, want 2", got)
	}
}
