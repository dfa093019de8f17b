package repository

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// fixedPolicy plans its hosts in the same order every time, as the
// token-aware policy does for one partition.
type fixedPolicy struct {
	gocql.HostSelectionPolicy
	hosts []*gocql.HostInfo
}

func (f fixedPolicy) Pick(gocql.ExecutableQuery) gocql.NextHost {
	i := 0
	return func() gocql.SelectedHost {
		if i == len(f.hosts) {
			return nil
		}
		i++
		return selected{f.hosts[i-1]}
	}
}

// HostUp and HostDown change nothing in a fixed plan.
func (fixedPolicy) HostUp(*gocql.HostInfo)   {}
func (fixedPolicy) HostDown(*gocql.HostInfo) {}

type selected struct{ h *gocql.HostInfo }

func (s selected) Info() *gocql.HostInfo { return s.h }
func (selected) Mark(error)              {}

// policyClock is a policy over three hosts A, B, C (in that order) with a
// clock the test moves.
type policyClock struct {
	p     *healthPolicy
	hosts []*gocql.HostInfo
	at    time.Time
}

func newPolicyClock(t *testing.T) *policyClock {
	t.Helper()
	c := &policyClock{at: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, id := range []string{"A", "B", "C"} {
		h := &gocql.HostInfo{}
		h.SetHostID(id)
		c.hosts = append(c.hosts, h)
	}
	c.p = newHealthPolicy(fixedPolicy{hosts: c.hosts}, nil)
	c.p.now = func() time.Time { return c.at }
	return c
}

// plan is the order of a fresh plan of a statement that must not be sent
// twice, by host id; it sends nothing.
func (c *policyClock) plan() string { return c.planOf(false) }

// planOf is plan for an idempotent statement or not.
func (c *policyClock) planOf(idempotent bool) string {
	var ids string
	for _, h := range c.p.reorder(c.p.HostSelectionPolicy.Pick(nil), idempotent) {
		ids += h.Info().HostID()
	}
	return ids
}

// send picks a plan and sends one request to its first host, as gocql
// does, returning that host.
func (c *policyClock) send() *gocql.HostInfo {
	return c.p.Pick(nil)().Info()
}

func (c *policyClock) wait(d time.Duration) { c.at = c.at.Add(d) }

// TestHealthPolicyKeepsOrderWhileHostsAnswer: hosts that answer keep the
// inner order, however slowly they answer within quiet.
func TestHealthPolicyKeepsOrderWhileHostsAnswer(t *testing.T) {
	c := newPolicyClock(t)
	for range 10 {
		h := c.send()
		c.wait(quiet - time.Millisecond)
		c.p.ended(h, nil)
	}
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s, want ABC", got)
	}
}

// TestHealthPolicySparesANewlyUpHost: a host that comes back after gocql
// marked it down goes behind the others that answer for a minute, in the
// plans that do not keep it (three in four), and ahead of a stuck one; a
// host gocql merely connects to (its first connection, a pool refilled)
// keeps its place.
func TestHealthPolicySparesANewlyUpHost(t *testing.T) {
	c := newPolicyClock(t)
	c.p.keep = func() bool { return false }
	a, b := c.hosts[0], c.hosts[1]
	c.p.HostUp(a)
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s after a first connection, want ABC", got)
	}
	c.p.HostDown(a)
	c.wait(30 * time.Second)
	c.p.HostUp(a)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s with A just back, want BCA", got)
	}
	// B hangs: the newly up host coordinates before a stuck one.
	c.send()
	c.wait(2 * quiet)
	if got := c.plan(); got != "CAB" {
		t.Fatalf("plan %s with A just back and B hung, want CAB", got)
	}
	c.p.HostUp(b) // B's pool refilled: it was never marked down
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s after B's pool refilled, want BCA (B in its place, A still spared)", got)
	}
	c.p.keep = func() bool { return true }
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s that keeps the newly up host, want ABC", got)
	}
	c.p.keep = func() bool { return false }
	c.wait(newlyUp)
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s a minute after A came back, want ABC", got)
	}
}

