package degraded

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"shelf/tests/testkit"
)

// kinds are the operations of the mix, in the order of the tables.
var kinds = []string{"user-read", "library-page", "content-update", "signup"}

// reads are the kinds whose p99 the goals bound.
var reads = []string{"user-read", "library-page"}

// result is one request and its answer. Status 0 is no answer at all (the
// client's timeout, a refused connection).
type result struct {
	Kind       string    `json:"kind"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Status     int       `json:"status"`
	Want       int       `json:"want"`
	RetryAfter bool      `json:"retryAfter,omitempty"`
	// refused: the process refused the connection (stopped), so nothing
	// was sent; the balancer sends the request to the other one.
	refused bool
}

// outcome names what an answer was: "ok" when it did what was asked,
// else the kind of error the tables count.
func (r result) outcome() string {
	switch {
	case r.Status == r.Want:
		return "ok"
	case r.Status == 0:
		return "no answer"
	case r.Status == http.StatusServiceUnavailable:
		return "503"
	case r.Status >= 500:
		return "5xx"
	default:
		return "4xx"
	}
}

// window is a stretch of the run: healthy, a fault, a recovery.
type window struct {
	Name     string    `json:"name"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Fault    bool      `json:"fault"`
	Majority bool      `json:"majority,omitempty"` // two nodes hung: no quorum
	// Baseline: a healthy window played right before a fault, which the
	// windows after it, up to the next baseline, are measured against.
	Baseline bool `json:"baseline,omitempty"`
}

// kindSummary is one operation kind in one window.
type kindSummary struct {
	OK        int     `json:"ok"`
	OKPerSec  float64 `json:"okPerSec"`
	P99Millis float64 `json:"p99Millis"`
}

// summary is what the tables say of one window. Latencies are of every
// request that finished in the window, whatever its answer; throughput
// counts the answers that did what was asked.
type summary struct {
	Name     string                 `json:"name"`
	Baseline bool                   `json:"baseline,omitempty"`
	Seconds  float64                `json:"seconds"`
	Requests int                    `json:"requests"`
	OK       int                    `json:"ok"`
	OKPerSec float64                `json:"okPerSec"`
	P50      float64                `json:"p50Millis"`
	P99      float64                `json:"p99Millis"`
	ReadP99  float64                `json:"readP99Millis"`
	Errors   map[string]int         `json:"errors"`
	Kinds    map[string]kindSummary `json:"kinds"`
	// IdleSeconds are whole seconds of the window in which no request
	// finished with what it asked for.
	IdleSeconds int `json:"idleSeconds"`
	// NoRetryAfter counts 503s without a Retry-After header.
	NoRetryAfter int `json:"noRetryAfter"`
	// idle are the idle seconds' starts, to be explained from the api's
	// log.
	idle []time.Time
}

// share503 is the 503s' share of the window's requests.
func (s summary) share503() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Errors["503"]) / float64(s.Requests)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summarize sums up the requests that finished within w.
func summarize(w window, results []result) summary {
	s := summary{Name: w.Name, Baseline: w.Baseline, Seconds: w.To.Sub(w.From).Seconds(), Errors: map[string]int{}, Kinds: map[string]kindSummary{}}
	var all, readLat []time.Duration
	byKind := map[string][]time.Duration{}
	okAt := make([]bool, int(s.Seconds))
	for _, r := range results {
		if r.End.Before(w.From) || !r.End.Before(w.To) {
			continue
		}
		d := r.End.Sub(r.Start)
		s.Requests++
		all = append(all, d)
		byKind[r.Kind] = append(byKind[r.Kind], d)
		if slices.Contains(reads, r.Kind) {
			readLat = append(readLat, d)
		}
		k := s.Kinds[r.Kind]
		switch o := r.outcome(); o {
		case "ok":
			s.OK++
			k.OK++
			if i := int(r.End.Sub(w.From).Seconds()); i < len(okAt) {
				okAt[i] = true
			}
		default:
			s.Errors[o]++
			if o == "503" && !r.RetryAfter {
				s.NoRetryAfter++
			}
		}
		s.Kinds[r.Kind] = k
	}
	for i, ok := range okAt {
		if !ok {
			s.IdleSeconds++
			s.idle = append(s.idle, w.From.Add(time.Duration(i)*time.Second))
		}
	}
	if s.Seconds > 0 {
		s.OKPerSec = float64(s.OK) / s.Seconds
	}
	s.P50 = millis(testkit.Quantile(all, 0.5))
	s.P99 = millis(testkit.Quantile(all, 0.99))
	s.ReadP99 = millis(testkit.Quantile(readLat, 0.99))
	for kind, k := range s.Kinds {
		if s.Seconds > 0 {
			k.OKPerSec = float64(k.OK) / s.Seconds
		}
		k.P99Millis = millis(testkit.Quantile(byKind[kind], 0.99))
		s.Kinds[kind] = k
	}
	return s
}

