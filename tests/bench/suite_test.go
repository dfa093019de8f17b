//go:build bench

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/internal/password"
	"shelf/tests/bench/lean"
	"shelf/tests/testkit"
)

// setting reads a number from the environment, or def.
func setting[T int | time.Duration](name string, def T) T {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out any
	var err error
	switch any(def).(type) {
	case time.Duration:
		out, err = time.ParseDuration(v)
	default:
		out, err = strconv.Atoi(v)
	}
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, v, err))
	}
	return out.(T)
}

// TestBench is `make bench`: every operation through the api, through the
// lean server and raw, in alternating rounds with the same clients; the
// fan-outs beside raw batches; the password hash at its real cost. It
// prints the table and writes it, with the JSON, under .bench/.
func TestBench(t *testing.T) {
	clients := setting("BENCH_CLIENTS", 16)
	round := setting("BENCH_ROUND", 2*time.Second)
	rounds := setting("BENCH_ROUNDS", 3)
	items := setting("BENCH_ITEMS", 100_000)
	suspended := setting("BENCH_SUSPENDED", 100_000)
	only := os.Getenv("BENCH_ONLY") // substrings of the operations to run, comma-separated
	picked := func(name string) bool {
		if only == "" {
			return true
		}
		for _, part := range strings.Split(only, ",") {
			if strings.Contains(name, part) {
				return true
			}
		}
		return false
	}

	h := setup(t)
	t0 := time.Now()
	f, err := seed(h, items, suspended)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d items in each of two libraries and %d suspended users in %s", items, suspended, time.Since(t0).Round(time.Second))
	t.Logf("the node settled after the seed in %s", settle(h.cassandra, 0.25, 90*time.Second).Round(time.Second))
	rep := &report{Started: t0.UTC(), Machine: machine(), Clients: clients, Round: round.String(), Rounds: rounds}
	for _, o := range ops(f) {
		if !picked(o.name) {
			continue
		}
		r := measure(t, h, o, clients, round, rounds)
		t.Logf("%-32s shelf %7.0f/s  lean %7.0f/s  raw %7.0f/s  shelf/lean %.2f  round trips %.2f (%d)",
			o.name, r.Shelf.OpsPerSec, r.Lean.OpsPerSec, r.Raw.OpsPerSec, r.ShelfLean, r.RoundTrips, r.Model)
		rep.Rows = append(rep.Rows, r)
	}
	if picked("library") {
		rep.ItemsRead = measureItemsRead(t, h, f, clients, round, rounds)
		for _, r := range rep.ItemsRead {
			t.Logf("%-32s with the items' read %7.0f/s  without %7.0f/s  ratio %.2f  Cassandra CPU µs/page %.0f / %.0f (at rest %.2f cores)",
				r.Name, r.With.OpsPerSec, r.Without.OpsPerSec, r.Ratio, r.With.DBCPUMicros, r.Without.DBCPUMicros, r.Background)
		}
	}
	if picked("fan-out") {
		for _, n := range []int{100, 1000, 10_000} {
			r := measureFanout(t, h, n, round*time.Duration(rounds))
			t.Logf("fan-out to %5d: request %6.0f/s  fan-out %6.0f/s  raw %6.0f/s  fan-out/raw %.2f", n, r.ShelfRequest, r.ShelfFanout, r.Raw, r.Ratio)
			rep.Fanout = append(rep.Fanout, r)
		}
	}
	if picked("hash") {
		rep.Hash = measureHash(round)
	}
	rep.APIPeakMB, _ = h.api.peakRSSMB()
	rep.LeanPeakMB, _ = h.lean.peakRSSMB()
	rep.judge()
	var table strings.Builder
	rep.table(&table)
	fmt.Println("\n" + table.String())
	if err := save(rep, table.String()); err != nil {
		t.Fatal(err)
	}
}

// settle waits until the node at pid spends under cores of CPU for two
// seconds in a row (the seed's flushes and compactions over), or until
// limit has passed, and says how long it waited: rounds measured while
// the node still works through the seed measure that work too.
func settle(pid int, cores float64, limit time.Duration) time.Duration {
	start, quiet := time.Now(), 0
	for quiet < 2 && time.Since(start) < limit {
		c0 := cpuOf(pid)
		time.Sleep(time.Second)
		if (cpuOf(pid) - c0).Seconds() < cores {
			quiet++
		} else {
			quiet = 0
		}
	}
	return time.Since(start)
}

