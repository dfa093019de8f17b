package repository

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// A replica that stops answering (a hung process, a long pause) keeps its
// connections open, so gocql keeps routing a third of all partitions to it
// and waits out the timeout on each; its heartbeat drops the connections
// only after about 40 s (six failures 5 s apart, each waiting the timeout;
// docs/design/node-faults.md). healthPolicy wraps the token-aware policy
// (hostSelection: DC-aware with a local data centre) and sends a host that
// has requests waiting on it and has not answered anything for a while to
// the back of every plan, as the DataStax Java driver's
// DefaultLoadBalancingPolicy does. The other replicas then coordinate, and
// the node is used again as soon as it answers.
//
// A host goes to the back when at least stuckPending of the requests sent
// to it have waited longer than quiet, and nothing has come back from it
// within quiet. A request waits until gocql observes its attempt end (an
// answer, a timeout, a cancelled context). Requests the driver never sends
// (no connection in the host's pool) would wait forever: they are
// forgotten after forgetAfter, longer than any attempt.
//
// A host stays at the back after its waiting requests have timed out, as
// long as it has not answered since: put first again once nothing waits
// on it, it would make a third of the next statements wait out the
// timeout again, and a hung node would cost every timeout what it cost in
// its first (the nemesis measured a hung node's windows at 0.17 of the
// healthy rate so). Whether it answers again is learnt from a probe: at
// most once every probeEvery, and only when nothing waits on it, the plan
// of a statement that carries a speculative copy keeps the silent host in
// its place. Its copy goes to the next host after the speculative delay,
// so a probe of a host still hung costs that statement the delay, not the
// timeout. A statement without a copy is never a probe: one that
// must not be sent twice, but also a read at SERIAL (a copy would duel
// with it) and a scan (idempotent, sent again after an error, but never
// copied), which would wait out the whole timeout on a hung host, once a
// second. With copies off (or one node) nothing probes: a silent host
// comes back when it answers a statement that reached it past the other
// hosts of its plan, or when the driver hears it go down and up.
const (
	// quiet is well below the request deadline and the driver's timeout,
	// and above the p99 of one statement on a healthy (loaded, two-core)
	// node, so that a busy node is not mistaken for a hung one; when it
	// is, the cost is only that the other replicas coordinate for a while.
	quiet = 200 * time.Millisecond
	// stuckPending is one: at the load of one user, a hung replica holds
	// one request at a time, and its next users should go elsewhere too.
	stuckPending = 1
	// forgetAfter is past the longest attempt (SHELF_CASSANDRA_TIMEOUT, 2 s
	// by default; with its retries it fits in SHELF_REQUEST_TIMEOUT, 10 s by
	// default). A hung host whose waiting requests have all timed out is
	// tried again: the first requests after that are how it is seen to
	// answer again.
	forgetAfter = 12 * time.Second
	// probeEvery is how often a silent host is tried by a statement with
	// a speculative copy.
	probeEvery = time.Second
	// newlyUp is how long a host that came back (gocql saw it down, then
	// connected to it again) is spared most of the coordinating; keepNewlyUp
	// is the share of plans that keep it in its place meanwhile (the DataStax
	// Java driver's DefaultLoadBalancingPolicy: a minute, one plan in four).
	// A node that has just started answers CQL while its JIT is cold, hints
	// are replayed to it and it re-prepares every statement: measured in a
	// rolling restart on two cores (docs/design/node-faults.md), the next
	// node's drain left it one of the two replicas of every quorum, and
	// the requests it coordinated timed out on it (idle seconds). As a
	// replica it is still needed; as a coordinator it is not.
	newlyUp     = time.Minute
	keepNewlyUp = 4
	// replanPause is how long a statement whose plan ran out waits before
	// its plan's second and last pass (see Pick): long enough for gocql to
	// open a connection again in a pool whose connections it closed
	// (Pick asks the pool to refill), short beside a request's deadline.
	replanPause = 100 * time.Millisecond
)

// healthPolicy is a gocql.HostSelectionPolicy that reorders its inner
// policy's plans by the hosts' health (see quiet).
type healthPolicy struct {
	gocql.HostSelectionPolicy
	now func() time.Time
	// pause waits d, or until ctx ends (false); a test's is instant.
	pause func(ctx context.Context, d time.Duration) bool

	// keep reports whether this plan keeps a newly up host in its place:
	// one in keepNewlyUp (a test's says so).
	keep func() bool

	mu    sync.Mutex
	hosts map[string]*hostHealth
	// down are the hosts gocql marked down; back is when each host that
	// was down came up again.
	down map[string]bool
	back map[string]time.Time
}

// hostHealth is what healthPolicy knows of one host.
type hostHealth struct {
	// sent are when requests now waiting were sent, oldest first; an
	// ended attempt removes the oldest (which one ended does not matter
	// to how many still wait).
	sent []time.Time
	// answered is when the host last answered anything, errors included.
	answered time.Time
	// silent is when an attempt on the host last ended without a word from
	// it (the client's timeout, a cancelled request); after answered, the
	// host is silent.
	silent time.Time
	// probed is when a statement with a copy last probed the silent host.
	probed time.Time
}

