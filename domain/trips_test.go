package domain

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestTripsCount(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		spans [][2]int // start, end in ms, in the order they end
		want  int
	}{
		{"none", nil, 0},
		{"one", [][2]int{{0, 5}}, 1},
		{"two in turn", [][2]int{{0, 5}, {6, 9}}, 2},
		{"two at once, then one", [][2]int{{1, 4}, {0, 5}, {6, 9}}, 2},
		{"two in turn beside a long one, then one", [][2]int{{0, 3}, {4, 8}, {0, 10}, {11, 12}}, 3},
		{"session beside account, slice beside check, index", [][2]int{{0, 2}, {0, 3}, {4, 6}, {4, 7}, {8, 9}}, 3},
		{"the slice's index read overlaps the check beside the slice", [][2]int{{0, 2}, {0, 5}, {3, 6}}, 2},
		{"a chain of three beside a long one", [][2]int{{0, 1}, {2, 3}, {4, 5}, {0, 6}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, trips := CountTrips(context.Background())
			for _, s := range tc.spans {
				RecordTrip(ctx, at(s[0]), at(s[1]))
			}
			RecordTrip(context.Background(), at(100), at(101)) // another request's: not counted
			if got := trips.Count(); got != tc.want {
				t.Fatalf("Count = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSmallCountIsHeapCount: the count without the heap, for the few
// statements of most requests, is the heap's on every arrangement of up to
// smallTrips spans, and costs no allocation.
func TestSmallCountIsHeapCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 38))
	for round := range 20_000 {
		spans := make([]span, rng.IntN(smallTrips+1))
		for i := range spans {
			start := rng.IntN(40)
			spans[i] = span{time.Unix(0, int64(start)), time.Unix(0, int64(start+rng.IntN(10)))}
		}
		slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
		if small, heaped := smallCount(spans), heapCount(spans); small != heaped {
			t.Fatalf("round %d, spans %v: small %d, heap %d", round, spans, small, heaped)
		}
	}
	ctx, trips := CountTrips(context.Background())
	for i := range 5 {
		RecordTrip(ctx, time.Unix(int64(i), 0), time.Unix(int64(i), 5))
	}
	if a := testing.AllocsPerRun(100, func() { trips.Count() }); a != 0 {
		t.Errorf("Count of five statements allocates %.0f times, want none", a)
	}
}

// TestTogetherCountsOnce: statements sent together count once however late
// a branch's goroutine sends its first; a branch's second statement, sent
// after its first answered, is a round trip more; a branch that forks again
// before sending anything forks when it was sent; statements after the
// branches are done count from when they start.
func TestTogetherCountsOnce(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context)
		want int
	}{
		{"the second branch sends after the first's answer", func(ctx context.Context) {
			b := together(ctx, 2, at(0))
			RecordTrip(b[1], at(1), at(5))
			RecordTrip(b[0], at(7), at(10))
		}, 1},
		{"a branch's second statement", func(ctx context.Context) {
			b := together(ctx, 2, at(0))
			RecordTrip(b[1], at(1), at(5))
			RecordTrip(b[0], at(7), at(10))
			RecordTrip(b[0], at(11), at(12))
		}, 2},
		{"a session read, then two together, then one", func(ctx context.Context) {
			RecordTrip(ctx, at(-10), at(-5))
			b := together(ctx, 2, at(0))
			RecordTrip(b[1], at(1), at(5))
			RecordTrip(b[0], at(7), at(10))
			RecordTrip(ctx, at(11), at(12))
		}, 3},
		{"a late branch forks before it sends", func(ctx context.Context) {
			b := together(ctx, 2, at(0))
			RecordTrip(b[1], at(1), at(5))
			inner := together(b[0], 2, at(6))
			RecordTrip(inner[0], at(7), at(9))
			RecordTrip(inner[1], at(10), at(12))
		}, 1},
		{"a branch's statement after its own branches'", func(ctx context.Context) {
			b := together(ctx, 2, at(0))
			RecordTrip(b[1], at(1), at(5))
			inner := together(b[0], 2, at(6))
			RecordTrip(inner[0], at(7), at(9))
			RecordTrip(inner[1], at(10), at(12))
			RecordTrip(b[0], at(13), at(14))
		}, 2},
		{"a branch forks after it sent", func(ctx context.Context) {
			b := together(ctx, 2, at(0))
			RecordTrip(b[0], at(1), at(2))
			inner := together(b[0], 2, at(3))
			RecordTrip(inner[0], at(4), at(6))
			RecordTrip(inner[1], at(7), at(8))
			RecordTrip(b[1], at(1), at(5))
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, trips := CountTrips(context.Background())
			tc.run(ctx)
			if got := trips.Count(); got != tc.want {
				t.Fatalf("Count = %d, want %d", got, tc.want)
			}
		})
	}
	if together(context.Background(), 2, at(0)) != nil {
		t.Error("together on a context that counts no trips: want nil")
	}
}