// machine describes where the run happened.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s, one local Cassandra node on the same machine", runtime.NumCPU(), cpu, runtime.Version())
}

// save writes the report under .bench/<time>.{json,md}.
func save(rep *report, table string) error {
	name := rep.Started.Format("20060102-150405")
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := saveNamed(name+".json", string(b)); err != nil {
		return err
	}
	return saveNamed(name+".md", table)
}

// run keeps clients busy with fn for d and returns each call's latency and
// the time it all took.
func run(t *testing.T, clients int, d time.Duration, fn func() error) ([]time.Duration, time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := fn(); err != nil {
					t.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if t.Failed() {
		t.FailNow()
	}
	return all, elapsed
}

// turns is the order of n sides in round k: first to last in even
// rounds, last to first in odd ones. The node's own work (a compaction,
// its JIT warming) rises and falls during a run; in a fixed order the
// side that always goes first would always meet more of it as it falls.
func turns(k, n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
		if k%2 == 1 {
			order[i] = n - 1 - i
		}
	}
	return order
}

// measure runs o on the three sides in alternating rounds (turns) after a
// warm-up of each, and reads the api's round trips per request from
// /metrics.
func measure(t *testing.T, h *harness, o op, clients int, round time.Duration, rounds int) row {
	ctx := context.Background()
	sides := []func() error{
		func() error { return o.do(h.api.Base) },
		func() error { return o.do(h.lean.Base) },
		func() error { return o.raw(ctx, h.raw) },
	}
	for _, fn := range sides {
		run(t, clients, round/4, fn)
	}
	lat := make([][]time.Duration, 3)
	took := make([]time.Duration, 3)
	cpu := make([]time.Duration, 3) // of the server process: api, lean
	servers := []*process{h.api, h.lean, nil}
	dbCPU := make([]time.Duration, 3) // of the Cassandra node, every side
	var rtSum, rtCount float64
	var byRound []float64 // shelf over lean, each round
	for k := range rounds {
		var roundOps [3]float64
		for _, i := range turns(k, len(sides)) {
			fn := sides[i]
			if i == 0 {
				s, c := scrape(t, h, o)
				rtSum, rtCount = rtSum-s, rtCount-c
			}
			c0, db0 := servers[i].cpu(), cpuOf(h.cassandra)
			l, d := run(t, clients, round, fn)
			cpu[i] += servers[i].cpu() - c0
			dbCPU[i] += cpuOf(h.cassandra) - db0
			lat[i], took[i] = append(lat[i], l...), took[i]+d
			roundOps[i] = float64(len(l)) / d.Seconds()
			if i == 0 {
				s, c := scrape(t, h, o)
				rtSum, rtCount = rtSum+s, rtCount+c
			}
		}
		if roundOps[1] > 0 {
			byRound = append(byRound, roundOps[0]/roundOps[1])
		}
	}
	r := row{Name: o.name, Read: o.read, Model: o.model, ShelfLeanByRound: byRound,
		Shelf: sideOf(lat[0], took[0]), Lean: sideOf(lat[1], took[1]), Raw: sideOf(lat[2], took[2])}
	r.Shelf.CPUMicros = float64(cpu[0].Microseconds()) / float64(max(r.Shelf.N, 1))
	r.Lean.CPUMicros = float64(cpu[1].Microseconds()) / float64(max(r.Lean.N, 1))
	for i, sd := range []*side{&r.Shelf, &r.Lean, &r.Raw} {
		sd.DBCPUMicros = float64(dbCPU[i].Microseconds()) / float64(max(sd.N, 1))
	}
	r.ShelfLean = r.Shelf.OpsPerSec / r.Lean.OpsPerSec
	r.ShelfRaw = r.Shelf.OpsPerSec / r.Raw.OpsPerSec
	if rtCount > 0 {
		r.RoundTrips = rtSum / rtCount
	}
	return r
}

