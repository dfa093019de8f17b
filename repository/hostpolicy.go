package repository

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// A replica that stops answering (a hung process, a long pause) keeps its
// connections open, so gocql keeps routing a third of all partitions to it
// and waits out the timeout on each; its heartbeat drops the connections
// only after about a minute (issue 25). healthPolicy wraps the token-aware
// policy and sends a host that has requests waiting on it and has not
// answered anything for a while to the back of every plan, as the DataStax
// Java driver's DefaultLoadBalancingPolicy does. The other replicas then
// coordinate, and the node is used again as soon as it answers.
//
// A host goes to the back when at least stuckPending of the requests sent
// to it have waited longer than quiet, and nothing has come back from it
// within quiet. A request waits until gocql observes its attempt end (an
// answer, a timeout, a cancelled context). Requests the driver never sends
// (no connection in the host's pool) would wait forever: they are
// forgotten after forgetAfter, longer than any attempt.
const (
	// quiet is well below the request deadline and the driver's timeout,
	// and above the p99 of one statement on a healthy (loaded, two-core)
	// node, so that a busy node is not mistaken for a hung one; when it
	// is, the cost is only that the other replicas coordinate for a while.
	quiet = 200 * time.Millisecond
	// stuckPending is one: at the load of one user, a hung replica holds
	// one request at a time, and its next users should go elsewhere too.
	stuckPending = 1
	// forgetAfter is past the longest attempt (the client timeout, 5 s by
	// default). A hung host whose waiting requests have all timed out is
	// tried again: the first requests after that are how it is seen to
	// answer again.
	forgetAfter = 12 * time.Second
)

// healthPolicy is a gocql.HostSelectionPolicy that reorders its inner
// policy's plans by the hosts' health (see quiet).
type healthPolicy struct {
	gocql.HostSelectionPolicy
	now func() time.Time

	mu    sync.Mutex
	hosts map[string]*hostHealth
}

// hostHealth is what healthPolicy knows of one host.
type hostHealth struct {
	// sent are when requests now waiting were sent, oldest first; an
	// ended attempt removes the oldest (which one ended does not matter
	// to how many still wait).
	sent []time.Time
	// answered is when the host last answered anything, errors included.
	answered time.Time
}

// newHealthPolicy wraps inner. cluster's query and batch observers, when
// set, keep seeing every attempt: the policy observes attempts through
// them (gocql tells a policy which host it picked, not when it answered).
func newHealthPolicy(inner gocql.HostSelectionPolicy, cluster *gocql.ClusterConfig) *healthPolicy {
	p := &healthPolicy{HostSelectionPolicy: inner, now: time.Now, hosts: map[string]*hostHealth{}}
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
// has answered nothing within quiet; p.mu is held.
func (p *healthPolicy) stuck(h *gocql.HostInfo, now time.Time) bool {
	s := p.health(h)
	for len(s.sent) > 0 && now.Sub(s.sent[0]) > forgetAfter {
		s.sent = s.sent[1:]
	}
	if now.Sub(s.answered) <= quiet {
		return false
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
func (p *healthPolicy) Pick(q gocql.ExecutableQuery) gocql.NextHost {
	inner := p.HostSelectionPolicy.Pick(q)
	var plan []gocql.SelectedHost
	planned := false
	return func() gocql.SelectedHost {
		if !planned {
			planned = true
			plan = p.reorder(inner)
		}
		if len(plan) == 0 {
			return nil
		}
		h := plan[0]
		plan = plan[1:]
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

// reorder drains the inner plan (a handful of hosts) and moves the stuck
// ones to its end.
func (p *healthPolicy) reorder(inner gocql.NextHost) []gocql.SelectedHost {
	var ok, back []gocql.SelectedHost
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for h := inner(); h != nil; h = inner() {
		if info := h.Info(); info != nil && p.stuck(info, now) {
			back = append(back, h)
		} else {
			ok = append(ok, h)
		}
	}
	return append(ok, back...)
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
		s.sent = s.sent[1:]
	}
	if answered(err) {
		s.answered = p.now()
	}
}

// answered reports whether an attempt that ended with err heard from its
// host: success, or an error the host sent (a coordinator's timeout or
// unavailable is an answer: the node itself is alive).
func answered(err error) bool {
	var reqErr gocql.RequestError
	return err == nil || errors.As(err, &reqErr)
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

// HostUp forgets what was waiting on a host that comes back.
func (p *healthPolicy) HostUp(h *gocql.HostInfo) {
	p.forget(h)
	p.HostSelectionPolicy.HostUp(h)
}

// HostDown forgets what was waiting on a host gocql now knows is down.
func (p *healthPolicy) HostDown(h *gocql.HostInfo) {
	p.forget(h)
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
