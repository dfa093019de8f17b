//go:build degraded

// Package degraded is `make bench-degraded` (docs/design/node-faults.md): shelf's API in
// cluster mode, two processes behind the clients' balancer, on a
// three-node cluster of its own (RF 3, LOCAL_QUORUM / LOCAL_SERIAL), 16
// clients running the mix of mix.one, through one fault after another,
// each after a healthy window of its own: one node hung, killed and
// restarted, slow, two nodes hung, a rolling restart of the api processes,
// then of the nodes (allFaults). It prints each window against the
// healthy one before it and saves the JSON and an HTML report under .bench/.
package degraded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"shelf/tests/testkit"
	"shelf/tools/localcassandra"
)

// addresses are the cluster's nodes (other tests use .7, .11-13, .21-23,
// .31-33).
var addresses = [3]string{"127.0.0.51", "127.0.0.52", "127.0.0.53"}

const (
	owners       = 20
	itemsPerUser = 30
	clients      = 16
	password     = "correct horse battery"
)

// settings are the run's knobs, from the environment.
type settings struct {
	window time.Duration // DEGRADED_WINDOW: each window's length
	node   int           // DEGRADED_NODE: the node faulted alone (0-2)
	apiEnv []string      // DEGRADED_API_ENV: extra api settings, space separated
	// specRetry, when set, is every table's speculative_retry after the
	// migration (DEGRADED_SPECULATIVE_RETRY, e.g. MIN(99p,50ms)), to
	// measure it against the schema's default (99p).
	specRetry string
	tags      string // DEGRADED_TAGS: build tags of the api
	label     string // DEGRADED_LABEL: names the saved files
	// rollPause is how long a roll waits once a restarted node answers
	// before it stops the next (DEGRADED_ROLL_PAUSE; 0, the upgrade the
	// goal describes: the next at once).
	rollPause time.Duration
	// rate is the requests a second the clients send in all
	// (DEGRADED_RATE; 0: each client sends its next request the moment
	// its last is answered, the machine's whole capacity). At a rate, each
	// client waits for its turn, and one that fell behind starts at once
	// without catching up: a stall costs the requests it held back.
	rate float64
	// faults are the faults played, each after a healthy window, in this
	// order (DEGRADED_FAULTS, comma separated): hung, killed, slow,
	// majority, api-roll, roll. Fewer make a shorter run, to compare
	// builds on one fault.
	faults []string
}

func readSettings(t *testing.T) settings {
	s := settings{window: 15 * time.Second, node: 2, tags: os.Getenv("DEGRADED_TAGS"), label: os.Getenv("DEGRADED_LABEL")}
	if v := os.Getenv("DEGRADED_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 3*time.Second {
			t.Fatalf("DEGRADED_WINDOW=%q: want a duration of at least 3s", v)
		}
		s.window = d
	}
	if v := os.Getenv("DEGRADED_NODE"); v != "" {
		if _, err := fmt.Sscan(v, &s.node); err != nil || s.node < 0 || s.node > 2 {
			t.Fatalf("DEGRADED_NODE=%q: want 0, 1 or 2", v)
		}
	}
	if v := os.Getenv("DEGRADED_ROLL_PAUSE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("DEGRADED_ROLL_PAUSE=%q: want a duration, 0 or more", v)
		}
		s.rollPause = d
	}
	if v := os.Getenv("DEGRADED_RATE"); v != "" {
		if _, err := fmt.Sscan(v, &s.rate); err != nil || s.rate < 0 {
			t.Fatalf("DEGRADED_RATE=%q: want requests a second, 0 or more", v)
		}
	}
	s.apiEnv = strings.Fields(os.Getenv("DEGRADED_API_ENV"))
	s.specRetry = os.Getenv("DEGRADED_SPECULATIVE_RETRY")
	if strings.ContainsAny(s.specRetry, "'; ") {
		t.Fatalf("DEGRADED_SPECULATIVE_RETRY=%q: want a value such as 99p, 50ms or MIN(99p,50ms)", s.specRetry)
	}
	s.faults = allFaults
	if v := os.Getenv("DEGRADED_FAULTS"); v != "" {
		s.faults = strings.Split(v, ",")
		for _, f := range s.faults {
			if !slices.Contains(allFaults, f) {
				t.Fatalf("DEGRADED_FAULTS=%q: %q is not one of %v", v, f, allFaults)
			}
		}
	}
	return s
}

