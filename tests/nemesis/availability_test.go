package nemesis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"shelf/tests/testkit"
)

// One node of three hung or killed, and users don't notice
// (docs/design/node-faults.md). The
// availability verdict holds the nemesis's single-node faults to that,
// beside the correctness verdicts:
//   - every whole second of such a fault, from one attempt's timeout after
//     it began, finishes at least one request with an answer (not a 503,
//     not a timeout), and
//   - the rate of answered requests during each kind of fault, from one
//     attempt's timeout after it began, is at least availabilityFloor of
//     the rate in the healthy seconds just before those faults (the first
//     seconds' rate is shown beside it, not judged: see attemptTimeout).
//
// A killed node's window ends when its restart begins: a JVM starting on
// two cores beside two others takes most of the machine for tens of
// seconds, which says nothing about how the service routes around a dead
// node. Faults of the API processes and of two nodes at once (no quorum:
// 503s are the right answer there) are not single-node faults; their
// windows count as neither faulty nor healthy.

// attemptTimeout is the API processes' per-attempt timeout
// (SHELF_CASSANDRA_TIMEOUT's default). A statement already sent to a node
// when it hangs waits that long for it: the driver's health policy moves
// the next statements away within a fraction of a second, but it cannot
// call back one already sent, and a compare-and-set is never sent twice.
// With the nemesis's eight workers, every request in flight often has one
// such statement (measured: the first second after SIGSTOP empty in CI,
// the second one answered). And for about as long after a node stops
// answering, hung or killed, the coordinators still send it reads and
// wait the table's speculative_retry (99p: 150-320 ms a read on this
// machine under the nemesis) before they ask the third replica, until
// their dynamic snitch ranks it last (docs/design/node-faults.md, "Server
// side"): requests of several reads run three to four times as long. A
// killed node's window may be 3 s, so a rate over the whole window says
// more about its length than about the service: the rate is judged from
// here on, as the empty seconds are.
const attemptTimeout = 2 * time.Second

// availabilityFloor is the least share of the healthy rate a kind of
// single-node fault may keep (the floor for every operation kind;
// `make bench-degraded` holds the whole mix to 0.7 on a quieter machine).
const availabilityFloor = 0.5

// recoverySlack is how long after a fault ends its effects may last (held
// requests answered, connections made again): those seconds are not
// healthy.
const recoverySlack = 2 * time.Second

// singleNodeFaults are the faults the verdict judges.
var singleNodeFaults = []string{"hang-node", "kill-node"}

// faultWindow is one fault's span as the verdict judges it (start, end),
// and until when the fault lasted (over: a killed node's restart
// included).
type faultWindow struct {
	kind             string
	start, end, over time.Time
}

// rateSum adds answered requests and seconds of several spans.
type rateSum struct {
	answered int
	seconds  float64
}

func (r rateSum) rate() float64 {
	if r.seconds <= 0 {
		return math.NaN()
	}
	return float64(r.answered) / r.seconds
}