// perSecond is one second of the run, for the JSON.
type perSecond struct {
	Second int            `json:"second"`
	OK     int            `json:"ok"`
	P50    float64        `json:"p50Millis"`
	P99    float64        `json:"p99Millis"`
	Errors map[string]int `json:"errors,omitempty"`
}

// timeline buckets the results by the second they finished in, since
// start: the JSON's series and the report's drawing.
func timeline(start time.Time, results []result) ([]perSecond, []testkit.Second) {
	n := 0
	for _, r := range results {
		n = max(n, int(r.End.Sub(start).Seconds())+1)
	}
	series, drawn := make([]perSecond, n), make([]testkit.Second, n)
	for _, r := range results {
		i := int(r.End.Sub(start).Seconds())
		if i < 0 {
			continue
		}
		switch o := r.outcome(); o {
		case "ok":
			series[i].OK++
			drawn[i].OK++
		case "4xx":
			drawn[i].Rejected++
		default:
			drawn[i].Failed++
		}
		if o := r.outcome(); o != "ok" {
			if series[i].Errors == nil {
				series[i].Errors = map[string]int{}
			}
			series[i].Errors[o]++
		}
		drawn[i].Latencies = append(drawn[i].Latencies, r.End.Sub(r.Start))
	}
	for i := range series {
		series[i].Second = i
		series[i].P50 = millis(testkit.Quantile(drawn[i].Latencies, 0.5))
		series[i].P99 = millis(testkit.Quantile(drawn[i].Latencies, 0.99))
	}
	return series, drawn
}

// backAfter is how long after the heal the service answered at least
// half the healthy rate again in a whole second (counted from the heal to
// that second's end); -1 when it never did within the series.
func backAfter(start, heal time.Time, series []perSecond, healthyPerSec float64) float64 {
	for _, s := range series {
		end := start.Add(time.Duration(s.Second+1) * time.Second)
		if !end.After(heal) {
			continue
		}
		if float64(s.OK) >= healthyPerSec/2 {
			return end.Sub(heal).Seconds()
		}
	}
	return -1
}

// ratio formats a/b, or "-" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// baselines gives each window the healthy one it is measured against: the
// last baseline at or before it (the first window for those before any);
// a baseline itself is measured against the run's first, which shows how
// far the machine drifted. A healthy window right before each fault keeps
// a machine whose load moves over the run's minutes out of the fault's
// ratio: on 2026-12-07 the API processes' roll read 0.77× of a healthy
// window played nine minutes before it.
func baselines(sums []summary) []summary {
	out := make([]summary, len(sums))
	if len(sums) == 0 {
		return out
	}
	base := sums[0]
	for i, s := range sums {
		if s.Baseline {
			out[i] = sums[0]
			base = s
			continue
		}
		out[i] = base
	}
	return out
}