// measureItemsRead prices a library page's read of its items
// (docs/design/cost-model.md#items-read-cost):
// raw pages (the lean statements, no HTTP) with it and without it, in
// alternating rounds with the same clients, their throughput and the
// Cassandra node's CPU per page. One run, so the load of a shared machine
// falls on both alike.
func measureItemsRead(t *testing.T, h *harness, f *fixture, clients int, round time.Duration, rounds int) []itemsReadRow {
	ctx := context.Background()
	with := *h.raw
	with.Checked = true
	page := func(s *lean.Store, cursor string) func() error {
		return func() error {
			p, err := s.Library(ctx, nil, f.owner.id, "", cursor, 20)
			if err == nil && len(p.Items) != 20 {
				err = fmt.Errorf("library page of %d items", len(p.Items))
			}
			return err
		}
	}
	var out []itemsReadRow
	for _, at := range []struct{ name, cursor string }{
		{"library page 1, anonymous", ""}, {"library page 1000, anonymous", f.ownerPage1000},
	} {
		sides := []func() error{page(&with, at.cursor), page(h.raw, at.cursor)}
		for _, fn := range sides {
			run(t, clients, round/4, fn)
		}
		lat := make([][]time.Duration, 2)
		took, dbCPU := make([]time.Duration, 2), make([]time.Duration, 2)
		var idle, idleCPU time.Duration // a round of neither: what else the node does
		for k := range rounds {
			for _, i := range turns(k, len(sides)) {
				fn := sides[i]
				db0 := cpuOf(h.cassandra)
				l, d := run(t, clients, round, fn)
				dbCPU[i] += cpuOf(h.cassandra) - db0
				lat[i], took[i] = append(lat[i], l...), took[i]+d
			}
			db0, t0 := cpuOf(h.cassandra), time.Now()
			time.Sleep(round)
			idleCPU, idle = idleCPU+cpuOf(h.cassandra)-db0, idle+time.Since(t0)
		}
		r := itemsReadRow{Name: at.name, With: sideOf(lat[0], took[0]), Without: sideOf(lat[1], took[1])}
		// Charged: the node's CPU in the side's rounds less what it spends
		// at rest (other clients of a shared node) in as long; a side with
		// fewer pages a second would otherwise carry more of the rest per page.
		r.Background = idleCPU.Seconds() / max(idle.Seconds(), 1e-9)
		for i, sd := range []*side{&r.With, &r.Without} {
			net := dbCPU[i].Seconds() - r.Background*took[i].Seconds()
			sd.DBCPUMicros = max(net, 0) * 1e6 / float64(max(sd.N, 1))
		}
		r.Ratio = r.With.OpsPerSec / r.Without.OpsPerSec
		out = append(out, r)
	}
	return out
}

