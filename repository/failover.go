package repository

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/gocql/gocql"
)

// attemptsConfig sets how the driver tries a statement again
// (docs/design/faults.md, "Attempts"): c.Timeout bounds each attempt (gocql's
// Timeout is per connection request, not per statement), an idempotent
// statement goes to the next node after a node could not answer, and a
// connection that keeps timing out is closed, so the node it led to is
// left for the others within about one timeout: gocql's heartbeat alone
// (every 5 s, closing after 6 failures, each waiting the timeout) takes
// about 40 s, and a hung node's kernel keeps its TCP connections and
// keepalives alive. The copies of slow statements are set per statement
// (DB.spec), since gocql has no default for them.
func attemptsConfig(cluster *gocql.ClusterConfig, c ConnConfig) {
	cluster.RetryPolicy = retryIdempotent{retries: c.Retries}
	setTimeoutLimit(c.TimeoutLimit)
}

// timeoutLimitOnce sets gocql.TimeoutLimit before the first session opens:
// it is a package variable gocql reads without a lock, so it is written
// once, before any connection reads it.
var timeoutLimitOnce sync.Once

func setTimeoutLimit(n int) {
	timeoutLimitOnce.Do(func() {
		// Marked deprecated in v1.7.0, but its only way to close a
		// connection that stopped answering: its heartbeat takes about
		// 40 s (attemptsConfig).
		gocql.TimeoutLimit = int64(n)
	})
}

// retryIdempotent sends a statement flagged idempotent again, up to
// retries times, each time to the next node of its plan, after an error
// that says a node could not answer (a timeout, unavailable, overloaded, a
// lost connection); anything else is the answer. A statement not flagged
// idempotent is never sent again: gocql v1.7.0 asks the policy about every
// statement, idempotent or not.
type retryIdempotent struct{ retries int }

// Attempt says whether q may be sent again.
func (r retryIdempotent) Attempt(q gocql.RetryableQuery) bool {
	i, ok := q.(interface{ IsIdempotent() bool })
	return ok && i.IsIdempotent() && q.Attempts() <= r.retries
}

// GetRetryType sends it to the next node, or gives up.
func (r retryIdempotent) GetRetryType(err error) gocql.RetryType {
	if isUnavailable(err) {
		return gocql.RetryNextHost
	}
	return gocql.Rethrow
}

// retryRefused sends a statement that must not run twice (a
// compare-and-set, a once-only write) to the next node of its plan only
// when its coordinator refused it before running it (refusedUnrun), at
// most refusedRetries times: a node shutting down refuses every request
// it receives from the moment it stops serving clients, before its
// connections close, and in a rolling restart those refusals, taken for
// the answer, made most of the compare-and-sets' 503s. Any other error is
// the answer (or, for a compare-and-set, an outcome to read back:
// DB.exec).
type retryRefused struct{}

// refusedRetries is how often a refused statement goes on: to each other
// node of a three-node plan.
const refusedRetries = 2

// Attempt says whether q may go on: the error decides (GetRetryType).
func (retryRefused) Attempt(q gocql.RetryableQuery) bool { return q.Attempts() <= refusedRetries }

// GetRetryType sends a refused statement to the next node.
func (retryRefused) GetRetryType(err error) gocql.RetryType {
	if refusedUnrun(err) {
		return gocql.RetryNextHost
	}
	return gocql.Rethrow
}

// refusedUnrun reports an error by which the coordinator says it did not
// run the statement at all: Cassandra's native transport answers
// Overloaded "Server is shutting down" to every request on a connection
// whose server is stopping, before dispatching it (its Dispatcher: the
// only way, without a new protocol version, to say "going away" without
// the client dropping the connection).
func refusedUnrun(err error) bool {
	var reqErr gocql.RequestError
	return errors.As(err, &reqErr) && reqErr.Code() == gocql.ErrCodeOverloaded &&
		strings.Contains(reqErr.Message(), "shutting down")
}

// speculation sends a copy of a slow idempotent statement to the next node
// of its plan once the first has not answered within delay, up to copies
// copies. It sends no more copies than there are other nodes: in gocql
// v1.7.0 a copy that finds no node left answers "no connections", and the
// first answer wins, error or not (apache/cassandra-gocql-driver#1707), so
// on one node every read slower than delay would fail. It learns the nodes
// as the driver does, as the cluster's HostFilter (accepting them all); a
// node removed from the ring is still counted until the process restarts.
type speculation struct {
	copies int
	delay  time.Duration
	mu     sync.Mutex
	nodes  map[string]bool
	others atomic.Int32
}

// newSpeculation returns the policy; copies 0 turns it off.
func newSpeculation(copies int, delay time.Duration) *speculation {
	return &speculation{copies: copies, delay: delay, nodes: map[string]bool{}}
}

// Attempts is how many copies a statement may get now.
func (s *speculation) Attempts() int { return min(s.copies, int(s.others.Load())) }

// Delay is how long the first attempt has before a copy goes out.
func (s *speculation) Delay() time.Duration { return s.delay }

// Accept counts a node the driver learned of, and keeps it.
func (s *speculation) Accept(h *gocql.HostInfo) bool {
	key := net.JoinHostPort(h.ConnectAddress().String(), strconv.Itoa(h.Port()))
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.nodes[key] {
		s.nodes[key] = true
		s.others.Store(int32(len(s.nodes) - 1))
	}
	return true
}

// speculations holds the speculation of each session Connect opened, for
// NewDB (gocql keeps no place for it on a session). Keys are weak: a
// session closed and dropped leaves only its small entry.
var speculations sync.Map // weak.Pointer[gocql.Session] -> *speculation

// speculationOf is the policy Connect gave s, or nil (no copies).
func speculationOf(s *gocql.Session) gocql.SpeculativeExecutionPolicy {
	if s == nil {
		return nil
	}
	if v, ok := speculations.Load(weak.Make(s)); ok {
		if sp := v.(*speculation); sp.copies > 0 {
			return sp
		}
	}
	return nil
}