// table is the run's markdown table: each window against its baseline
// (baselines), then each operation kind's throughput ratio.
func table(sums []summary) string {
	if len(sums) == 0 {
		return ""
	}
	bases := baselines(sums)
	var b strings.Builder
	b.WriteString("| window | ops/s | ratio | p50 ms | p99 ms | read p99 ms | read p99 ratio | idle s | 503 share | other errors |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for i, s := range sums {
		h := bases[i]
		var others []string
		for _, o := range []string{"5xx", "no answer", "4xx"} {
			if n := s.Errors[o]; n > 0 {
				others = append(others, fmt.Sprintf("%d %s", n, o))
			}
		}
		if s.NoRetryAfter > 0 {
			others = append(others, fmt.Sprintf("%d 503 without Retry-After", s.NoRetryAfter))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.0f | %.0f | %.0f | %s | %d | %.2f %% | %s |\n",
			s.Name, s.OKPerSec, ratio(s.OKPerSec, h.OKPerSec), s.P50, s.P99, s.ReadP99, ratio(s.ReadP99, h.ReadP99),
			s.IdleSeconds, 100*s.share503(), strings.Join(others, ", "))
	}
	b.WriteString("\n| window |")
	for _, k := range kinds {
		b.WriteString(" " + k + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(kinds)) + "\n")
	for i, s := range sums {
		h := bases[i]
		fmt.Fprintf(&b, "| %s |", s.Name)
		for _, k := range kinds {
			fmt.Fprintf(&b, " %.0f/s (%s) |", s.Kinds[k].OKPerSec, ratio(s.Kinds[k].OKPerSec, h.Kinds[k].OKPerSec))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// goals judges the windows against the availability goals
// (docs/design/node-faults.md), each against its baseline, one line each
// with its bar.
func goals(sums []summary, back float64) []string {
	if len(sums) == 0 {
		return nil
	}
	bases := baselines(sums)
	verdict := func(ok bool) string { return map[bool]string{true: "PASS", false: "FAIL"}[ok] }
	var lines []string
	for i, s := range sums {
		h := bases[i]
		switch s.Name {
		case "one node hung", "one node slow":
			worst, worstKind := 1e9, ""
			for _, k := range kinds {
				if h.Kinds[k].OKPerSec > 0 {
					if r := s.Kinds[k].OKPerSec / h.Kinds[k].OKPerSec; r < worst {
						worst, worstKind = r, k
					}
				}
			}
			ok := s.OKPerSec >= 0.7*h.OKPerSec && worst >= 0.5 && s.ReadP99 <= 2*h.ReadP99 && s.IdleSeconds == 0 &&
				s.share503() <= 0.005 && s.Errors["5xx"] == 0 && s.Errors["no answer"] == 0
			lines = append(lines, fmt.Sprintf("%s %s: throughput %s (≥ 0.7×), worst kind %s %.2f× (≥ 0.5×), read p99 %s (≤ 2×), %d idle s (0), 503s %.2f %% (≤ 0.5 %%), %d other 5xx, %d no answer",
				verdict(ok), s.Name, ratio(s.OKPerSec, h.OKPerSec), worstKind, worst, ratio(s.ReadP99, h.ReadP99), s.IdleSeconds, 100*s.share503(), s.Errors["5xx"], s.Errors["no answer"]))
		case "one node killed":
			errs := s.Requests - s.OK
			ok := s.OKPerSec >= 0.8*h.OKPerSec && errs == 0
			lines = append(lines, fmt.Sprintf("%s %s: throughput %s (≥ 0.8×), %d errors (0)", verdict(ok), s.Name, ratio(s.OKPerSec, h.OKPerSec), errs))
		case "rolling restart", "api rolling restart":
			ok := s.Errors["5xx"] == 0 && s.Errors["no answer"] == 0 && s.share503() <= 0.001 && s.IdleSeconds == 0 &&
				s.OKPerSec >= 0.8*h.OKPerSec
			lines = append(lines, fmt.Sprintf("%s %s: throughput %s (≥ 0.8×), 503s %.2f %% (≤ 0.1 %%), %d idle s (0), %d other 5xx (0), %d no answer (0)",
				verdict(ok), s.Name, ratio(s.OKPerSec, h.OKPerSec), 100*s.share503(), s.IdleSeconds, s.Errors["5xx"], s.Errors["no answer"]))
		case "two nodes hung":
			ok := s.Errors["5xx"] == 0 && s.NoRetryAfter == 0 && back >= 0 && back <= 10
			lines = append(lines, fmt.Sprintf("%s %s: %d 503s, %d other 5xx (0), %d 503s without Retry-After (0), half the healthy rate back %.1f s after the heal (≤ 10 s)",
				verdict(ok), s.Name, s.Errors["503"], s.Errors["5xx"], s.NoRetryAfter, back))
		}
	}
	return lines
}

// pace is one client's share of DEGRADED_RATE: its turns come every
// clients/rate seconds, the clients offset from each other.
type pace struct {
	every time.Duration // 0: no waiting
	next  time.Time
}

// newPace is the pace of client (0 to clients-1) of clients sending rate
// requests a second in all (0: no pace).
func newPace(rate float64, client, clients int) *pace {
	if rate <= 0 {
		return &pace{}
	}
	every := time.Duration(float64(clients) / rate * float64(time.Second))
	return &pace{every: every, next: time.Now().Add(every * time.Duration(client) / time.Duration(clients))}
}

// wait waits for the client's next turn (false: ctx ended first). A
// client behind its turns goes at once and its turns start over from
// now: requests a stall held back are not sent later in a burst.
func (p *pace) wait(ctx context.Context) bool {
	d := p.turn(time.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-time.After(d): // collected once it fires or is dropped (Go 1.23)
		return true
	case <-ctx.Done():
		return false
	}
}

// turn is how long from now the client's next turn is, and books the one
// after it.
func (p *pace) turn(now time.Time) time.Duration {
	if p.every == 0 {
		return 0
	}
	if d := p.next.Sub(now); d > 0 {
		p.next = p.next.Add(p.every)
		return d
	}
	p.next = now.Add(p.every)
	return 0
}
