package domain

import (
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
		Parallel(n, func(i int) {
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
