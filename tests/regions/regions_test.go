//go:build regions

// Package regions runs shelf in two data centres on this machine, as an
// operator would run it in two regions: a cluster of one node in dc1 and
// one in dc2 (GossipingPropertyFileSnitch), the keyspace replicated to
// both (NetworkTopologyStrategy dc1=1, dc2=1), and an API process in each
// data centre whose contact point is its own data centre's node. Workers
// collide through both regions at once (signups of one username and
// email, two admins renaming, changing emails and suspending) while the
// link between the data centres is slowed and one data centre hangs. The
// history is judged as the nemesis judges it (U1 per key with porcupine
// and on the tables, U3, S2, no 5xx but 503), and the latency of reads and
// signups is reported per data centre, healthy and with the link slowed.
// `make test-regions` (DURATION, 60s) runs it; BROKEN=local-serial runs
// compare-and-sets at LOCAL_SERIAL, one Paxos per data centre, and passes
// only when the checker catches two regions winning one name. Files go to
// .regions/<time>/ (ignored).
package regions

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/repository"
	"shelf/tests/internal/checker"
	"shelf/tests/testkit"
)

// lease is the claim lease of the API processes (short: the checks run
// past it).
const lease = 10 * time.Second

func TestRegions(t *testing.T) {
	duration := checker.EnvDuration(t, "DURATION", time.Minute)
	delay := checker.EnvDuration(t, "REGIONS_LINK_DELAY", 50*time.Millisecond)
	// REGIONS_BROKEN=local-serial: every compare-and-set at LOCAL_SERIAL.
	// The real server refuses that setting on a keyspace in two data
	// centres; the deliberately broken build tests/broken/localserial
	// runs it.
	serial, pkg := "SERIAL", ""
	switch broken := os.Getenv("REGIONS_BROKEN"); broken {
	case "":
	case "local-serial":
		serial, pkg = "LOCAL_SERIAL", "./tests/broken/localserial"
	default:
		t.Fatalf("REGIONS_BROKEN=%q: want local-serial", broken)
	}
	out := checker.RunDir(t, ".regions")
	ctx := context.Background()

	c := startCluster(t)
	bin, err := testkit.Build(t.TempDir(), cmp.Or(pkg, "./cmd/api"), "")
	if err != nil {
		t.Fatal(err)
	}
	apis := startAPIs(t, bin, out, serial)
	h, err := checker.NewHistory(filepath.Join(out, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cl := &checker.Client{Bases: []string{apis[0].Base, apis[1].Base}, H: h, HTTP: &http.Client{Timeout: 15 * time.Second}}
	w := &workload{c: cl}
	for _, a := range apis {
		w.admins = append(w.admins, setupAdmin(t, cl, a))
	}

	run, stop := context.WithTimeout(ctx, duration)
	defer stop()
	n := &nemesis{c: c, h: h, delay: delay}
	done := make(chan struct{})
	go func() { n.run(run); close(done) }()
	started := time.Now()
	w.run(run, 6)
	<-done
	t.Logf("workload and faults ran %.0fs", time.Since(started).Seconds())

	// Heal, let held writes land, leases run out and the sweepers lift the
	// suspensions that end, then repair the suspension records.
	c.heal()
	heal, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := c.whole(heal); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(checker.Settled(h.All(), time.Now().Add(lease+5*time.Second))))
	if out, err := apis[0].Admin("repair-suspensions"); err != nil {
		t.Logf("repair-suspensions: %v\n%s", err, out)
	}

	events := h.All()
	keys, claims, err := checker.CheckTablesAndClaims(heal, readKeys, events, out)
	if err != nil {
		t.Fatal(err)
	}
	signups, _ := checker.CheckSignups(cl, w.admins[0], events, w.signups())
	verdicts := []checker.Verdict{checker.CheckAnswers(events), keys, claims, signups, checker.CheckSuspensions(apis[0].Admin)}

	var b strings.Builder
	fmt.Fprintf(&b, "shelf regions run %s: %s of workload and faults, two data centres of one node (%s), an API process in each, serial consistency %s\n",
		filepath.Base(out), duration, replication, serial)
	if pkg != "" {
		fmt.Fprintf(&b, "THE DELIBERATELY BROKEN SETTING: compare-and-sets at LOCAL_SERIAL, one Paxos per data centre (build %s)\n", pkg)
	}
	b.WriteString("\n")
	b.WriteString(checker.Summarize(events, []string{"slow-link", "hang-dc"}))
	fmt.Fprintf(&b, "keys checked: %d with porcupine (every username and email the history touched), %d owners on the tables\n",
		claims.Checked, keys.Checked)
	b.WriteString("\nlatency of answered requests, by the data centre of the API process:\n" + latencies(events, len(apis)))
	b.WriteString("\ninvariants:\n")
	checker.WriteVerdicts(&b, verdicts)
	for _, err := range n.errs {
		fmt.Fprintf(&b, "nemesis error: %v\n", err)
	}
	if err := os.WriteFile(filepath.Join(out, "summary.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	t.Logf("history, summary and the API processes' logs in %s", out)
	judged := ""
	if pkg != "" {
		judged = "compare-and-sets at LOCAL_SERIAL in two data centres"
	}
	checker.Judge(t, judged, verdicts, keys, claims, signups)
}

// readKeys checks U1 on the tables (checker.CheckKeys), read at ALL: both
// data centres' replicas, whichever region wrote last.
func readKeys(ctx context.Context) (checker.Verdict, map[string]string, error) {
	conn := testkit.ConnConfig([]string{nodeAddrs[0][0], nodeAddrs[1][0]}, keyspace)
	conn.Consistency = gocql.All.String()
	conn.SerialConsistency = "SERIAL"
	s, err := repository.Connect(ctx, conn, time.Minute)
	if err != nil {
		return checker.Verdict{Name: "U1 no key held twice, claims committed"}, nil, err
	}
	defer s.Close()
	return checker.CheckKeys(ctx, s)
}

// setupAdmin signs up an admin through a's region, grants it the role
// with `api admin grant`, and logs it in there.
func setupAdmin(t *testing.T, c *checker.Client, a *api) string {
	t.Helper()
	name := fmt.Sprintf("boss%d%d", a.dc+1, time.Now().UnixNano()%1000000)
	pw := "regions admin password"
	if status, body := c.Call(0, a.dc, "setup", http.MethodPost, "/v1/users", "",
		map[string]string{"username": name, "email": name + "@example.org", "password": pw}, nil); status != http.StatusCreated {
		t.Fatalf("admin signup in dc%d: %d %v", a.dc+1, status, body)
	}
	if out, err := a.Admin("grant", name); err != nil {
		t.Fatalf("grant: %v\n%s", err, out)
	}
	status, body := c.Call(0, a.dc, "setup", http.MethodPost, "/v1/sessions", "", map[string]string{"login": name, "password": pw}, nil)
	if status != http.StatusCreated {
		t.Fatalf("admin login in dc%d: %d %v", a.dc+1, status, body)
	}
	return body["token"].(string)
}
