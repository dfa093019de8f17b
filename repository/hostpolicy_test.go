package repository

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"
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
// tried again only by an idempotent statement (sent on after the
// speculative delay if it still hangs), one at a time and at most once
// every probeEvery; once it answers it is back in its place. Before, it
// came first again as soon as nothing waited on it, and every statement
// of the next quiet waited out the timeout on it once more.
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
	if h := c.p.Pick(new(gocql.Query).Idempotent(true))().Info(); h != a {
		t.Fatalf("an idempotent statement sent to %s, want A (the probe)", h.HostID())
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