// allFaults are the faults of a whole run, in order. The nodes' roll is
// last: for minutes after it the three restarted JVMs are cold (the
// windows after it ran at 0.5-0.75× healthy), and an API roll played then
// measured them, not the deployment (0.41× in a whole run, 0.97× alone).
var allFaults = []string{"hung", "killed", "slow", "majority", "api-roll", "roll"}

// TestDegraded is the benchmark. It fails only when it cannot run; the
// goals' verdicts are printed.
func TestDegraded(t *testing.T) {
	cfg := readSettings(t)
	started := time.Now()
	c := testkit.StartCluster(t, "degraded", addresses, testLog{t})
	logs := &apiLog{}
	api := startAPIs(t, c, cfg, logs)
	m, err := seed(api.base(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster, api and %d items ready after %.0fs", len(m.items), time.Since(started).Seconds())

	ctx, stop := context.WithCancel(context.Background())
	cpu := sampleNodes(ctx, func() map[string]int {
		pids := map[string]int{}
		for _, n := range c.Nodes {
			if pid, ok := c.L.PID(n); ok {
				pids[n.Address] = pid
			}
		}
		return pids
	})
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), uint64(started.UnixNano())))
			turn := newPace(cfg.rate, i, clients)
			for ctx.Err() == nil {
				if !turn.wait(ctx) {
					return
				}
				res := m.one(api, r)
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			}
		}()
	}
	// A warm-up first, not measured: the nodes' and the api's first
	// seconds (JIT, caches, connections, the seed's compactions) ran at a
	// third of the rate of the windows after the faults, and made every
	// ratio look better (one window of warm-up: still half; two: the nodes
	// still compiled with twice the CPU they do at rest). It lasts until
	// the nodes' compilers have calmed (warmUp).
	warm := cpu.warmUp(time.Now(), addresses[:])
	t.Logf("warm-up %.0fs; each node's compiler threads over its last %v: %s", warm.Seconds, warmOver, warm.describe(addresses[:]))
	mu.Lock()
	results = nil
	mu.Unlock()
	runStart := time.Now()
	f := &faults{t: t, c: c, api: api, node: cfg.node, w: cfg.window, play: cfg.faults, rollPause: cfg.rollPause}
	windows, heal := f.run()
	stop()
	wg.Wait()

	sums := make([]summary, len(windows))
	for i, w := range windows {
		sums[i] = summarize(w, results)
	}
	series, drawn := timeline(runStart, results)
	bases := baselines(sums)
	back := -1.0
	for i, w := range windows {
		if w.Majority {
			back = backAfter(runStart, heal, series, bases[i].OKPerSec)
		}
	}
	tbl := table(sums)
	verdicts := strings.Join(goals(sums, back), "\n")
	load := "as fast as answered"
	if cfg.rate > 0 {
		load = fmt.Sprintf("%g requests a second in all", cfg.rate)
	}
	fmt.Printf("\nbench-degraded: 3 nodes (RF 3, LOCAL_QUORUM / LOCAL_SERIAL), %d api processes, %d clients %s, windows of %s, node %s faulted alone; %.0fs in all\n\n%s\n%s\n",
		len(api.procs), clients, load, cfg.window, addresses[cfg.node], time.Since(started).Seconds(), tbl, verdicts)
	var waits []string
	for _, s := range f.settles {
		w := fmt.Sprintf("%s %.0fs", s.Before, s.Seconds)
		if s.Err != "" {
			w += " (did not settle: " + s.Err + ")"
		}
		waits = append(waits, w)
	}
	fmt.Printf("\nbefore each fault, until every node saw every replica up, held no hint and answered a read at ALL within %v three times (in no window): %s\n", settledWithin, strings.Join(waits, ", "))
	samples := cpu.all()
	fmt.Printf("\neach node's CPU, in cores of the machine's %d, averaged over the seconds it ran: in all (compiling: the JIT's threads; collecting: the GC's):\n%s",
		runtime.NumCPU(), cpuTable(windows, addresses[:], samples))
	// A roll step by step: which node's stop or start the rate fell in,
	// against the roll's baseline (the window before it).
	var stepSums []summary
	for _, w := range f.steps {
		stepSums = append(stepSums, summarize(w, results))
	}
	for i, w := range windows {
		if w.Name == "rolling restart" && len(f.steps) > 0 {
			fmt.Printf("\nrolling restart, step by step (a node drains from SIGTERM until its process ends, then is down until its CQL port answers):\n%s",
				table(append([]summary{sums[i-1]}, stepSums...)))
			fmt.Printf("\neach node's CPU in the roll's steps:\n%s", cpuTable(append([]window{windows[i-1]}, f.steps...), addresses[:], samples))
		}
	}
	for _, s := range sums {
		for _, at := range s.idle {
			fmt.Printf("idle second %s (%s +%.0fs): %s\n", at.Format("15:04:05"), s.Name, at.Sub(runStart).Seconds(), logs.explain(at, at.Add(time.Second)))
		}
	}
	for i, l := range logs.lines() {
		if i == 10 {
			fmt.Printf("api error: ... %d more kinds\n", len(logs.lines())-10)
			break
		}
		fmt.Println("api error:", l)
	}
	save(t, cfg, runStart, windows, f.steps, sums, stepSums, series, drawn, samples, warm, f.settles, back, tbl, verdicts)
}