// newHealthPolicy wraps inner. cluster's query and batch observers, when
// set, keep seeing every attempt: the policy observes attempts through
// them (gocql tells a policy which host it picked, not when it answered).
func newHealthPolicy(inner gocql.HostSelectionPolicy, cluster *gocql.ClusterConfig) *healthPolicy {
	p := &healthPolicy{HostSelectionPolicy: inner, now: time.Now, pause: sleep, keep: func() bool { return rand.IntN(keepNewlyUp) == 0 },
		hosts: map[string]*hostHealth{}, down: map[string]bool{}, back: map[string]time.Time{}}
	if cluster != nil {
		o := observers{p, cluster.QueryObserver, cluster.BatchObserver}
		cluster.QueryObserver, cluster.BatchObserver = o, o
	}
	return p
}

// hostKey names a host across the HostInfo values gocql keeps for it.
func hostKey(h *gocql.HostInfo) string {
	if id := h.HostID(); id != "" {
		return id
	}
	return h.ConnectAddressAndPort()
}

// dropOldest forgets the oldest of the requests waiting (there is one).
// The last one leaves the array to the next (a slice advanced past its
// last element has no room left, and each request to a quiet host
// allocated one).
func (s *hostHealth) dropOldest() {
	if len(s.sent) == 1 {
		s.sent = s.sent[:0]
		return
	}
	s.sent = s.sent[1:]
}

// health returns the host's record; p.mu is held.
func (p *healthPolicy) health(h *gocql.HostInfo) *hostHealth {
	k := hostKey(h)
	s := p.hosts[k]
	if s == nil {
		s = &hostHealth{}
		p.hosts[k] = s
	}
	return s
}

// stuck reports a host that has requests waiting longer than quiet and
// has answered nothing within quiet, or that has been silent since its
// last answer and is not probed by this plan (probe: the plan's statement
// carries a speculative copy); p.mu is held.
func (p *healthPolicy) stuck(h *gocql.HostInfo, now time.Time, probe bool) bool {
	s := p.health(h)
	for len(s.sent) > 0 && now.Sub(s.sent[0]) > forgetAfter {
		s.dropOldest()
	}
	if now.Sub(s.answered) <= quiet {
		return false
	}
	if s.silent.After(s.answered) {
		if probe && len(s.sent) == 0 && now.Sub(s.probed) >= probeEvery {
			s.probed = now
			return false
		}
		return true
	}
	waiting := 0
	for _, t := range s.sent {
		if now.Sub(t) <= quiet {
			break
		}
		waiting++
	}
	return waiting >= stuckPending
}

// Pick returns the inner policy's plan with the stuck hosts moved to its
// end, each group in the inner order (token-aware: replicas first).
//
// A plan that runs out gets a second pass, a fresh plan, after
// replanPause. gocql asks for the next host for a speculative copy,
// after a failed attempt its retry policy sends on (an idempotent
// statement within its retries, or a statement its coordinator refused
// unrun: retryRefused), and after skipping a host it sent nothing to
// (down, or no connection in its pool): so the second pass sends nothing
// a statement did not allow.
// It is what a rolling restart needs (measured: most of its 503s were
// plans that ran out): the draining node's connections close, statements
// in flight on a healthy node's connection fail with it when timeouts
// close it, and for a moment every pool of the plan may be empty; gocql
// then answers "no hosts available", or the last error, and a speculative
// copy still out loses to that error (the first answer wins, error or
// not). By the second pass the pools have connections again.
func (p *healthPolicy) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	// One variable, so that the closure keeps one allocation of state,
	// not one per variable it changes.
	var st struct {
		plan   []gocql.SelectedHost
		passes int
	}
	return func() gocql.SelectedHost {
		if len(st.plan) == 0 {
			if st.passes == 2 || (st.passes == 1 && !p.pause(contextOf(q), replanPause)) {
				return nil
			}
			st.passes++
			st.plan = p.reorder(p.HostSelectionPolicy.Pick(q), copied(q))
		}
		if len(st.plan) == 0 {
			return nil
		}
		h := st.plan[0]
		st.plan = st.plan[1:]
		// gocql skips a host that is down without sending it anything.
		if info := h.Info(); info.IsUp() {
			p.mu.Lock()
			s := p.health(info)
			s.sent = append(s.sent, p.now())
			p.mu.Unlock()
		}
		return h
	}
}

// copiesKey is the context key of withCopies.
type copiesKey struct{}

// withCopies marks ctx as a statement's that goes out with the
// speculation sp (nil: none, ctx unchanged). gocql shows a policy no
// statement's speculation, only its context.
func withCopies(ctx context.Context, sp gocql.SpeculativeExecutionPolicy) context.Context {
	if sp == nil {
		return ctx
	}
	return context.WithValue(ctx, copiesKey{}, sp)
}