// TestHealthPolicyKeepsANewlyUpHostInOnePlanInFour: the default dice keep
// a newly up host first in about a quarter of the plans.
func TestHealthPolicyKeepsANewlyUpHostInOnePlanInFour(t *testing.T) {
	c := newPolicyClock(t)
	c.p.HostDown(c.hosts[0])
	c.p.HostUp(c.hosts[0])
	first := 0
	const plans = 4000
	for range plans {
		if c.plan()[0] == 'A' {
			first++
		}
	}
	// One in four: 1 000 expected, a standard deviation of about 27.
	if first < 850 || first > 1150 {
		t.Fatalf("A first in %d of %d plans, want about a quarter", first, plans)
	}
}

// TestHealthPolicyMovesHungHostBack: a host whose requests wait past
// quiet with no answer goes to the back; the others keep their order.
func TestHealthPolicyMovesHungHostBack(t *testing.T) {
	c := newPolicyClock(t)
	if h := c.send(); h != c.hosts[0] {
		t.Fatalf("first host %s", h.HostID())
	}
	c.wait(quiet / 2)
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s before quiet has passed, want ABC", got)
	}
	c.wait(quiet)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s with A hung, want BCA", got)
	}
	// New requests go to B, which answers: B stays first.
	h := c.send()
	if h != c.hosts[1] {
		t.Fatalf("request sent to %s, want B", h.HostID())
	}
	c.p.ended(h, nil)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s, want BCA", got)
	}
}

// TestHealthPolicyTakesHostBackWhenItAnswers: one answer from the hung
// host, even an error it sent, puts it back in its place.
func TestHealthPolicyTakesHostBackWhenItAnswers(t *testing.T) {
	c := newPolicyClock(t)
	a := c.send()
	c.send() // a second request waits on A too
	c.wait(2 * quiet)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s with A hung, want BCA", got)
	}
	c.p.ended(a, &gocql.RequestErrReadTimeout{})
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s after A answered, want ABC", got)
	}
}

// TestHealthPolicyTimeoutIsNoAnswer: attempts that end without a word
// from the host (the client's timeout, a cancelled request) leave it at
// the back while others still wait on it.
func TestHealthPolicyTimeoutIsNoAnswer(t *testing.T) {
	c := newPolicyClock(t)
	a := c.send()
	c.send()
	c.wait(2 * quiet)
	for _, err := range []error{gocql.ErrTimeoutNoResponse, context.Canceled} {
		if answered(err) {
			t.Errorf("%v counted as an answer", err)
		}
	}
	c.p.ended(a, gocql.ErrTimeoutNoResponse)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s after a timeout on A with one request still waiting, want BCA", got)
	}
	// The last one times out too: nothing waits on A, which has not
	// answered since; it stays at the back.
	c.p.ended(a, context.Canceled)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s with A silent since its last answer, want BCA", got)
	}
}

// TestHealthPolicyProbesSilentHost: a host whose requests timed out is
// tried again only by a statement with a speculative copy (sent on after
// the speculative delay if it still hangs), one at a time and at most
// once every probeEvery; once it answers it is back in its place. Put
// first again as soon as nothing waited on it, it would make every
// statement of the next quiet wait out the timeout on it once more.
func TestHealthPolicyProbesSilentHost(t *testing.T) {
	c := newPolicyClock(t)
	a := c.send()
	c.wait(2 * quiet)
	c.p.ended(a, gocql.ErrTimeoutNoResponse)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s for a statement sent once, want BCA", got)
	}
	c.wait(probeEvery)
	if got := c.planOf(true); got != "ABC" {
		t.Fatalf("plan %s for the first idempotent statement, want ABC (the probe)", got)
	}
	if got := c.planOf(true); got != "BCA" {
		t.Fatalf("plan %s for the next idempotent statement, want BCA (one probe every %s)", got, probeEvery)
	}
	// The next probe is sent and hangs too: no other probe while it waits.
	c.wait(probeEvery)
	if h := c.p.Pick(copiedRead(t))().Info(); h != a {
		t.Fatalf("a statement with a copy sent to %s, want A (the probe)", h.HostID())
	}
	c.wait(probeEvery + quiet)
	if got := c.planOf(true); got != "BCA" {
		t.Fatalf("plan %s while a probe waits on A, want BCA", got)
	}
	// The probe is answered: A is in its place for every statement.
	c.p.ended(a, nil)
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s after A answered the probe, want ABC", got)
	}
}