// apis are the api processes the clients call, as a load balancer in
// front of them would: each request goes to the next process, and to the
// other one when its process refuses the connection (stopped: nothing
// was sent). A process restarted listens on its address again.
type apis struct {
	t     *testing.T
	bin   string
	env   []string
	logs  *apiLog
	next  atomic.Uint64
	mu    sync.Mutex
	procs []*apiProc
}

// apiProc is one api process and how to stop it.
type apiProc struct {
	p    *testkit.Process
	stop func()
}

// base is process i's URL.
func (a *apis) base(i int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.procs[i].p.Base
}

// do sends one request of the mix to the next process, or to the other
// one when that process refuses the connection, and records it.
func (a *apis) do(kind, method, path, token, body string, want int) result {
	first := int(a.next.Add(1) % uint64(len(a.procs)))
	res := do(kind, method, a.base(first)+path, token, body, want)
	if res.refused {
		again := do(kind, method, a.base((first+1)%len(a.procs))+path, token, body, want)
		again.Start = res.Start
		res = again
	}
	return res
}

// serve starts process i, `api serve` on addr ("127.0.0.1:0": a free
// port).
func (a *apis) serve(i int, addr string) *apiProc {
	env := append(slices.Clone(a.env), "SHELF_HTTP_ADDR="+addr)
	p, stop, err := testkit.StartLogging(a.bin, []string{"serve"}, env, testkit.APIAddr, a.logs.process(i))
	if err != nil {
		a.t.Fatal(err)
	}
	return &apiProc{p: p, stop: stop}
}

// restart stops process i (SIGINT: it drains its requests in flight, as
// on SIGTERM) and starts it again on its address.
func (a *apis) restart(i int) {
	a.mu.Lock()
	old := a.procs[i]
	a.mu.Unlock()
	old.stop()
	p := a.serve(i, strings.TrimPrefix(old.p.Base, "http://"))
	a.mu.Lock()
	a.procs[i] = p
	a.mu.Unlock()
}

// startAPIs builds the api (with DEGRADED_TAGS), migrates the keyspace and
// serves it in cluster mode from two processes on free ports; they stop
// when the test ends.
func startAPIs(t *testing.T, c *testkit.Cluster, cfg settings, logs *apiLog) *apis {
	t.Helper()
	bin, err := testkit.Build(t.TempDir(), "./cmd/api", cfg.tags)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"SHELF_CASSANDRA_HOSTS="+strings.Join(addresses[:], ","),
		"SHELF_KEYSPACE=degraded",
		"SHELF_REPLICATION=NetworkTopologyStrategy:datacenter1=3",
		"SHELF_CONSISTENCY=LOCAL_QUORUM",
		"SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL",
		"SHELF_LOG_FORMAT=json",
		// Hashing is not what is measured: cheap, as in make bench.
		"SHELF_ARGON2_MEMORY_KIB=1024",
		"SHELF_ARGON2_TIME=1",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
	)
	env = append(env, cfg.apiEnv...)
	// Migrating on three nodes takes minutes on two cores: done first, so
	// that serving starts at once.
	migrate := exec.Command(bin, "migrate")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v: %s", err, out)
	}
	if cfg.specRetry != "" {
		setSpeculativeRetry(t, c, cfg.specRetry)
	}
	a := &apis{t: t, bin: bin, env: env, logs: logs}
	for i := range 2 {
		a.procs = append(a.procs, a.serve(i, "127.0.0.1:0"))
	}
	t.Cleanup(func() {
		for _, p := range a.procs {
			p.stop()
		}
	})
	return a
}

