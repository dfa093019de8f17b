package regions

import (
	"strings"
	"testing"
	"time"

	"shelf/tests/internal/checker"
)

// TestLatencies: a request counts as healthy when it overlaps no fault, as
// slowed when it lies within a slow-link window; requests that straddle a
// window's edge, run during a hang or got no 2xx count in neither; each
// data centre gets its own line.
func TestLatencies(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	op := func(name string, api, from int, took time.Duration, status int) checker.Event {
		return checker.Event{Kind: "op", Op: name, API: api, Start: s(from), End: s(from).Add(took), Status: status}
	}
	events := []checker.Event{
		{Kind: "fault", Op: "slow-link", Start: s(10), End: s(20), Args: map[string]string{"delay": "50ms"}},
		{Kind: "fault", Op: "hang-dc", Start: s(30), End: s(35)},
		op("read-user", 0, 1, 2*time.Millisecond, 200),
		op("read-user", 0, 2, 4*time.Millisecond, 200),
		op("read-user", 0, 12, 30*time.Millisecond, 200),
		op("read-user", 0, 9, 2*time.Second, 200),         // straddles the slow window's start
		op("read-user", 0, 31, 900*time.Millisecond, 200), // during the hang
		op("read-user", 0, 40, 3*time.Second, 503),        // no answer
		op("read-user", 1, 3, 8*time.Millisecond, 200),
		op("signup", 1, 14, 400*time.Millisecond, 201),
		op("signup", 1, 15, 600*time.Millisecond, 201),
	}
	got := latencies(events, 2)
	for _, want := range []string{
		"(50ms each way)",
		"read-user  dc1       2      2.0      4.0        1     30.0     30.0",
		"read-user  dc2       1      8.0      8.0        0        -        -",
		"library    dc1       0        -        -        0        -        -",
		"signup     dc2       0        -        -        2    400.0    600.0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
}