// contextOf is q's context (Background when it has none).
func contextOf(q gocql.ExecutableQuery) context.Context {
	if c, ok := q.(interface{ Context() context.Context }); ok && c.Context() != nil {
		return c.Context()
	}
	return context.Background()
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// copied reports whether q will get a speculative copy if its first host
// does not answer in time: idempotent (gocql copies nothing else), marked
// by withCopies, and a speculation that allows a copy now (none on one
// node).
func copied(q gocql.ExecutableQuery) bool {
	if q == nil || !q.IsIdempotent() {
		return false
	}
	sp, _ := contextOf(q).Value(copiesKey{}).(gocql.SpeculativeExecutionPolicy)
	return sp != nil && sp.Attempts() > 0
}

// reorder drains the inner plan (a handful of hosts) and moves the stuck
// ones to its end, and in most plans a newly up host behind the others
// that answer; probe says whether the plan's statement may probe a
// silent host (it carries a speculative copy: copied).
func (p *healthPolicy) reorder(inner gocql.NextHost, probe bool) []gocql.SelectedHost {
	// Room for a plan of a few nodes at once (appending one by one took
	// an allocation at the first, second and third host).
	ok := make([]gocql.SelectedHost, 0, 6)
	var later, back []gocql.SelectedHost
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	keep := len(p.back) == 0 || p.keep()
	for h := inner(); h != nil; h = inner() {
		info := h.Info()
		switch {
		case info != nil && p.stuck(info, now, probe):
			back = append(back, h)
		case info != nil && !keep && p.newlyUp(info, now):
			later = append(later, h)
		default:
			ok = append(ok, h)
		}
	}
	return append(append(ok, later...), back...)
}

// newlyUp reports whether h came back up within newlyUp; p.mu is held.
func (p *healthPolicy) newlyUp(h *gocql.HostInfo, now time.Time) bool {
	k := hostKey(h)
	at, ok := p.back[k]
	if ok && now.Sub(at) >= newlyUp {
		delete(p.back, k)
		return false
	}
	return ok
}

// ended records the end of an attempt on h: the host answered unless the
// attempt ended without a word from it.
func (p *healthPolicy) ended(h *gocql.HostInfo, err error) {
	if h == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.health(h)
	if len(s.sent) > 0 {
		s.dropOldest()
	}
	if answered(err) {
		s.answered = p.now()
	} else {
		s.silent = p.now()
	}
}

// answered reports whether an attempt that ended with err heard from its
// host: success, or an error the host sent (a coordinator's timeout or
// unavailable is an answer: the node itself is alive).
func answered(err error) bool {
	if err == nil {
		return true
	}
	var reqErr gocql.RequestError // on the heap (errors.As): only for errors
	return errors.As(err, &reqErr)
}

// AddHosts hands the first hosts to the inner policy at once when it can
// (the token-aware policy then builds its ring once), as gocql would.
func (p *healthPolicy) AddHosts(hosts []*gocql.HostInfo) {
	if bulk, ok := p.HostSelectionPolicy.(interface{ AddHosts([]*gocql.HostInfo) }); ok {
		bulk.AddHosts(hosts)
		return
	}
	for _, h := range hosts {
		p.HostSelectionPolicy.AddHost(h)
	}
}

// HostUp forgets what was waiting on a host that comes back, and notes
// when it came back if gocql had marked it down (gocql also calls HostUp
// when it first connects, and when it refills a pool it never gave up).
func (p *healthPolicy) HostUp(h *gocql.HostInfo) {
	p.forget(h)
	p.mu.Lock()
	if k := hostKey(h); p.down[k] {
		delete(p.down, k)
		p.back[k] = p.now()
	}
	p.mu.Unlock()
	p.HostSelectionPolicy.HostUp(h)
}

// HostDown forgets what was waiting on a host gocql now knows is down.
func (p *healthPolicy) HostDown(h *gocql.HostInfo) {
	p.forget(h)
	p.mu.Lock()
	k := hostKey(h)
	p.down[k] = true
	delete(p.back, k)
	p.mu.Unlock()
	p.HostSelectionPolicy.HostDown(h)
}

func (p *healthPolicy) forget(h *gocql.HostInfo) {
	p.mu.Lock()
	delete(p.hosts, hostKey(h))
	p.mu.Unlock()
}

// observers tells the policy of every attempt, then the configured
// observers (metrics), if any.
type observers struct {
	p       *healthPolicy
	queries gocql.QueryObserver
	batches gocql.BatchObserver
}

// ObserveQuery records an ended attempt of a statement.
func (o observers) ObserveQuery(ctx context.Context, q gocql.ObservedQuery) {
	o.p.ended(q.Host, q.Err)
	if o.queries != nil {
		o.queries.ObserveQuery(ctx, q)
	}
}

// ObserveBatch records an ended attempt of a batch.
func (o observers) ObserveBatch(ctx context.Context, b gocql.ObservedBatch) {
	o.p.ended(b.Host, b.Err)
	if o.batches != nil {
		o.batches.ObserveBatch(ctx, b)
	}
}