// apiLog is what the api processes logged: the messages of their error
// lines, counted (what a 5xx other than 503 was: the api logs every such
// answer at error level), and the notes that explain a wait (slow
// statements, the driver's warnings), so an idle second says what the
// requests waited on.
type apiLog struct {
	mu     sync.Mutex
	counts map[string]int
	notes  []testkit.APINote
}

// process is the writer of api process i's output, with a line buffer of
// its own (two processes' writes do not mix within a line).
func (a *apiLog) process(i int) io.Writer { return &processLog{log: a, api: i} }

type processLog struct {
	log *apiLog
	api int
	buf []byte
}

func (p *processLog) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.log.line(p.api, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
}

// line takes one line of process api's log.
func (a *apiLog) line(api int, line []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, ok := testkit.ParseAPINote(api, line); ok {
		a.notes = append(a.notes, n)
	}
	var l struct {
		Level, Message, Error string
	}
	if json.Unmarshal(line, &l) == nil && l.Level == "error" {
		if a.counts == nil {
			a.counts = map[string]int{}
		}
		a.counts[l.Message+": "+l.Error]++
	}
}

// explain says what the api processes logged as waiting in [from, to).
func (a *apiLog) explain(from, to time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return testkit.ExplainWait(a.notes, from, to)
}

// lines are the counted messages, most frequent first.
func (a *apiLog) lines() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for m, n := range a.counts {
		out = append(out, fmt.Sprintf("%5d × %s", n, m))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// faults runs the windows one after the other.
type faults struct {
	t    *testing.T
	c    *testkit.Cluster
	api  *apis
	node int
	w    time.Duration
	play []string
	// rollPause is the wait between a restarted node answering and the
	// next node's stop.
	rollPause time.Duration
	// steps are a roll's steps, each node's drain and its time down (and
	// the pause after it, if any).
	steps []window
	// settles are the waits before each fault for the cluster to settle.
	settles []settling
}

// settling is how long the cluster took, before a fault, to settle after
// the one before: every node sees every replica up, holds no hints, and
// answers a read at ALL quickly (testkit.Settled). Without it a fault
// began while the one before still held the cluster back (an API roll
// right after two nodes hung: 0.64x healthy; alone 0.97x) and its window
// measured both. The waits are in no window.
type settling struct {
	Before  string    `json:"before"`
	From    time.Time `json:"from"`
	Seconds float64   `json:"seconds"`
	Err     string    `json:"error,omitempty"`
}

// Settling: every node answering the read at ALL within settledWithin,
// three times in a row, no hint left; at most settleWait, then the fault
// runs anyway and the wait's error is reported.
const (
	settledWithin = 500 * time.Millisecond
	settleWait    = time.Minute
)

// settle waits for the cluster to settle before the fault.
func (f *faults) settle(fault string) {
	start := time.Now()
	_, err := testkit.Settled(context.Background(), f.c.Hosts(), "degraded.users", settledWithin, 3, settleWait)
	s := settling{Before: fault, From: start, Seconds: time.Since(start).Seconds()}
	if err != nil {
		s.Err = err.Error()
	}
	f.settles = append(f.settles, s)
	f.t.Logf("settled before %s: %.1fs %s", fault, s.Seconds, s.Err)
}

// run plays every window and returns them, with the moment the two hung
// nodes were resumed.
func (f *faults) run() ([]window, time.Time) {
	var windows []window
	play := func(name string, fault bool, during func(ctx context.Context)) {
		w := window{Name: name, From: time.Now(), Fault: fault}
		ctx, cancel := context.WithTimeout(context.Background(), f.w)
		if during != nil {
			during(ctx)
		}
		<-ctx.Done()
		cancel()
		w.To = time.Now()
		windows = append(windows, w)
		f.t.Logf("%s: %.1fs", name, w.To.Sub(w.From).Seconds())
	}
	signal := func(n localcassandra.Node, sig syscall.Signal) {
		if err := f.c.L.Signal(n, sig); err != nil {
			f.t.Errorf("signal %v to %s: %v", sig, n.Name, err)
		}
	}
	// start starts a stopped node and waits until it answers (tens of
	// seconds on two cores, more under load).
	start := func(n localcassandra.Node) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := f.c.L.Start(ctx, n); err != nil {
			f.t.Errorf("restart %s: %v", n.Name, err)
		}
	}
	node := f.c.Nodes[f.node]
	var heal time.Time
	for _, fault := range f.play {
		f.settle(fault)
		// Each fault's baseline, played right before it (baselines).
		play("healthy, before "+fault, false, nil)
		windows[len(windows)-1].Baseline = true
		switch fault {
		case "hung":
			play("one node hung", true, func(context.Context) { signal(node, syscall.SIGSTOP) })
			signal(node, syscall.SIGCONT)
			play("after hung", false, nil)
		case "killed":
			play("one node killed", true, func(context.Context) { signal(node, syscall.SIGKILL) })
			// The restart takes tens of seconds on two cores; its window
			// lasts until the node answers.
			restart := window{Name: "restarting", From: time.Now(), Fault: true}
			start(node)
			restart.To = time.Now()
			windows = append(windows, restart)
			f.t.Logf("restarting: %.1fs", restart.To.Sub(restart.From).Seconds())
			play("after restart", false, nil)
		case "slow":
			play("one node slow", true, func(ctx context.Context) {
				// 100 ms stopped of every 300 ms, until the window ends.
				go func() {
					for ctx.Err() == nil {
						signal(node, syscall.SIGSTOP)
						time.Sleep(100 * time.Millisecond)
						signal(node, syscall.SIGCONT)
						time.Sleep(200 * time.Millisecond)
					}
				}()
			})
			time.Sleep(300 * time.Millisecond) // the cycle's last SIGCONT
			signal(node, syscall.SIGCONT)
			play("after slow", false, nil)
		case "majority":
			others := []localcassandra.Node{f.c.Nodes[(f.node+1)%3], f.c.Nodes[(f.node+2)%3]}
			play("two nodes hung", true, func(context.Context) {
				for _, n := range others {
					signal(n, syscall.SIGSTOP)
				}
			})
			windows[len(windows)-1].Majority = true
			for _, n := range others {
				signal(n, syscall.SIGCONT)
			}
			heal = time.Now()
			play("after two hung", false, nil)
		case "roll":
			// An upgrade: every node in turn stopped (SIGTERM: it drains
			// and flushes), started again, its CQL port answering, then
			// the next. The window lasts the whole roll.
			roll := window{Name: "rolling restart", From: time.Now(), Fault: true}
			for i, n := range f.c.Nodes {
				if i > 0 && f.rollPause > 0 {
					prev := f.c.Nodes[i-1]
					up := window{Name: prev.Address + " up, pausing", From: time.Now(), Fault: true}
					time.Sleep(f.rollPause)
					up.To = time.Now()
					f.steps = append(f.steps, up)
				}
				draining := window{Name: n.Address + " draining", From: time.Now(), Fault: true}
				if err := f.c.L.Stop(n); err != nil {
					f.t.Errorf("stop %s: %v", n.Name, err)
				}
				draining.To = time.Now()
				down := window{Name: n.Address + " down", From: draining.To, Fault: true}
				start(n)
				down.To = time.Now()
				f.steps = append(f.steps, draining, down)
			}
			roll.To = time.Now()
			windows = append(windows, roll)
			f.t.Logf("rolling restart: %.1fs", roll.To.Sub(roll.From).Seconds())
			play("after roll", false, nil)
		case "api-roll":
			// A deployment: every api process in turn stopped (it drains
			// its requests in flight), started again on its address,
			// serving, then the next; the clients' balancer sends to the
			// other meanwhile. At least a window long.
			roll := window{Name: "api rolling restart", From: time.Now(), Fault: true}
			for i := range f.api.procs {
				f.api.restart(i)
			}
			time.Sleep(time.Until(roll.From.Add(f.w)))
			roll.To = time.Now()
			windows = append(windows, roll)
			f.t.Logf("api rolling restart: %.1fs", roll.To.Sub(roll.From).Seconds())
			play("after api roll", false, nil)
		}
	}
	return windows, heal
}