// threeNodes is a speculation of one copy that knows three nodes, as
// Connect's learns them.
func threeNodes() *speculation {
	sp := newSpeculation(1, 200*time.Millisecond)
	for _, ip := range []string{"127.0.0.51", "127.0.0.52", "127.0.0.53"} {
		sp.Accept(host(ip))
	}
	return sp
}

// offlineDB is a DB that builds statements as a connected one does
// (nothing is sent: its session has no connection), with copies by sp.
func offlineDB(sp gocql.SpeculativeExecutionPolicy) *DB {
	return &DB{Session: gocqlx.Session{Session: &gocql.Session{}}, Serial: gocql.Consistency(gocql.Serial), spec: sp}
}

// copiedRead is a read of one partition as the repository builds it on
// three nodes: it carries a copy.
func copiedRead(t *testing.T) gocql.ExecutableQuery {
	t.Helper()
	q := offlineDB(threeNodes()).query(context.Background(), 0, userSelectCQL, "u_1")
	if !copied(q) {
		t.Fatal("a read of one partition carries no copy")
	}
	return q
}

// silentA is a policy over A, B, C whose host A timed out and answered
// nothing since, a probe's interval ago.
func silentA(t *testing.T) *policyClock {
	t.Helper()
	c := newPolicyClock(t)
	a := c.send()
	c.wait(2 * quiet)
	c.p.ended(a, gocql.ErrTimeoutNoResponse)
	c.wait(probeEvery)
	return c
}

// TestHealthPolicyProbesOnlyWithACopy: only a statement that carries a
// speculative copy may probe a silent host, since only its copy bounds
// what the probe costs if the host still hangs (the speculative delay).
// A read at SERIAL (never copied: a copy would duel with it), a scan
// (never copied), a compare-and-set, a statement of a DB with copies off,
// and a read when one node leaves no other for a copy never get the
// silent host first; a read, a versioned write and a batch of them do.
// A SERIAL read or a scan probing a hung host would wait out the whole
// timeout (2 s), once a second.
func TestHealthPolicyProbesOnlyWithACopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := offlineDB(threeNodes())
	oneNode := newSpeculation(1, 200*time.Millisecond)
	oneNode.Accept(host("127.0.0.51"))
	batch := db.newBatch(ctx)
	batch.add(libDeleteCQL, 1)
	casBatch := db.newBatch(ctx)
	casBatch.add(onceCQL("UPDATE counts SET n = n + 1 WHERE k = ?"), 3)
	for _, tc := range []struct {
		name  string
		q     gocql.ExecutableQuery
		probe bool
	}{
		{"read", db.query(ctx, 0, userSelectCQL, "u_1"), true},
		{"read at LOCAL_QUORUM", db.query(ctx, gocql.LocalQuorum, userSelectCQL, "u_1"), true},
		{"versioned write", db.plain(ctx, libDeleteCQL, 1), true},
		{"batch of versioned writes", batch.ready(db.spec), true},
		{"read at SERIAL", db.query(ctx, gocql.Consistency(gocql.Serial), userSelectCQL, "u_1"), false},
		{"read at LOCAL_SERIAL", db.query(ctx, gocql.Consistency(gocql.LocalSerial), userSelectCQL, "u_1"), false},
		{"scan", db.scan(ctx, scanCQL("SELECT id FROM users WHERE token(id) > ? AND token(id) <= ?"), 1, 2), false},
		{"compare-and-set", db.conditional(ctx, conditionalCQL("UPDATE users SET version = ? WHERE id = ? IF version = ?"), 2, "u_1", 1).Query, false},
		{"batch with a once-only write", casBatch.ready(db.spec), false},
		{"read, copies off", offlineDB(nil).query(ctx, 0, userSelectCQL, "u_1"), false},
		{"read on one node", offlineDB(oneNode).query(ctx, 0, userSelectCQL, "u_1"), false},
		{"idempotent statement built elsewhere", new(gocql.Query).Idempotent(true), false},
	} {
		c := silentA(t)
		first := c.p.Pick(tc.q)().Info().HostID()
		if want := map[bool]string{true: "A", false: "B"}[tc.probe]; first != want {
			t.Errorf("%s: first host %s, want %s (probe %v)", tc.name, first, want, tc.probe)
		}
	}
}