// checkAvailability judges the requests the workload sent between from
// and to against the single-node faults of the history, and returns the
// verdict and a table of rates per kind for the summary; an empty second,
// and the slowest of a kind whose rate falls short, is explained by the
// notes of the API processes and the nodes that overlap it
// (testkit.ReadAPINotes, testkit.ReadNodeNotes).
func checkAvailability(events []event, notes []testkit.APINote, from, to time.Time) (verdict, string) {
	v := verdict{Name: "availability: one node hung or killed"}
	var answered []time.Time
	var all []faultWindow
	var ops []event
	for _, e := range events {
		switch {
		case e.Kind == "fault":
			all = append(all, windowOf(e))
		case e.Kind == "op" && !e.End.Before(from) && !e.Start.After(to):
			ops = append(ops, e)
			if !e.Indeterminate() && !e.End.After(to) {
				answered = append(answered, e.End)
			}
		}
	}
	count := func(a, b time.Time) int {
		n := 0
		for _, t := range answered {
			if !t.Before(a) && t.Before(b) {
				n++
			}
		}
		return n
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-10s %7s %11s %11s %6s %13s\n", "fault", "windows", "answered/s", "healthy/s", "ratio", "first 2 s/s")
	for _, kind := range singleNodeFaults {
		var during, before, first rateSum
		var seen []string
		// slowest is the judged second with the fewest answers, explained
		// when the kind's rate fails.
		slowest, fewest := time.Time{}, -1
		windows := 0
		for _, w := range all {
			if w.kind != kind || !w.start.Before(to) || w.end.Before(from) {
				continue
			}
			start, end := maxTime(w.start, from), minTime(w.end, to)
			judged := minTime(maxTime(w.start.Add(attemptTimeout), from), end)
			windows++
			first.answered += count(start, judged)
			first.seconds += judged.Sub(start).Seconds()
			during.answered += count(judged, end)
			during.seconds += end.Sub(judged).Seconds()
			seen = append(seen, perSecond(start, end, count))
			for s := judged; !s.Add(time.Second).After(end); s = s.Add(time.Second) {
				v.Checked++
				n := count(s, s.Add(time.Second))
				if fewest < 0 || n < fewest {
					slowest, fewest = s, n
				}
				if n == 0 {
					v.Fail("%s %s: no request answered in the second from %s (%s; %s)", kind, w.start.Format("15:04:05.000"), s.Format("15:04:05.000"),
						inFlight(ops, s.Add(time.Second)), testkit.ExplainWait(notes, s, s.Add(time.Second)))
				}
			}
			if h0, h1, ok := healthyBefore(all, w.start, from); ok {
				before.answered += count(h0, h1)
				before.seconds += h1.Sub(h0).Seconds()
			}
		}
		ratio := during.rate() / before.rate()
		fmt.Fprintf(&table, "%-10s %7d %11.1f %11.1f %6.2f %13.1f\n", kind, windows, during.rate(), before.rate(), ratio, first.rate())
		if windows > 0 && before.seconds > 0 && during.seconds > 0 && !(ratio >= availabilityFloor) {
			why := ""
			if fewest >= 0 {
				why = fmt.Sprintf("; in the second from %s, %d answered (%s; %s)", slowest.Format("15:04:05.000"), fewest,
					inFlight(ops, slowest.Add(time.Second)), testkit.ExplainWait(notes, slowest, slowest.Add(time.Second)))
			}
			v.Fail("%s: %.1f answered requests a second during %d windows (from %v after each began), %.2f of the %.1f in the healthy seconds before them (floor %.2f); answered in each second: %s%s",
				kind, during.rate(), windows, attemptTimeout, ratio, before.rate(), availabilityFloor, strings.Join(seen, "; "), why)
		}
		v.Checked++
	}
	return v, table.String()
}

// perSecond is a window's answered requests in each of its seconds (the
// last one partial), after its start time.
func perSecond(start, end time.Time, count func(a, b time.Time) int) string {
	var n []string
	for s := start; s.Before(end); s = s.Add(time.Second) {
		n = append(n, fmt.Sprint(count(s, minTime(s.Add(time.Second), end))))
	}
	return start.Format("15:04:05.000") + " [" + strings.Join(n, " ") + "]"
}

// inFlight says what the requests running at t were waiting for, for a
// second without answers: how many, how long each ran in all, how they
// ended, and which operations.
func inFlight(ops []event, t time.Time) string {
	var waited []float64
	unknown := 0
	kinds := map[string]int{}
	for _, e := range ops {
		if e.Start.Before(t) && e.End.After(t) {
			waited = append(waited, e.End.Sub(e.Start).Seconds())
			kinds[e.Op]++
			if e.Indeterminate() {
				unknown++
			}
		}
	}
	if len(waited) == 0 {
		return "no request in flight"
	}
	slices.Sort(waited)
	names := slices.Sorted(maps.Keys(kinds))
	for i, k := range names {
		names[i] = fmt.Sprintf("%s %d", k, kinds[k])
	}
	return fmt.Sprintf("%d requests in flight, each ran %.1f-%.1f s, %d ended without an answer: %s",
		len(waited), waited[0], waited[len(waited)-1], unknown, strings.Join(names, ", "))
}

// windowOf is a fault's span; a killed node's ends where its restart
// begins (Args["restart"]).
func windowOf(e event) faultWindow {
	w := faultWindow{kind: e.Op, start: e.Start, end: e.End, over: e.End}
	if r, err := time.Parse(time.RFC3339Nano, e.Args["restart"]); err == nil && r.Before(w.end) {
		w.end = r
	}
	return w
}

// healthyBefore is the span of healthy seconds just before a fault that
// starts at start: from the end of the latest earlier fault (of any kind,
// its restart included) plus recoverySlack, and not before from.
func healthyBefore(all []faultWindow, start, from time.Time) (time.Time, time.Time, bool) {
	h0 := from
	for _, w := range all {
		if !w.start.Before(start) {
			continue
		}
		if end := w.over.Add(recoverySlack); end.After(h0) {
			h0 = end
		}
	}
	return h0, start, start.Sub(h0) >= time.Second
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
