package repository

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// recorder records what attempts.apply sets on a statement.
type recorder struct {
	idempotent bool
	// retry is the policy set on the statement: "" none set (the
	// cluster's), "none" (cleared), "refused" (retryRefused).
	retry string
	spec  gocql.SpeculativeExecutionPolicy
}

func (r *recorder) Idempotent(v bool) *gocql.Query { r.idempotent = v; return nil }

func (r *recorder) RetryPolicy(p gocql.RetryPolicy) *gocql.Query {
	switch p.(type) {
	case nil:
		r.retry = "none"
	case retryRefused:
		r.retry = "refused"
	default:
		r.retry = "other"
	}
	return nil
}

func (r *recorder) SetSpeculativeExecutionPolicy(sp gocql.SpeculativeExecutionPolicy) *gocql.Query {
	r.spec = sp
	return nil
}

// TestEachKindIsSentAsItAllows: reads and idempotent writes are flagged
// idempotent (so the cluster's retry policy sends them again) and copied
// when slow; a read at SERIAL and a scan are sent again, never copied; a
// compare-and-set and a once-only write are neither, and go on only when
// refused unrun (retryRefused, in place of the cluster's policy); a schema
// change loses the cluster's retry policy altogether.
func TestEachKindIsSentAsItAllows(t *testing.T) {
	t.Parallel()
	spec := newSpeculation(1, time.Millisecond)
	for _, tc := range []struct {
		name          string
		a             attempts
		again, copied bool
		retry         string
	}{
		{"read", readCQL("").at(0), true, true, ""},
		{"read at LOCAL_QUORUM", readCQL("").at(gocql.LocalQuorum), true, true, ""},
		{"read at SERIAL", readCQL("").at(gocql.Consistency(gocql.Serial)), true, false, ""},
		{"read at LOCAL_SERIAL", readCQL("").at(gocql.Consistency(gocql.LocalSerial)), true, false, ""},
		{"scan", scanCQL("").attempts(), true, false, ""},
		{"versioned write", versionedCQL("").attempts(), true, true, ""},
		{"repeatable write", repeatableCQL("").attempts(), true, true, ""},
		{"once-only write", onceCQL("").attempts(), false, false, "refused"},
		{"compare-and-set", conditionalCQL("").attempts(), false, false, "refused"},
		{"schema change", schemaCQL("").attempts(), false, false, "none"},
	} {
		var r recorder
		tc.a.apply(&r, spec)
		if r.idempotent != tc.again || (r.spec != nil) != tc.copied || r.retry != tc.retry {
			t.Errorf("%s: idempotent %v, copied %v, retry policy %q; want %v, %v, %q",
				tc.name, r.idempotent, r.spec != nil, r.retry, tc.again, tc.copied, tc.retry)
		}
		// Without a speculation (one node, or copies off) nothing is copied.
		var none recorder
		tc.a.apply(&none, nil)
		if none.spec != nil || none.idempotent != tc.again {
			t.Errorf("%s without a speculation: %+v", tc.name, none)
		}
	}
}

// TestAQueryIsFlaggedByItsKind: the flag gocql itself reads (speculative
// execution only for IsIdempotent statements) is set on a real query.
func TestAQueryIsFlaggedByItsKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    attempts
		want bool
	}{{readCQL("").attempts(), true}, {versionedCQL("").attempts(), true}, {conditionalCQL("").attempts(), false}} {
		q := new(gocql.Query)
		tc.a.apply(q, newSpeculation(1, time.Millisecond))
		if q.IsIdempotent() != tc.want {
			t.Errorf("%+v: IsIdempotent %v", tc.a, q.IsIdempotent())
		}
	}
}

// TestABatchAllowsWhatAllItsEntriesAllow: a batch of versioned writes is
// idempotent (gocql asks every entry); one once-only entry makes the whole
// batch neither sent again nor copied.
func TestABatchAllowsWhatAllItsEntriesAllow(t *testing.T) {
	t.Parallel()
	w := batchOf(new(gocql.Batch))
	w.add(libDeleteCQL, 1)
	w.add(libInsertCQL, 2)
	if !w.b.IsIdempotent() || w.a != (attempts{again: true, twice: true}) {
		t.Fatalf("versioned batch: idempotent %v, allows %+v", w.b.IsIdempotent(), w.a)
	}
	w.add(onceCQL("UPDATE counts SET n = n + 1 WHERE k = ?"), 3)
	if w.b.IsIdempotent() || w.a != (attempts{}) {
		t.Fatalf("batch with a once-only write: idempotent %v, allows %+v", w.b.IsIdempotent(), w.a)
	}
}

// fakeQuery is a statement as the retry policy sees it.
type fakeQuery struct {
	gocql.RetryableQuery
	idempotent bool
	attempts   int
}

func (q fakeQuery) IsIdempotent() bool { return q.idempotent }
func (q fakeQuery) Attempts() int      { return q.attempts }

