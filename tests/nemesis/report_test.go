//go:build nemesis

package nemesis

import (
	"fmt"
	"html"
	"math"
	"os"
	"sort"
	"strings"
	"time"
)

// writeReport draws the run as one self-contained HTML page: requests per
// second by outcome and the p50 and p99 latency of each second, with the
// fault windows shaded, in the spirit of Jepsen's plots.
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
		return os.WriteFile(path, []byte("<p>no operations</p>"), 0o644)
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
	seconds := int(end.Sub(start).Seconds()) + 1
	type second struct {
		ok, rejected, unknown int
		latencies             []time.Duration
	}
	buckets := make([]second, seconds)
	for _, e := range ops {
		s := &buckets[int(e.End.Sub(start).Seconds())]
		switch {
		case e.Status >= 200 && e.Status < 300:
			s.ok++
		case e.indeterminate():
			s.unknown++
		default:
			s.rejected++
		}
		s.latencies = append(s.latencies, e.End.Sub(e.Start))
	}
	const width, height, pad = 1000.0, 220.0, 40.0
	x := func(sec float64) float64 { return pad + sec*(width-2*pad)/float64(seconds) }
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><meta charset=utf-8><title>%s</title>", html.EscapeString(title))
	fmt.Fprintf(&b, "<style>body{font:14px system-ui;margin:2em}svg{border:1px solid #ccc;margin:1em 0}</style><h1>%s</h1>", html.EscapeString(title))
	shade := func(h float64) {
		for _, f := range faults {
			a, z := x(f.Start.Sub(start).Seconds()), x(f.End.Sub(start).Seconds())
			color := map[string]string{"kill-node": "#f4cccc", "hang-node": "#fff2cc", "hang-majority": "#f9cb9c", "kill-api": "#d9d2e9"}[f.Op]
			fmt.Fprintf(&b, `<rect x="%.1f" y="0" width="%.1f" height="%.0f" fill="%s"><title>%s %s</title></rect>`,
				a, max(z-a, 1), h, color, f.Op, html.EscapeString(f.Args["node"]))
		}
	}
	// Throughput: a stacked bar per second.
	peak := 1
	for _, s := range buckets {
		peak = max(peak, s.ok+s.rejected+s.unknown)
	}
	y := func(n int) float64 { return height - pad/2 - float64(n)*(height-pad)/float64(peak) }
	fmt.Fprintf(&b, "<h2>requests per second (green ok, grey rejected, red no answer or 503; peak %d)</h2>", peak)
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f">`, width, height)
	shade(height)
	bw := (width - 2*pad) / float64(seconds)
	for i, s := range buckets {
		base := 0
		for _, part := range []struct {
			n     int
			color string
		}{{s.ok, "#6aa84f"}, {s.rejected, "#999"}, {s.unknown, "#cc0000"}} {
			if part.n > 0 {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`,
					x(float64(i)), y(base+part.n), max(bw-0.5, 0.5), y(base)-y(base+part.n), part.color)
			}
			base += part.n
		}
	}
	b.WriteString("</svg>")
	// Latency: p50 and p99 per second, on a log scale from 1 ms to 30 s.
	ly := func(d time.Duration) float64 {
		ms := max(float64(d)/float64(time.Millisecond), 1)
		return height - pad/2 - (height-pad)*min(math.Log10(ms)/math.Log10(30000), 1)
	}
	b.WriteString("<h2>latency per second: p50 (blue) and p99 (black), log scale 1 ms - 30 s</h2>")
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f">`, width, height)
	shade(height)
	for _, q := range []struct {
		p     float64
		color string
	}{{0.5, "#3d85c6"}, {0.99, "#000"}} {
		var pts []string
		for i, s := range buckets {
			if len(s.latencies) == 0 {
				continue
			}
			sort.Slice(s.latencies, func(a, b int) bool { return s.latencies[a] < s.latencies[b] })
			d := s.latencies[int(q.p*float64(len(s.latencies)-1))]
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i)+0.5), ly(d)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, q.color, strings.Join(pts, " "))
	}
	for _, ms := range []float64{1, 10, 100, 1000, 10000} {
		fmt.Fprintf(&b, `<text x="2" y="%.1f" font-size="10">%gms</text>`, ly(time.Duration(ms*float64(time.Millisecond))), ms)
	}
	b.WriteString("</svg><p>Shaded: node killed (red), node hung (yellow), two nodes hung (orange), API process killed (purple). Seconds since the first request.</p>")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
