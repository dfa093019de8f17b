package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// side is one side's figures for an operation.
type side struct {
	OpsPerSec float64 `json:"opsPerSec"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
	N         int     `json:"n"`
	// CPUMicros is the server process's CPU time per request (api, lean).
	CPUMicros float64 `json:"cpuMicrosPerRequest,omitempty"`
	// DBCPUMicros is the Cassandra node's CPU time per request, when the
	// node runs on this machine (every side; whatever else uses the node
	// meanwhile counts too, alike for the alternating sides).
	DBCPUMicros float64 `json:"cassandraCpuMicrosPerRequest,omitempty"`
}

// sideOf sums up the latencies of n operations done in elapsed.
func sideOf(lat []time.Duration, elapsed time.Duration) side {
	if len(lat) == 0 || elapsed <= 0 {
		return side{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) float64 {
		return float64(s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)].Microseconds()) / 1000
	}
	return side{OpsPerSec: float64(len(s)) / elapsed.Seconds(), P50Ms: at(0.50), P99Ms: at(0.99), N: len(s)}
}

// row is one operation of the report.
type row struct {
	Name  string `json:"name"`
	Read  bool   `json:"read"`
	Shelf side   `json:"shelf"`
	Lean  side   `json:"lean"`
	Raw   side   `json:"raw"`
	// ShelfLean and ShelfRaw are throughput ratios (shelf ops/s over theirs).
	ShelfLean float64 `json:"shelfOverLean"`
	ShelfRaw  float64 `json:"shelfOverRaw"`
	// ShelfLeanByRound is shelf over lean in each round alone (the sides
	// run one after the other in a round): how far the same two servers
	// move from round to round on this machine. The verdict is ShelfLean's.
	ShelfLeanByRound []float64 `json:"shelfOverLeanByRound,omitempty"`
	// RoundTrips is the api's mean sequential round trips per request,
	// Model what docs/design/cost-model.md says.
	RoundTrips float64 `json:"roundTrips"`
	Model      int     `json:"model"`
}

// fanoutRow is one fan-out size.
type fanoutRow struct {
	Members int `json:"members"`
	// Member libraries updated per second: by the api's whole request
	// (checks, change, fan-out), by its fan-out alone, and by gocql writing
	// the same rows with the same concurrency.
	ShelfRequest float64 `json:"shelfRequestLibrariesPerSec"`
	ShelfFanout  float64 `json:"shelfFanoutLibrariesPerSec"`
	Raw          float64 `json:"rawLibrariesPerSec"`
	Ratio        float64 `json:"fanoutOverRaw"`
	Updates      int     `json:"updates"`
}

// itemsReadRow prices the checks of a page whose rows are not lean: raw
// pages with them (lean.Store.Checked: the index read beside the read of
// the items) and without them (the seed's one slice), side by side.
type itemsReadRow struct {
	Name    string `json:"name"`
	With    side   `json:"with"`
	Without side   `json:"without"`
	// Ratio is the throughput with the read over the throughput without.
	Ratio float64 `json:"withOverWithout"`
	// Background is the node's CPU at rest (cores), measured in rounds of
	// neither side and taken off both sides' Cassandra CPU.
	Background float64 `json:"cassandraCoresAtRest"`
}

// hashRow is the password hash at the api's default (production) cost.
type hashRow struct {
	Params     string  `json:"params"`
	OneCoreMs  float64 `json:"oneHashMs"`
	PerSecond  float64 `json:"hashesPerSec"`
	Concurrent int     `json:"concurrent"`
}

// report is a whole `make bench` run.
type report struct {
	Started     time.Time      `json:"started"`
	Machine     string         `json:"machine"`
	Clients     int            `json:"clients"`
	Round       string         `json:"roundDuration"`
	Rounds      int            `json:"rounds"`
	Rows        []row          `json:"operations"`
	Fanout      []fanoutRow    `json:"fanout"`
	ItemsRead   []itemsReadRow `json:"itemsRead,omitempty"`
	Hash        hashRow        `json:"passwordHash"`
	APIPeakMB   float64        `json:"apiPeakRssMB"`
	LeanPeakMB  float64        `json:"leanPeakRssMB"`
	ReadsBelow  []string       `json:"readsBelowGoal,omitempty"`
	FanoutBelow []int          `json:"fanoutBelowGoal,omitempty"`
}

// goal is the benchmark's bar: shelf at least 0.9 of lean on reads, of raw
// batches on fan-out.
const goal = 0.9

// judge lists what misses the goal.
func (r *report) judge() {
	r.ReadsBelow, r.FanoutBelow = nil, nil
	for _, x := range r.Rows {
		if x.Read && x.ShelfLean < goal {
			r.ReadsBelow = append(r.ReadsBelow, x.Name)
		}
	}
	for _, x := range r.Fanout {
		if x.Ratio < goal {
			r.FanoutBelow = append(r.FanoutBelow, x.Members)
		}
	}
}

// table writes the report as the Markdown tables docs/benchmarks.md shows.
func (r *report) table(w io.Writer) {
	fmt.Fprintf(w, "%d clients, %d rounds of %s per side, sides alternating; %s\n\n", r.Clients, r.Rounds, r.Round, r.Machine)
	fmt.Fprintln(w, "| operation | shelf ops/s | lean ops/s | raw ops/s | shelf/lean (rounds' range) | shelf/raw | shelf p50 / p99 ms | lean p50 / p99 ms | CPU µs/request shelf / lean | Cassandra CPU µs/request shelf / lean / raw | round trips (model) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, x := range r.Rows {
		mark := ""
		if x.Read && x.ShelfLean < goal {
			mark = " ✗"
		}
		db := "-" // the node is elsewhere
		if x.Shelf.DBCPUMicros > 0 {
			db = fmt.Sprintf("%.0f / %.0f / %.0f", x.Shelf.DBCPUMicros, x.Lean.DBCPUMicros, x.Raw.DBCPUMicros)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f%s%s | %.2f | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f | %s | %.2f (%d) |\n", x.Name,
			thousands(x.Shelf.OpsPerSec), thousands(x.Lean.OpsPerSec), thousands(x.Raw.OpsPerSec), x.ShelfLean, mark, spread(x.ShelfLeanByRound), x.ShelfRaw,
			x.Shelf.P50Ms, x.Shelf.P99Ms, x.Lean.P50Ms, x.Lean.P99Ms, x.Shelf.CPUMicros, x.Lean.CPUMicros, db, x.RoundTrips, x.Model)
	}
	if len(r.ItemsRead) > 0 {
		fmt.Fprintln(w, "\n| a page's read of its items (raw) | pages/s with | pages/s without | with/without | p50 / p99 ms with | p50 / p99 ms without | Cassandra CPU µs/page with / without (at rest, cores) |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, x := range r.ItemsRead {
			fmt.Fprintf(w, "| %s | %s | %s | %.2f | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f (%.2f) |\n", x.Name, thousands(x.With.OpsPerSec),
				thousands(x.Without.OpsPerSec), x.Ratio, x.With.P50Ms, x.With.P99Ms, x.Without.P50Ms, x.Without.P99Ms,
				x.With.DBCPUMicros, x.Without.DBCPUMicros, x.Background)
		}
	}
	if len(r.Fanout) > 0 {
		fmt.Fprintln(w, "\n| fan-out, members | shelf request libraries/s | shelf fan-out libraries/s | raw batches libraries/s | fan-out/raw | updates |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for _, x := range r.Fanout {
			mark := ""
			if x.Ratio < goal {
				mark = " ✗"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f%s | %d |\n", thousands(float64(x.Members)), thousands(x.ShelfRequest),
				thousands(x.ShelfFanout), thousands(x.Raw), x.Ratio, mark, x.Updates)
		}
	}
	if r.Hash.Params != "" {
		fmt.Fprintf(w, "\nPassword hash (%s): %.1f ms each, %s/s with %d at once.\n", r.Hash.Params, r.Hash.OneCoreMs, thousands(r.Hash.PerSecond), r.Hash.Concurrent)
	}
	fmt.Fprintf(w, "\nPeak RSS: api %.0f MB, lean %.0f MB.\n", r.APIPeakMB, r.LeanPeakMB)
	switch {
	case len(r.ReadsBelow) == 0 && len(r.FanoutBelow) == 0:
		fmt.Fprintf(w, "Every read is at least %.1f× lean and every fan-out at least %.1f× raw.\n", goal, goal)
	default:
		fmt.Fprintf(w, "Below %.1f: reads %v, fan-outs %v.\n", goal, r.ReadsBelow, r.FanoutBelow)
	}
}

// spread is " (lowest-highest)" of ratios, for two or more.
func spread(ratios []float64) string {
	if len(ratios) < 2 {
		return ""
	}
	return fmt.Sprintf(" (%.2f-%.2f)", slices.Min(ratios), slices.Max(ratios))
}

// thousands prints n rounded, with thin spaces between thousands.
func thousands(n float64) string {
	s := strconv.FormatInt(int64(math.Round(n)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// roundTrips reads the api's /metrics text for the sum and count of
// shelf_http_request_round_trips of one route and method.
func roundTrips(metrics io.Reader, route, method string) (sum, count float64) {
	return histogram(metrics, "shelf_http_request_round_trips", `route="`+route+`"`, `method="`+method+`"`)
}

// roundTripsAtMost reads how many requests of one route and method took at
// most n round trips (the histogram's bucket le=n).
func roundTripsAtMost(metrics io.Reader, route, method string, n int) float64 {
	sc := bufio.NewScanner(metrics)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	want := []string{"shelf_http_request_round_trips_bucket{", `route="` + route + `"`, `method="` + method + `"`, `le="` + strconv.Itoa(n) + `"`}
	for sc.Scan() {
		line := sc.Text()
		matches := true
		for _, w := range want {
			matches = matches && strings.Contains(line, w)
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			return v
		}
	}
	return 0
}

// fanoutDurations reads the sum and count of shelf_fanout_duration_seconds.
func fanoutDurations(metrics io.Reader) (sum, count float64) {
	return histogram(metrics, "shelf_fanout_duration_seconds")
}

// histogram reads the sum and count of a histogram from /metrics text, of
// the series whose labels hold every one of labels.
func histogram(metrics io.Reader, name string, labels ...string) (sum, count float64) {
	sc := bufio.NewScanner(metrics)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		series, _, _ := strings.Cut(line, "{")
		series, _, _ = strings.Cut(series, " ")
		if i < 0 || (series != name+"_sum" && series != name+"_count") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(line, l)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if !matches || err != nil {
			continue
		}
		if series == name+"_sum" {
			sum = v
		} else {
			count = v
		}
	}
	return sum, count
}

func TestSideOf(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Millisecond
	}
	s := sideOf(lat, 2*time.Second)
	if s.OpsPerSec != 50 || s.P50Ms != 50 || s.P99Ms != 99 || s.N != 100 {
		t.Fatalf("sideOf = %+v, want 50 ops/s, p50 50 ms, p99 99 ms, n 100", s)
	}
	if lat[0] != 100*time.Millisecond {
		t.Fatal("sideOf sorted its argument")
	}
	if (sideOf(nil, time.Second) != side{}) {
		t.Fatal("no latencies must give zeros")
	}
}

func TestJudgeAndTable(t *testing.T) {
	r := report{Clients: 16, Rounds: 3, Round: "2s", Machine: "test",
		Rows: []row{
			{Name: "fast read", Read: true, ShelfLean: 0.95},
			{Name: "slow read", Read: true, ShelfLean: 0.85, ShelfLeanByRound: []float64{0.91, 0.78, 0.86}},
			{Name: "signup", ShelfLean: 0.5},
		},
		Fanout:    []fanoutRow{{Members: 100, Ratio: 0.8}, {Members: 1000, Ratio: 1.1}},
		ItemsRead: []itemsReadRow{{Name: "page", With: side{OpsPerSec: 900, DBCPUMicros: 700}, Without: side{OpsPerSec: 1000, DBCPUMicros: 500}, Ratio: 0.9}},
	}
	r.judge()
	if !slices.Equal(r.ReadsBelow, []string{"slow read"}) || !slices.Equal(r.FanoutBelow, []int{100}) {
		t.Fatalf("below: reads %v, fan-outs %v; want [slow read] and [100]", r.ReadsBelow, r.FanoutBelow)
	}
	var b strings.Builder
	r.table(&b)
	out := b.String()
	for _, want := range []string{"| slow read |", "0.85 ✗ (0.78-0.91)", "| 1 000 |", "Below 0.9: reads [slow read], fan-outs [100]", "| page | 900 | 1 000 | 0.90 |", "| 700 / 500 (0.00) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "0.95 ✗") || strings.Contains(out, "0.50 ✗") {
		t.Errorf("a read at goal or a write is marked:\n%s", out)
	}
}

func TestRoundTrips(t *testing.T) {
	text := `# HELP shelf_http_request_round_trips x
shelf_http_request_round_trips_bucket{method="GET",route="/v1/users/{id}",le="1"} 3
shelf_http_request_round_trips_sum{method="GET",route="/v1/users/{id}"} 7
shelf_http_request_round_trips_count{method="GET",route="/v1/users/{id}"} 4
shelf_http_request_round_trips_sum{method="GET",route="/v1/users/{id}/library"} 99
shelf_http_request_round_trips_count{method="POST",route="/v1/users/{id}"} 99
`
	sum, count := roundTrips(strings.NewReader(text), "/v1/users/{id}", "GET")
	if sum != 7 || count != 4 {
		t.Fatalf("roundTrips = %v, %v; want 7, 4", sum, count)
	}
	if n := roundTripsAtMost(strings.NewReader(text), "/v1/users/{id}", "GET", 1); n != 3 {
		t.Fatalf("roundTripsAtMost = %v, want 3", n)
	}
	sum, count = fanoutDurations(strings.NewReader("shelf_fanout_duration_seconds_sum 1.5\nshelf_fanout_duration_seconds_count 3\nshelf_fanout_duration_seconds_bucket{le=\"1\"} 2\n"))
	if sum != 1.5 || count != 3 {
		t.Fatalf("fanoutDurations = %v, %v; want 1.5, 3", sum, count)
	}
}
