package domain

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGateOneAtATimePerKey sends many goroutines through a few keys: no
// two are ever inside for one key together, every one gets through, and
// the gate forgets every key once all have left.
func TestGateOneAtATimePerKey(t *testing.T) {
	var g Gate
	keys := []string{"a", "b", "c"}
	inside := make([]atomic.Int32, len(keys))
	var through atomic.Int32
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			k := i % len(keys)
			leave, err := g.Enter(context.Background(), keys[k], time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if n := inside[k].Add(1); n != 1 {
				t.Errorf("key %s: %d callers inside at once", keys[k], n)
			}
			time.Sleep(50 * time.Microsecond)
			inside[k].Add(-1)
			through.Add(1)
			leave()
		})
	}
	wg.Wait()
	if through.Load() != 300 {
		t.Fatalf("%d of 300 got through", through.Load())
	}
	if n := g.waiting(); n != 0 {
		t.Fatalf("the gate still holds %d keys", n)
	}
}

// TestGateWaitEndsWithContextOrPatience: a caller waiting behind a holder
// gives up when its context ends, and goes on without the turn when its
// patience runs out; neither keeps a turn, and the key is free for the
// next once the holder leaves. Other keys never wait, nor does patience 0.
func TestGateWaitEndsWithContextOrPatience(t *testing.T) {
	var g Gate
	leave, err := g.Enter(context.Background(), "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Enter(context.Background(), "other", time.Millisecond)
	if err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	other()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Enter(ctx, "k", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting behind a holder ended with %v, want the deadline", err)
	}
	began := time.Now()
	impatient, err := g.Enter(context.Background(), "k", 20*time.Millisecond)
	if err != nil || time.Since(began) < 20*time.Millisecond {
		t.Fatalf("out of patience: %v after %v, want no error after 20ms", err, time.Since(began))
	}
	impatient()
	free, err := g.Enter(context.Background(), "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	free()
	leave()
	next, err := g.Enter(context.Background(), "k", time.Millisecond)
	if err != nil {
		t.Fatalf("the key was not free after its holder left: %v", err)
	}
	next()
	if n := g.waiting(); n != 0 {
		t.Fatalf("the gate still holds %d keys", n)
	}
}

// TestGateWaitsWhileTheQueueMoves: a caller behind a queue whose turns
// each take less than its patience, but together far more, waits for its
// own turn (the last, as it came last) rather than going ahead. Its
// patience is 25 turns long: under -race on two busy cores a turn may
// stall for a good part of a second.
func TestGateWaitsWhileTheQueueMoves(t *testing.T) {
	var g Gate
	const patience, step, ahead = time.Second, 40 * time.Millisecond, 30
	first, err := g.Enter(context.Background(), "k", patience)
	if err != nil {
		t.Fatal(err)
	}
	var inside atomic.Int32
	var wg sync.WaitGroup
	for range ahead {
		wg.Go(func() {
			leave, err := g.Enter(context.Background(), "k", time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			inside.Add(1)
			time.Sleep(step)
			inside.Add(-1)
			leave()
		})
	}
	time.Sleep(5 * time.Millisecond)
	first()
	time.Sleep(step / 2)
	began := time.Now()
	last, err := g.Enter(context.Background(), "k", patience)
	if err != nil {
		t.Fatal(err)
	}
	if n := inside.Load(); n != 0 {
		t.Fatalf("went ahead after %v with %d inside: the queue moved every %v, within its patience %v", time.Since(began), n, step, patience)
	}
	last()
	wg.Wait()
}