// scrape reads o's round-trip series from the api.
func scrape(t *testing.T, h *harness, o op) (sum, count float64) {
	resp, err := httpClient.Get(h.api.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return roundTrips(resp.Body, o.route, o.method)
}

// fanoutItem is an item of a fresh user shared (straight in the source of
// truth) with n principals.
func fanoutItem(t *testing.T, h *harness, n int) (contentID, token string, members []string) {
	a, err := signup(h.api.Base)
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ ID string }
	if err := call(http.MethodPost, h.api.Base+"/v1/content", a.token, `{"name":"fan-out","visibility":"public"}`, http.StatusCreated, &c); err != nil {
		t.Fatal(err)
	}
	s := h.db.Session.Session
	members = make([]string, n)
	for i := range members {
		members[i] = domain.NewID(domain.UserIDPrefix)
	}
	err = inBatches(s, n, func(i int) (string, string, []any) {
		return c.ID, `INSERT INTO content_members (content_id, principal_id, role) VALUES (?, ?, 'viewer') USING TIMESTAMP 1`, []any{c.ID, members[i]}
	})
	if err == nil {
		// As shelf would have it after n shares: lean rows up to its limit.
		err = s.Query(`UPDATE content SET members = ?, lean = ? WHERE id = ? IF version = 1`, n+1, n+1 <= library.DefaultLeanMembers, c.ID).Exec()
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.ID, a.token, members
}

// rawFanout writes what the service writes for one update of a public item
// to every member: the index entry, then per bucket one batch (delete the
// old row, insert the new), the three at once; 16 members at once.
func rawFanout(s *gocql.Session, contentID string, members []string, version int, prevLM, lm time.Time) error {
	sem := make(chan struct{}, 16)
	errs := make(chan error, 4*len(members))
	var wg sync.WaitGroup
	ts := int64(version)
	for _, m := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := s.Query(`INSERT INTO library_index (principal_id, content_id, role, version, last_modified, name, visibility) VALUES (?, ?, 'viewer', ?, ?, 'raw', 'public') USING TIMESTAMP ?`,
				m, contentID, version, lm, ts).Exec()
			if err != nil {
				errs <- err
				return
			}
			var bw sync.WaitGroup
			for _, bucket := range library.BucketsFor(library.VisibilityPublic) {
				bw.Add(1)
				go func() {
					defer bw.Done()
					batch := s.NewBatch(gocql.UnloggedBatch)
					batch.Query(`DELETE FROM library_by_principal USING TIMESTAMP ? WHERE principal_id = ? AND bucket = ? AND last_modified = ? AND content_id = ?`, ts, m, bucket, prevLM, contentID)
					batch.Query(`INSERT INTO library_by_principal (principal_id, bucket, last_modified, content_id, name, visibility, version) VALUES (?, ?, ?, ?, 'raw', 'public', ?) USING TIMESTAMP ?`, m, bucket, lm, contentID, version, ts)
					if err := s.ExecuteBatch(batch); err != nil {
						errs <- err
					}
				}()
			}
			bw.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// measureFanout updates an item with n members through the api, one update
// at a time (the answer comes after the fan-out: the api runs with a sync
// limit of 20 000), alternating with gocql writing the same rows for a twin
// item, for about d each (at least three updates).
func measureFanout(t *testing.T, h *harness, n int, d time.Duration) fanoutRow {
	contentID, token, members := fanoutItem(t, h, n)
	s := h.db.Session.Session
	twin := domain.NewID(domain.ContentIDPrefix)
	version := 1
	prevLM := time.Now().UTC().Truncate(time.Millisecond)
	var apiT, rawT time.Duration
	fanSum0, fanCount0 := fanoutSeries(t, h)
	updates := 0
	for ; updates < 3 || apiT+rawT < 2*d; updates++ {
		t0 := time.Now()
		if err := call(http.MethodPatch, h.api.Base+"/v1/content/"+contentID, token, fmt.Sprintf(`{"name":"v%d"}`, updates), http.StatusOK, nil); err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		lm := prevLM.Add(time.Millisecond)
		version++
		if err := rawFanout(s, twin, members, version, prevLM, lm); err != nil {
			t.Fatal(err)
		}
		prevLM = lm
		rawT += time.Since(t1)
		apiT += t1.Sub(t0)
	}
	fanSum, fanCount := fanoutSeries(t, h)
	r := fanoutRow{Members: n, Updates: updates,
		ShelfRequest: float64(n*updates) / apiT.Seconds(), Raw: float64(n*updates) / rawT.Seconds()}
	if fanCount > fanCount0 && fanSum > fanSum0 {
		r.ShelfFanout = float64(n) * (fanCount - fanCount0) / (fanSum - fanSum0)
	}
	r.Ratio = r.ShelfFanout / r.Raw
	return r
}

// fanoutSeries reads the api's fan-out duration series (sum, count).
func fanoutSeries(t *testing.T, h *harness) (sum, count float64) {
	resp, err := httpClient.Get(h.api.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return fanoutDurations(resp.Body)
}

// measureHash times argon2id at the api's default cost: one at a time,
// then as many at once as there are cores.
func measureHash(d time.Duration) hashRow {
	p := password.DefaultParams
	hasher := password.New(p, 0)
	ctx := context.Background()
	one := 0
	start := time.Now()
	for time.Since(start) < d {
		_, _ = hasher.Hash(ctx, "correct horse battery")
		one++
	}
	oneMs := float64(time.Since(start).Milliseconds()) / float64(one)
	cores := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	start = time.Now()
	for range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				_, _ = hasher.Hash(ctx, "correct horse battery")
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return hashRow{Params: fmt.Sprintf("argon2id m=%d KiB, t=%d, p=%d", p.MemoryKiB, p.Time, p.Threads),
		OneCoreMs: oneMs, PerSecond: float64(n) / time.Since(start).Seconds(), Concurrent: cores}
}

// do sends o's request to the server at base.
func (o op) do(base string) error {
	method, path, token, body := o.request(base)
	return call(method, base+path, token, body, o.want, nil)
}

// peakRSSMB is the process's peak resident memory (VmHWM) in MB.
func (p *process) peakRSSMB() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", p.Cmd.Process.Pid)
}

// cpu is the process's CPU time so far (user and system), or 0 for none.
func (p *process) cpu() time.Duration {
	if p == nil {
		return 0
	}
	return cpuOf(p.Cmd.Process.Pid)
}

// cpuOf is the CPU time so far (user and system) of process pid, or 0 when
// it cannot be read (no such process, or none: pid 0).
func cpuOf(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, cpu, _ := testkit.ParseStat(string(b))
	return cpu
}
