//go:build nemesis

package nemesis

import (
	"strings"

	"shelf/tests/testkit"
)

// faultColors shade each kind of fault in the report.
var faultColors = map[string]string{"kill-node": "#f4cccc", "hang-node": "#fff2cc", "hang-majority": "#f9cb9c", "kill-api": "#d9d2e9"}

// writeReport draws the run as one self-contained HTML page
// (testkit.WriteTimeline): requests per second by outcome and the p50 and
// p99 latency of each second, with the fault windows shaded.
func writeReport(path, title string, events []event) error {
	var ops []event
	var faults []event
	for _, e := range events {
		switch {
		case e.Kind == "fault":
			faults = append(faults, e)
		case !strings.HasPrefix(e.Op, "check-") && e.Op != "setup":
			ops = append(ops, e)
		}
	}
	if len(ops) == 0 {
		return testkit.WriteTimeline(path, title, nil, nil, "")
	}
	start, end := ops[0].Start, ops[0].End
	for _, e := range ops {
		if e.Start.Before(start) {
			start = e.Start
		}
		if e.End.After(end) {
			end = e.End
		}
	}
	seconds := make([]testkit.Second, int(end.Sub(start).Seconds())+1)
	for _, e := range ops {
		s := &seconds[int(e.End.Sub(start).Seconds())]
		switch {
		case e.Status >= 200 && e.Status < 300:
			s.OK++
		case e.Indeterminate():
			s.Failed++
		default:
			s.Rejected++
		}
		s.Latencies = append(s.Latencies, e.End.Sub(e.Start))
	}
	var shades []testkit.Shade
	for _, f := range faults {
		shades = append(shades, testkit.Shade{From: f.Start.Sub(start).Seconds(), To: f.End.Sub(start).Seconds(),
			Label: f.Op + " " + f.Args["node"], Color: faultColors[f.Op]})
	}
	return testkit.WriteTimeline(path, title, seconds, shades,
		"Shaded: node killed (red), node hung (yellow), two nodes hung (orange), API process killed (purple).")
}
