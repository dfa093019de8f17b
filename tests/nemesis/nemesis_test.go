//go:build nemesis

// Package nemesis runs shelf as it runs in production, on a three-node
// cluster of its own (RF 3, LOCAL_QUORUM / LOCAL_SERIAL) behind two API
// processes, one of them with its clock skewed, under a workload of every
// operation at once, while a nemesis kills and restarts nodes, hangs them
// and kills API processes in the middle of requests. Every request and its
// answer go to a history; once the nemesis stops and the cluster heals,
// the suspension repair runs and the outbox drains, and the checker judges
// the invariants from the history and the database. `make test-nemesis`
// (DURATION, default 3m) runs it; the history and summary are written under
// .nemesis/ (ignored).
package nemesis

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"shelf/tests/internal/checker"
	"shelf/tests/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// lease is the claim lease of the API processes (short: the checks run
// past it).
const lease = 10 * time.Second

// brokenBuilds are the deliberately broken builds of the checker's
// self-check, by NEMESIS_BROKEN.
var brokenBuilds = map[string]struct{ pkg, what string }{
	"claims": {"./tests/broken/claims", "claims released when an activation's outcome is unknown"},
	"lwt":    {"./tests/broken/lwt", "claims taken by check-then-act, no compare-and-set"},
}

func TestNemesis(t *testing.T) {
	duration := checker.EnvDuration(t, "DURATION", 3*time.Minute)
	out := checker.RunDir(t, ".nemesis")
	ctx := context.Background()

	// NEMESIS_BROKEN builds the API deliberately broken, and the checker
	// must then report U1 or U3: "claims" (tests/broken/claims) releases
	// claims when an activation's outcome is unknown, "lwt" (tests/broken/lwt) takes claims by check-then-act without compare-and-set.
	kind := os.Getenv("NEMESIS_BROKEN")
	broken := brokenBuilds[kind]
	if kind != "" && broken.pkg == "" {
		t.Fatalf("NEMESIS_BROKEN=%q: want claims or lwt", kind)
	}
	c := startCluster(t)
	dir := t.TempDir()
	bin := buildAPI(t, dir, broken.pkg)
	// The second instance's clock runs two seconds ahead: the server
	// takes no clock offset, so it runs the proof wing's build that does
	// (a broken build takes one too: tests/internal/skewed).
	ahead := bin
	if broken.pkg == "" {
		ahead = buildAPI(t, dir, "./tests/nemesis/skewedapi")
	}
	apis := []*apiProc{
		{idx: 0, bin: bin},
		{idx: 1, bin: ahead, flags: []string{"-clock-offset=2s"}},
	}
	for _, p := range apis {
		p.addr = freeAddr(t)
		p.env = apiEnv(p.addr)
		if err := p.start(ctx); err != nil { // the first migrates the keyspace
			t.Fatal(err)
		}
		t.Cleanup(p.kill)
	}

	h, err := checker.NewHistory(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cl := &client{Bases: []string{apis[0].base(), apis[1].base()}, H: h, HTTP: &http.Client{Timeout: 15 * time.Second}}
	w := &workload{c: cl, mail: newMailbox(apis[0].logPath(), apis[1].logPath())}
	w.admin = setupAdmin(t, cl, apis[0])
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("crowd%d-%d", time.Now().Unix()%100000, i)
		status, body := cl.Call(0, 0, "group-create", http.MethodPost, "/v1/groups", w.admin,
			map[string]any{"name": name, "maxMembers": 3}, map[string]string{"name": name, "by": "admin"})
		if status != http.StatusCreated {
			t.Fatalf("group: %d %v", status, body)
		}
		w.groups = append(w.groups, body["id"].(string))
	}

	run, stop := context.WithTimeout(ctx, duration)
	defer stop()
	n := &nemesis{c: c, apis: apis, h: h}
	if s := os.Getenv("NEMESIS_FAULTS"); s != "" {
		n.kinds = strings.Split(s, ",")
	}
	done := make(chan struct{})
	go func() { n.run(run); close(done) }()
	started := time.Now()
	w.run(run, 8)
	stopped := time.Now()
	<-done
	t.Logf("workload and nemesis ran %.0fs", time.Since(started).Seconds())

	// Heal, then let the background work finish: held writes land, leases
	// run out, the outbox worker and the sweeper run, the repair runs.
	heal, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := c.heal(heal); err != nil {
		t.Fatal(err)
	}
	for _, p := range apis {
		if resp, err := http.Get(p.base() + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
			if err := p.start(heal); err != nil {
				t.Fatal(err)
			}
		} else {
			resp.Body.Close()
		}
	}
	// The repair and S2's dry run read several tables one after another;
	// a suspension that ends between them is lifted by an API's sweeper
	// meanwhile, and the dry run would see it half lifted. So the last
	// requested end passes (and a few sweeps after it) first.
	time.Sleep(time.Until(checker.Settled(h.All(), time.Now().Add(lease+5*time.Second))))
	// Deletions and closings nobody retried are the repairs' to finish
	// (a deletion may close groups, and wait for other deletions: the
	// deletions' repair runs again after the closings').
	for _, repair := range []string{"repair-deletions", "repair-closings", "repair-deletions", "repair-suspensions"} {
		if out, err := apis[0].admin(repair); err != nil {
			t.Logf("%s: %v\n%s", repair, err, out)
		}
	}

	events := h.All()
	verdicts := []verdict{checker.CheckAnswers(events)}
	keys, claims, err := checker.CheckTablesAndClaims(heal, readKeys, events, out)
	if err != nil {
		t.Fatal(err)
	}
	signups, live := checkSignups(cl, w.admin, events, w.account)
	state, err := readLifecycleState(heal)
	if err != nil {
		t.Fatal(err)
	}
	groups := slices.Clone(w.groups)
	for _, g := range w.made {
		groups = append(groups, g.id)
	}
	verdicts = append(verdicts, keys, claims, signups,
		checker.CheckSuspensions(apis[0].admin),
		checkGroups(cl, w.admin, events, groups),
		checkContent(cl, w.admin, events, w.items),
		checkResetTokens(events),
		checkSessionsAfterReset(events),
		checkLifecycleState(state))
	items, err := readItems(cl, w.admin, w.items)
	if err != nil {
		t.Fatal(err)
	}
	stranger := setupUser(t, cl, "viewer")
	var notes []testkit.APINote
	for _, p := range apis {
		if f, err := os.Open(p.logPath()); err == nil {
			notes = append(notes, testkit.ReadAPINotes(p.idx, f)...)
			f.Close()
		}
	}
	// The nodes' logs too, kept beside the history: a node's pauses,
	// timeouts and failure detector (which peer it thought down, when)
	// during those faults.
	for i, n := range c.Nodes {
		if b, err := os.ReadFile(c.L.LogFile(n)); err == nil {
			notes = append(notes, testkit.ReadNodeNotes(i+1, bytes.NewReader(b))...)
			_ = os.WriteFile(filepath.Join(out, fmt.Sprintf("node-%d.log", i+1)), b, 0o644)
		}
	}
	available, rates := checkAvailability(events, notes, started, stopped)
	verdicts = append(verdicts,
		checkContentModel(events, items),
		checkLibraries(cl, w.admin, stranger, items, live),
		available)

	var b strings.Builder
	fmt.Fprintf(&b, "shelf nemesis run %s: %s of workload and faults, 3 nodes (RF 3), 2 API processes (one 2 s ahead)\n",
		filepath.Base(out), duration)
	if broken.pkg != "" {
		fmt.Fprintf(&b, "THE DELIBERATELY BROKEN BUILD (%s)\n", broken.what)
	}
	b.WriteString("\n")
	b.WriteString(checker.Summarize(events, []string{"kill-node", "hang-node", "hang-majority", "kill-api"}))
	b.WriteString("\navailability during single-node faults (answered requests a second):\n" + rates)
	b.WriteString("\ninvariants:\n")
	checker.WriteVerdicts(&b, verdicts)
	for _, err := range n.unsettled {
		fmt.Fprintf(&b, "single-node fault skipped: %v\n", err)
	}
	for _, err := range n.errs {
		fmt.Fprintf(&b, "nemesis error: %v\n", err)
	}
	if err := os.WriteFile(filepath.Join(out, "summary.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReport(filepath.Join(out, "report.html"), "shelf nemesis "+filepath.Base(out), events); err != nil {
		t.Fatal(err)
	}
	// The API processes' logs beside the history: what the driver and the
	// domain said during a fault the verdicts judge.
	for _, p := range apis {
		if b, err := os.ReadFile(p.logPath()); err == nil {
			_ = os.WriteFile(filepath.Join(out, fmt.Sprintf("api-%d.log", p.idx)), b, 0o644)
		}
	}
	t.Log("\n" + b.String())
	t.Logf("history, summary and the API processes' and nodes' logs in %s", out)
	judged := ""
	if broken.pkg != "" {
		judged = "the broken build (" + broken.what + ")"
	}
	checker.Judge(t, judged, verdicts, keys, claims, signups)
}

// setupAdmin signs up an admin through the API, grants it the role with
// `api admin grant`, and logs it in.
func setupAdmin(t *testing.T, c *client, api *apiProc) string {
	t.Helper()
	return setupUser(t, c, "boss", func(name string) {
		if out, err := api.admin("grant", name); err != nil {
			t.Fatalf("grant: %v\n%s", err, out)
		}
	})
}

// setupUser signs up a user of its own (then runs then, if any) and
// returns its session token.
func setupUser(t *testing.T, c *client, prefix string, then ...func(name string)) string {
	t.Helper()
	name := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1000000)
	pw := "nemesis setup password"
	if status, body := c.Call(0, 0, "setup", http.MethodPost, "/v1/users", "",
		map[string]string{"username": name, "email": name + "@example.org", "password": pw}, nil); status != http.StatusCreated {
		t.Fatalf("%s signup: %d %v", prefix, status, body)
	}
	for _, f := range then {
		f(name)
	}
	status, body := c.Call(0, 0, "setup", http.MethodPost, "/v1/sessions", "", map[string]string{"login": name, "password": pw}, nil)
	if status != http.StatusCreated {
		t.Fatalf("%s login: %d %v", prefix, status, body)
	}
	return body["token"].(string)
}