// save writes the JSON and the HTML report under .bench/.
func save(t *testing.T, cfg settings, start time.Time, windows, steps []window, sums, stepSums []summary, series []perSecond, drawn []testkit.Second, samples []cpuSample, warm warming, settles []settling, back float64, tbl, verdicts string) {
	root, err := localcassandra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "degraded-" + time.Now().UTC().Format("20060102-150405")
	if cfg.label != "" {
		name += "-" + cfg.label
	}
	out, err := json.MarshalIndent(map[string]any{
		"window": cfg.window.String(), "rate": cfg.rate, "rollPause": cfg.rollPause.String(), "apiEnv": cfg.apiEnv, "tags": cfg.tags, "label": cfg.label,
		"windows": windows, "summaries": sums, "rollSteps": stepSums, "perSecond": series, "nodeCPU": samples, "warmUp": warm, "settles": settles, "backAfterSeconds": back,
		"table": tbl, "verdicts": verdicts,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	colors := map[string]string{"one node hung": "#fff2cc", "one node killed": "#f4cccc", "restarting": "#fce5cd",
		"one node slow": "#d9ead3", "two nodes hung": "#f9cb9c", "rolling restart": "#cfe2f3", "api rolling restart": "#d9d2e9"}
	var shades []testkit.Shade
	for _, w := range windows {
		if w.Fault {
			shades = append(shades, testkit.Shade{From: w.From.Sub(start).Seconds(), To: w.To.Sub(start).Seconds(), Label: w.Name, Color: colors[w.Name]})
		}
	}
	for _, w := range steps {
		color := "#9fc5e8" // draining
		switch {
		case strings.HasSuffix(w.Name, " down"):
			color = "#6fa8dc"
		case strings.HasSuffix(w.Name, " pausing"):
			color = "#e8f1fa"
		}
		shades = append(shades, testkit.Shade{From: w.From.Sub(start).Seconds(), To: w.To.Sub(start).Seconds(), Label: "rolling restart: " + w.Name, Color: color})
	}
	for _, s := range settles {
		from := s.From.Sub(start).Seconds()
		shades = append(shades, testkit.Shade{From: from, To: from + s.Seconds, Label: "settling before " + s.Before, Color: "#eeeeee"})
	}
	title := "bench-degraded " + name
	if err := testkit.WriteTimeline(filepath.Join(dir, name+".html"), title, drawn, shades,
		"Shaded: one node hung (yellow), killed (red), restarting (orange-pale), slow (green), two nodes hung (orange), a rolling restart of the nodes (blue: a node draining pale, down until it answers dark, up before the next node's stop palest), of the api processes (purple); grey: waiting for the cluster to settle before a fault (in no window)."); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved .bench/%s.json and .html", name)
}

// testLog sends the launcher's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = testLog{}

// mix is the seeded data and the clients' operations.
type mix struct {
	owners  []account
	readers []account
	items   []item
	seq     atomic.Int64
}

type account struct{ username, id, token string }

type item struct {
	id    string
	owner int
}

// one runs one operation of the mix, chosen by its shares (40 % item reads,
// 35 % anonymous library pages, 20 % updates, 5 % signups).
func (m *mix) one(api *apis, r *rand.Rand) result {
	p := r.IntN(100)
	switch {
	case p < 40:
		it := m.items[r.IntN(len(m.items))]
		return api.do("user-read", http.MethodGet, "/v1/content/"+it.id, m.readers[r.IntN(len(m.readers))].token, "", http.StatusOK)
	case p < 75:
		o := m.owners[r.IntN(len(m.owners))]
		return api.do("library-page", http.MethodGet, "/v1/users/"+o.id+"/library?limit=20", "", "", http.StatusOK)
	case p < 95:
		it := m.items[r.IntN(len(m.items))]
		body := fmt.Sprintf(`{"description":"revision %d"}`, m.seq.Add(1))
		return api.do("content-update", http.MethodPatch, "/v1/content/"+it.id, m.owners[it.owner].token, body, http.StatusOK)
	default:
		u := fmt.Sprintf("d%d_%d", time.Now().UnixNano()%1e9, m.seq.Add(1))
		body := fmt.Sprintf(`{"username":%q,"email":%q,"password":%q}`, u, u+"@example.org", password)
		return api.do("signup", http.MethodPost, "/v1/users", "", body, http.StatusCreated)
	}
}

// client gives each of the 16 clients a connection; its timeout is above
// the api's request deadline (10 s), so that a slow answer is measured
// rather than cut.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 15 * time.Second}

// do sends one request and records it.
func do(kind, method, url, token, body string, want int) result {
	res := result{Kind: kind, Start: time.Now(), Want: want}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		panic(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	var op *net.OpError
	res.refused = errors.As(err, &op) && op.Op == "dial"
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res.Status = resp.StatusCode
		res.RetryAfter = resp.Header.Get("Retry-After") != ""
	}
	res.End = time.Now()
	return res
}

// call sends one seeding request (testkit.Call).
func call(method, url, token, body string, want int, out any) error {
	return testkit.Call(client, method, url, token, body, want, out)
}

// signup creates a user and logs it in.
func signup(base, name string) (account, error) {
	body := fmt.Sprintf(`{"username":%q,"email":%q,"password":%q}`, name, name+"@example.org", password)
	if err := call(http.MethodPost, base+"/v1/users", "", body, http.StatusCreated, nil); err != nil {
		return account{}, err
	}
	var s struct {
		Token string
		User  struct{ ID string }
	}
	err := call(http.MethodPost, base+"/v1/sessions", "", fmt.Sprintf(`{"login":%q,"password":%q}`, name, password), http.StatusCreated, &s)
	return account{username: name, id: s.User.ID, token: s.Token}, err
}

// seed signs up the owners and the readers and gives each owner its
// public items, 16 requests at a time.
func seed(base string) (*mix, error) {
	m := &mix{owners: make([]account, owners), readers: make([]account, clients)}
	run := time.Now().Unix() % 100000
	var g errgroup
	for i := range owners {
		g.run(func() (err error) { m.owners[i], err = signup(base, fmt.Sprintf("owner%d_%d", run, i)); return })
	}
	for i := range clients {
		g.run(func() (err error) { m.readers[i], err = signup(base, fmt.Sprintf("reader%d_%d", run, i)); return })
	}
	if err := g.wait(); err != nil {
		return nil, err
	}
	m.items = make([]item, owners*itemsPerUser)
	for i := range m.items {
		g.run(func() error {
			o := i % owners
			var c struct{ ID string }
			body := fmt.Sprintf(`{"name":"item %d","description":"first","visibility":"public"}`, i)
			err := call(http.MethodPost, base+"/v1/content", m.owners[o].token, body, http.StatusCreated, &c)
			m.items[i] = item{id: c.ID, owner: o}
			return err
		})
	}
	return m, g.wait()
}

// errgroup runs functions 16 at a time and keeps the first error.
type errgroup struct {
	wg   sync.WaitGroup
	sem  chan struct{}
	once sync.Once
	err  error
	mu   sync.Mutex
}

func (g *errgroup) run(f func() error) {
	g.once.Do(func() { g.sem = make(chan struct{}, clients) })
	g.wg.Add(1)
	g.sem <- struct{}{}
	go func() {
		defer func() { <-g.sem; g.wg.Done() }()
		if err := f(); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	}()
}

func (g *errgroup) wait() error {
	g.wg.Wait()
	return g.err
}

// setSpeculativeRetry sets every table of the keyspace to speculative_retry
// v: what a coordinator waits for a replica before it asks another.
func setSpeculativeRetry(t *testing.T, c *testkit.Cluster, v string) {
	t.Helper()
	conn := testkit.ConnConfig(c.Hosts(), "degraded")
	conn.Timeout = 30 * time.Second // a schema change on three loaded nodes
	s := c.Connect(t, conn)
	var names []string
	if err := s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'degraded'`, nil).SelectRelease(&names); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := s.Query(`ALTER TABLE `+n+` WITH speculative_retry = '`+v+`'`, nil).ExecRelease(); err != nil {
			t.Fatalf("speculative_retry %s on %s: %v", v, n, err)
		}
	}
	t.Logf("speculative_retry %s on %d tables", v, len(names))
}