// TestRetriesOnlyIdempotentStatements: gocql v1.7.0 asks the retry policy
// about every failed statement, idempotent or not; ours sends again only
// idempotent ones, up to its count, to the next node, and only after
// errors that say a node could not answer.
func TestRetriesOnlyIdempotentStatements(t *testing.T) {
	t.Parallel()
	r := retryIdempotent{retries: 2}
	for _, tc := range []struct {
		q    fakeQuery
		want bool
	}{
		{fakeQuery{idempotent: true, attempts: 1}, true},
		{fakeQuery{idempotent: true, attempts: 2}, true},
		{fakeQuery{idempotent: true, attempts: 3}, false},
		{fakeQuery{idempotent: false, attempts: 1}, false},
	} {
		if got := r.Attempt(tc.q); got != tc.want {
			t.Errorf("%+v: Attempt %v, want %v", tc.q, got, tc.want)
		}
	}
	for _, err := range []error{gocql.ErrTimeoutNoResponse, &gocql.RequestErrUnavailable{}, gocql.ErrConnectionClosed, &net.OpError{Op: "read", Err: errors.New("reset")}} {
		if got := r.GetRetryType(err); got != gocql.RetryNextHost {
			t.Errorf("%v: %v, want the next node", err, got)
		}
	}
	if got := r.GetRetryType(errors.New("line 1:0 no viable alternative")); got != gocql.Rethrow {
		t.Errorf("a syntax error is retried: %v", got)
	}
}

// host is a node as the driver describes it to a HostFilter.
func host(ip string) *gocql.HostInfo {
	return (&gocql.HostInfo{}).SetConnectAddress(net.ParseIP(ip))
}

// TestCopiesAreBoundedByTheOtherNodes: a copy needs a node of its own (in
// gocql v1.7.0 a copy that finds none fails the statement), so one node
// gets no copies, and a node the driver reports twice counts once.
func TestCopiesAreBoundedByTheOtherNodes(t *testing.T) {
	t.Parallel()
	sp := newSpeculation(2, 200*time.Millisecond)
	if sp.Attempts() != 0 {
		t.Fatalf("no node known: %d copies", sp.Attempts())
	}
	for _, ip := range []string{"127.0.0.2", "127.0.0.2"} {
		if !sp.Accept(host(ip)) {
			t.Fatal("a node was filtered out")
		}
	}
	if sp.Attempts() != 0 {
		t.Fatalf("one node: %d copies", sp.Attempts())
	}
	sp.Accept(host("127.0.0.3"))
	if sp.Attempts() != 1 {
		t.Fatalf("two nodes: %d copies, want 1", sp.Attempts())
	}
	sp.Accept(host("127.0.0.4"))
	sp.Accept(host("127.0.0.5"))
	if sp.Attempts() != 2 || sp.Delay() != 200*time.Millisecond {
		t.Fatalf("four nodes, 2 copies configured: %d copies after %v", sp.Attempts(), sp.Delay())
	}
}

// serverError is an error frame as gocql hands it over: its code and
// message.
type serverError struct {
	code int
	msg  string
}

func (e serverError) Code() int       { return e.code }
func (e serverError) Message() string { return e.msg }
func (e serverError) Error() string   { return e.msg }

// TestARefusedCompareAndSetGoesToTheNextNode: a statement that must not
// run twice goes on to the next node only when its coordinator refused it
// unrun (a server shutting down), whether or not it is idempotent, at most
// refusedRetries times; a timeout, an unavailable, any other overload are
// the answer.
func TestARefusedCompareAndSetGoesToTheNextNode(t *testing.T) {
	t.Parallel()
	var r retryRefused
	shuttingDown := serverError{gocql.ErrCodeOverloaded, "Server is shutting down"}
	if got := r.GetRetryType(fmt.Errorf("users.update: %w", shuttingDown)); got != gocql.RetryNextHost {
		t.Errorf("a refusal while shutting down: %v, want the next node", got)
	}
	for _, err := range []error{
		gocql.ErrTimeoutNoResponse, gocql.ErrConnectionClosed, gocql.ErrTooManyTimeouts,
		&gocql.RequestErrWriteTimeout{}, &gocql.RequestErrCASWriteUnknown{}, &gocql.RequestErrUnavailable{},
		serverError{gocql.ErrCodeOverloaded, "Too many in flight hints"},
		serverError{gocql.ErrCodeWriteTimeout, "shutting down"},
	} {
		if got := r.GetRetryType(err); got != gocql.Rethrow {
			t.Errorf("%v: %v, want the answer (Rethrow)", err, got)
		}
	}
	for attempts, want := range map[int]bool{1: true, refusedRetries: true, refusedRetries + 1: false} {
		if got := r.Attempt(fakeQuery{attempts: attempts}); got != want {
			t.Errorf("after %d attempts: Attempt %v, want %v", attempts, got, want)
		}
	}
}
