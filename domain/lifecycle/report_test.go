package lifecycle

import (
	"testing"
	"time"
)

// TestOldestIsOfWhatThePassLeft: a pass's Oldest (shelf_jobs_oldest_seconds)
// is the oldest operation it left under way (held, failed or not yet
// begun), not one it finished or whose entry it removed; a sum of passes
// keeps the oldest of both.
func TestOldestIsOfWhatThePassLeft(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	var r Report
	for i, outcome := range []func(){func() { r.Finished++ }, func() { r.Stale++ }, func() { r.Held++ }, func() {}, func() { r.Failed++ }} {
		done := r.found(t0.Add(time.Duration(i) * time.Hour))
		outcome()
		done()
	}
	if want := t0.Add(2 * time.Hour); !r.Oldest.Equal(want) || r.Found != 5 {
		t.Fatalf("oldest %v of %d found, want %v: the held one, the finished and removed ones left out", r.Oldest, r.Found, want)
	}
	var none Report
	done := none.found(t0)
	none.Finished++
	done()
	if !none.Oldest.IsZero() {
		t.Fatalf("a pass that finished all it found reports an oldest: %v", none.Oldest)
	}
	if sum := none.add(r); !sum.Oldest.Equal(r.Oldest) {
		t.Fatalf("the sum's oldest is %v, want %v", sum.Oldest, r.Oldest)
	}
	if sum := r.add(Report{Oldest: t0}); !sum.Oldest.Equal(t0) {
		t.Fatalf("the sum's oldest is %v, want the older %v", sum.Oldest, t0)
	}
}