// TestHealthPolicyForgetsUnsentRequests: a request gocql never sent (no
// connection) is forgotten after forgetAfter, so the host is not shunned
// for ever.
func TestHealthPolicyForgetsUnsentRequests(t *testing.T) {
	c := newPolicyClock(t)
	c.send()
	c.wait(forgetAfter / 2)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s, want BCA", got)
	}
	c.wait(forgetAfter)
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s after forgetAfter, want ABC", got)
	}
}

// TestHealthPolicyObservesThroughConfig: the policy hears of attempts
// through the cluster's observers and still calls the configured ones.
func TestHealthPolicyObservesThroughConfig(t *testing.T) {
	counter := &countingObserver{}
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.QueryObserver, cluster.BatchObserver = counter, counter
	c := newPolicyClock(t)
	c.p = newHealthPolicy(fixedPolicy{hosts: c.hosts}, cluster)
	c.p.now = func() time.Time { return c.at }
	a := c.send()
	c.send()
	c.wait(2 * quiet)
	if got := c.plan(); got != "BCA" {
		t.Fatalf("plan %s, want BCA", got)
	}
	cluster.QueryObserver.ObserveQuery(context.Background(), gocql.ObservedQuery{Host: a})
	cluster.BatchObserver.ObserveBatch(context.Background(), gocql.ObservedBatch{Host: a, Err: errors.New("connection reset")})
	if counter.queries != 1 || counter.batches != 1 {
		t.Fatalf("configured observers saw %d queries and %d batches, want 1 and 1", counter.queries, counter.batches)
	}
	if got := c.plan(); got != "ABC" {
		t.Fatalf("plan %s after A answered, want ABC", got)
	}
}

type countingObserver struct{ queries, batches int }

func (o *countingObserver) ObserveQuery(context.Context, gocql.ObservedQuery) { o.queries++ }
func (o *countingObserver) ObserveBatch(context.Context, gocql.ObservedBatch) { o.batches++ }

// TestPlanGetsOneSecondPass: a plan that runs out goes through its hosts
// once more after replanPause (the pools gocql found empty have had time
// to open connections again), then ends; a statement whose context ends
// during the pause gets no second pass.
func TestPlanGetsOneSecondPass(t *testing.T) {
	c := newPolicyClock(t)
	var paused []time.Duration
	c.p.pause = func(_ context.Context, d time.Duration) bool {
		paused = append(paused, d)
		return true
	}
	next := c.p.Pick(nil)
	var ids string
	for h := next(); h != nil; h = next() {
		ids += h.Info().HostID()
		if len(ids) > 12 {
			t.Fatalf("the plan never ends: %s...", ids)
		}
	}
	if ids != "ABCABC" {
		t.Fatalf("plan %s, want ABCABC (two passes)", ids)
	}
	if len(paused) != 1 || paused[0] != replanPause {
		t.Fatalf("paused %v, want once for %s before the second pass", paused, replanPause)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q := offlineDB(nil).query(ctx, 0, userSelectCQL, "u_1")
	c.p.pause = sleep
	next = c.p.Pick(q)
	ids = ""
	for h := next(); h != nil; h = next() {
		ids += h.Info().HostID()
	}
	if ids != "ABC" {
		t.Fatalf("plan %s for a statement whose context ended, want ABC (no second pass)", ids)
	}
}

// BenchmarkHostPolicy is what the host policy adds to a statement's
// attempt: its plan over three healthy hosts, the first host taken (and
// noted as sent to), the attempt's end noted.
func BenchmarkHostPolicy(b *testing.B) {
	var hosts []*gocql.HostInfo
	for _, id := range []string{"A", "B", "C"} {
		h := &gocql.HostInfo{}
		h.SetHostID(id)
		hosts = append(hosts, h)
	}
	p := newHealthPolicy(fixedPolicy{hosts: hosts}, nil)
	b.ReportAllocs()
	for b.Loop() {
		h := p.Pick(nil)().Info()
		p.ended(h, nil)
	}
}
