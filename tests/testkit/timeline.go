package testkit

import (
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Second is what finished in one second of a run drawn by WriteTimeline:
// answers that did what was asked (OK), answers that refused (Rejected),
// and answers that say nothing of the outcome (Failed: no answer, 503,
// 5xx), with every request's latency.
type Second struct {
	OK, Rejected, Failed int
	Latencies            []time.Duration
}

// Shade is a stretch of a run drawn shaded (a fault), in seconds since
// the run's start.
type Shade struct {
	From, To float64
	Label    string
	Color    string // CSS
}

// WriteTimeline draws a run (the nemesis, bench-degraded) as one
// self-contained HTML page: requests per second by outcome and the p50 and
// p99 latency of each second, with the faults shaded, in the spirit of
// Jepsen's plots. legend explains the shades.
func WriteTimeline(path, title string, seconds []Second, shades []Shade, legend string) error {
	if len(seconds) == 0 {
		return os.WriteFile(path, []byte("<p>no operations</p>"), 0o644)
	}
	const width, height, pad = 1000.0, 220.0, 40.0
	x := func(sec float64) float64 { return pad + sec*(width-2*pad)/float64(len(seconds)) }
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><meta charset=utf-8><title>%s</title>", html.EscapeString(title))
	fmt.Fprintf(&b, "<style>body{font:14px system-ui;margin:2em}svg{border:1px solid #ccc;margin:1em 0}</style><h1>%s</h1>", html.EscapeString(title))
	shade := func(h float64) {
		for _, s := range shades {
			a, z := x(s.From), x(s.To)
			fmt.Fprintf(&b, `<rect x="%.1f" y="0" width="%.1f" height="%.0f" fill="%s"><title>%s</title></rect>`,
				a, max(z-a, 1), h, s.Color, html.EscapeString(s.Label))
		}
	}
	// Throughput: a stacked bar per second.
	peak := 1
	for _, s := range seconds {
		peak = max(peak, s.OK+s.Rejected+s.Failed)
	}
	y := func(n int) float64 { return height - pad/2 - float64(n)*(height-pad)/float64(peak) }
	fmt.Fprintf(&b, "<h2>requests per second (green ok, grey rejected, red no answer, 503 or 5xx; peak %d)</h2>", peak)
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f">`, width, height)
	shade(height)
	bw := (width - 2*pad) / float64(len(seconds))
	for i, s := range seconds {
		base := 0
		for _, part := range []struct {
			n     int
			color string
		}{{s.OK, "#6aa84f"}, {s.Rejected, "#999"}, {s.Failed, "#cc0000"}} {
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
		for i, s := range seconds {
			if len(s.Latencies) == 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i)+0.5), ly(Quantile(s.Latencies, q.p))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, q.color, strings.Join(pts, " "))
	}
	for _, ms := range []float64{1, 10, 100, 1000, 10000} {
		fmt.Fprintf(&b, `<text x="2" y="%.1f" font-size="10">%gms</text>`, ly(time.Duration(ms*float64(time.Millisecond))), ms)
	}
	fmt.Fprintf(&b, "</svg><p>%s Seconds since the first request.</p>", html.EscapeString(legend))
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Quantile is the q-quantile (0..1) of ds by the nearest rank below; it
// sorts ds in place. Zero when ds is empty.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1))]
}
