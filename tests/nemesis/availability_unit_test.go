package nemesis

import (
	"strings"
	"testing"
	"time"
)

// answers is a history of answered requests (status 200) ending every
// step from a to b, plus 503s at the same times when unavailable.
func answers(a, b time.Time, step time.Duration, status int) []event {
	var out []event
	for t := a; t.Before(b); t = t.Add(step) {
		out = append(out, event{Kind: "op", Op: "read-user", Start: t.Add(-10 * time.Millisecond), End: t, Status: status})
	}
	return out
}

func TestAvailabilityVerdict(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	hang := event{Kind: "fault", Op: "hang-node", Start: at(10), End: at(16)}
	kill := event{Kind: "fault", Op: "kill-node", Start: at(30), End: at(70),
		Args: map[string]string{"restart": at(36).Format(time.RFC3339Nano)}}
	majority := event{Kind: "fault", Op: "hang-majority", Start: at(80), End: at(90)}

	for _, c := range []struct {
		name   string
		events []event
		fails  []string // parts of the violations, in order; none: PASS
		table  string   // a line of the rates' table, when it matters
	}{{
		name: "steady service through every fault",
		events: join(answers(at(0), at(100), 50*time.Millisecond, 200),
			[]event{hang, kill, majority}),
	}, {
		name: "a hang that stops service for a second",
		events: join(answers(at(0), at(12), 50*time.Millisecond, 200), answers(at(13.5), at(100), 50*time.Millisecond, 200),
			[]event{hang}),
		fails: []string{"hang-node 04:00:10.000: no request answered in the second from 04:00:12.000"},
	}, {
		name: "503s are not answers",
		events: join(answers(at(0), at(10), 50*time.Millisecond, 200), answers(at(10), at(16), 50*time.Millisecond, 503),
			answers(at(16), at(20), 50*time.Millisecond, 200), []event{hang}),
		fails: []string{"no request answered in the second from 04:00:12.000 (", "from 04:00:13.000", "from 04:00:14.000",
			"from 04:00:15.000", "hang-node: 0.0 answered requests a second"},
	}, {
		name: "the attempts in flight when a node hangs wait out their timeout",
		events: join(answers(at(0), at(10), 50*time.Millisecond, 200), answers(at(11.9), at(100), 25*time.Millisecond, 200),
			[]event{hang}),
	}, {
		name: "a hang at a third of the healthy rate",
		events: join(answers(at(0), at(10), 50*time.Millisecond, 200), answers(at(10), at(16), 150*time.Millisecond, 200),
			answers(at(16), at(20), 50*time.Millisecond, 200), []event{hang}),
		fails: []string{"hang-node: 6.5 answered requests a second during 1 windows (from 2s after each began), 0.33 of the 20.0 in the healthy seconds before them" +
			" (floor 0.50); answered in each second: 04:00:10.000 [7 7 6 7 7 6]; in the second from 04:00:12.000, 6 answered ("},
	}, {
		name: "the first seconds of a kill are shown, not judged: coordinators still wait for the node",
		events: join(answers(at(0), at(30), 50*time.Millisecond, 200), answers(at(30), at(32), 250*time.Millisecond, 200),
			answers(at(32), at(100), 50*time.Millisecond, 200), []event{kill}),
		table: "kill-node        1        20.0        20.0   1.00           4.0",
	}, {
		name: "a killed node's restart and the majority hang are not judged, nor healthy",
		events: join(answers(at(0), at(36), 50*time.Millisecond, 200), answers(at(36), at(95), time.Second, 200),
			answers(at(95), at(100), 50*time.Millisecond, 200), []event{kill, majority}),
	}} {
		t.Run(c.name, func(t *testing.T) {
			v, table := checkAvailability(c.events, nil, at(0), at(100))
			if len(v.Violations) != len(c.fails) {
				t.Fatalf("%d violations, want %d:\n%s\n%s", len(v.Violations), len(c.fails), v, table)
			}
			for i, want := range c.fails {
				if !strings.Contains(v.Violations[i], want) {
					t.Errorf("violation %d is %q, want it to say %q", i, v.Violations[i], want)
				}
			}
			if !strings.Contains(table, c.table) {
				t.Errorf("the table has no line %q:\n%s", c.table, table)
			}
			if !strings.Contains(table, "hang-node") || !strings.Contains(table, "kill-node") {
				t.Errorf("the table names every kind:\n%s", table)
			}
		})
	}
}

func join(parts ...[]event) []event {
	var out []event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
