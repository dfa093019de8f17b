package metrics

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
			ctx, trips := WithTrips(context.Background())
			for _, s := range tc.spans {
				addTrip(ctx, at(s[0]), at(s[1]))
			}
			addTrip(context.Background(), at(100), at(101)) // another request's: not counted
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
	ctx, trips := WithTrips(context.Background())
	for i := range 5 {
		addTrip(ctx, time.Unix(int64(i), 0), time.Unix(int64(i), 5))
	}
	if a := testing.AllocsPerRun(100, func() { trips.Count() }); a != 0 {
		t.Errorf("Count of five statements allocates %.0f times, want none", a)
	}
}
