package regions

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"shelf/tests/internal/checker"
)

// latencyOps are the operations the latency report measures: a user read
// and a library page (LOCAL_QUORUM reads: they should stay in the
// caller's data centre), beside a signup (SERIAL compare-and-sets: every
// data centre takes part).
var latencyOps = []string{"read-user", "library", "signup"}

// latencies reports, per operation and per data centre (the API process a
// request went to), the p50 and p99 of the answered (2xx) requests in the
// healthy seconds and in the seconds the link was slowed: a request counts
// as healthy when it overlaps no fault, as slowed when it lies within a
// slow-link fault.
func latencies(events []checker.Event, dcs int) string {
	var slow, faults []checker.Event
	for _, e := range events {
		if e.Kind == "fault" {
			faults = append(faults, e)
			if e.Op == "slow-link" {
				slow = append(slow, e)
			}
		}
	}
	type cell struct{ healthy, slowed []time.Duration }
	cells := map[string]*cell{}
	for _, e := range events {
		if e.Kind != "op" || !e.OK() || !slices.Contains(latencyOps, e.Op) {
			continue
		}
		key := fmt.Sprintf("%s/%d", e.Op, e.API)
		c := cells[key]
		if c == nil {
			c = &cell{}
			cells[key] = c
		}
		took := e.End.Sub(e.Start)
		switch {
		case !slices.ContainsFunc(faults, func(f checker.Event) bool { return overlaps(e, f) }):
			c.healthy = append(c.healthy, took)
		case slices.ContainsFunc(slow, func(f checker.Event) bool { return !e.Start.Before(f.Start) && !e.End.After(f.End) }):
			c.slowed = append(c.slowed, took)
		}
	}
	delay := ""
	if len(slow) > 0 {
		delay = " (" + slow[0].Args["delay"] + " each way)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-4s %24s   %s\n", "", "", "healthy", "link between the data centres slowed"+delay)
	fmt.Fprintf(&b, "%-10s %-4s %6s %8s %8s   %6s %8s %8s\n", "operation", "dc", "n", "p50 ms", "p99 ms", "n", "p50 ms", "p99 ms")
	for _, op := range latencyOps {
		for dc := range dcs {
			c := cells[fmt.Sprintf("%s/%d", op, dc)]
			if c == nil {
				c = &cell{}
			}
			fmt.Fprintf(&b, "%-10s dc%-2d %s   %s\n", op, dc+1, percentiles(c.healthy), percentiles(c.slowed))
		}
	}
	return b.String()
}

// overlaps reports whether request e ran at any time during fault f.
func overlaps(e, f checker.Event) bool { return e.Start.Before(f.End) && e.End.After(f.Start) }

// percentiles formats n, p50 and p99 of ds (nearest rank).
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return fmt.Sprintf("%6d %8s %8s", 0, "-", "-")
	}
	slices.Sort(ds)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[max(i, 0)]
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("%6d %8.1f %8.1f", len(ds), ms(rank(0.50)), ms(rank(0.99)))
}
