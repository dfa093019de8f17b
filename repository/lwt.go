package repository

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"shelf/domain"
)

// DB is what every store shares: the session, the serial consistency for
// lightweight transactions and SERIAL reads, and an optional fault
// injector for tests.
type DB struct {
	Session gocqlx.Session
	// Serial is the read consistency of SERIAL reads: LOCAL_SERIAL (default)
	// or SERIAL, the same wire values as the serial consistencies.
	Serial gocql.Consistency
	// Faults, when set, is called before and after every lightweight
	// transaction; see FaultFunc. Nil in production.
	Faults FaultFunc
	// OnLWT, when set, is told each transaction's outcome: applied,
	// not_applied, ambiguous_resolved (an ambiguous answer settled by a
	// SERIAL read) or failed.
	OnLWT func(outcome string)
}

// NewDB wraps a session; serial is "SERIAL" or "LOCAL_SERIAL".
func NewDB(s gocqlx.Session, serial string) *DB {
	c := gocql.Consistency(gocql.LocalSerial)
	if serial == "SERIAL" {
		c = gocql.Consistency(gocql.Serial)
	}
	return &DB{Session: s, Serial: c}
}

// FaultPoint says where a fault is injected.
type FaultPoint int

// The fault points around one lightweight transaction.
const (
	// BeforeLWT: the statement is not sent; a non-nil error is its answer.
	BeforeLWT FaultPoint = iota
	// AfterLWT: the statement ran; a non-nil error replaces its answer, as
	// when the answer is lost or times out after Cassandra applied it.
	AfterLWT
)

// FaultFunc injects faults into lightweight transactions by name (e.g.
// "usernames.claim", "users.activate"). Tests use it to prove that
// ambiguous outcomes are resolved (U5).
type FaultFunc func(stmt string, at FaultPoint) error

// lwt is one lightweight transaction and how to learn its outcome when the
// answer is ambiguous.
type lwt struct {
	name string
	// run executes it once and reports whether it applied.
	run func(ctx context.Context) (bool, error)
	// resolve reads the row back at SERIAL (which completes any Paxos round
	// in flight) and says whether it holds this write; again asks for the
	// statement to be run once more (it did not apply and nothing stands in
	// its way).
	resolve func(ctx context.Context) (applied, again bool, err error)
}

// maxLWTAttempts bounds how often one transaction is re-run after
// ambiguous answers that turned out not applied.
const maxLWTAttempts = 5

// resolveTimeout bounds the SERIAL read that settles an ambiguous answer; it
// runs on a context of its own, since the request's may be what expired.
const resolveTimeout = 10 * time.Second

// exec runs a lightweight transaction, resolving ambiguous outcomes (U5):
// never guessed, always read back at SERIAL.
func (db *DB) exec(ctx context.Context, op lwt) (bool, error) {
	applied, resolved, err := db.execOnce(ctx, op)
	if db.OnLWT != nil {
		switch {
		case err != nil:
			db.OnLWT("failed")
		case resolved:
			db.OnLWT("ambiguous_resolved")
		case applied:
			db.OnLWT("applied")
		default:
			db.OnLWT("not_applied")
		}
	}
	return applied, err
}

// execOnce is exec without the outcome report; resolved says a SERIAL read
// settled the answer.
func (db *DB) execOnce(ctx context.Context, op lwt) (applied, resolved bool, err error) {
	var lastErr error
	for attempt := 0; attempt < maxLWTAttempts; attempt++ {
		applied, err := db.runOnce(ctx, op)
		if err == nil {
			return applied, attempt > 0, nil
		}
		if !isAmbiguous(err) {
			return false, false, dbErr(op.name, err)
		}
		lastErr = err
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
		applied, again, rerr := op.resolve(rctx)
		cancel()
		if rerr != nil {
			return false, false, fmt.Errorf("%s: outcome unknown (%v), and reading it back at SERIAL failed: %w: %w", op.name, err, domain.ErrUnavailable, rerr)
		}
		if !again {
			return applied, true, nil
		}
		if ctx.Err() != nil {
			return false, false, fmt.Errorf("%s: %w: %w: %w", op.name, domain.ErrNotApplied, domain.ErrUnavailable, ctx.Err())
		}
	}
	return false, false, fmt.Errorf("%s: %w after %d ambiguous attempts: %w: %w", op.name, domain.ErrNotApplied, maxLWTAttempts, domain.ErrUnavailable, lastErr)
}

// dbErr wraps a driver error for the domain: errors that say the cluster
// could not answer (unavailable, timeouts, no connection, overloaded) also
// match domain.ErrUnavailable, so callers answer 503 and clients retry;
// anything else is a plain (internal) error.
func dbErr(op string, err error) error {
	if isUnavailable(err) {
		return fmt.Errorf("%s: %w: %w", op, domain.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isUnavailable reports errors that mean "try again later".
func isUnavailable(err error) bool {
	var (
		unavailable *gocql.RequestErrUnavailable
		readTimeout *gocql.RequestErrReadTimeout
		reqErr      gocql.RequestError
	)
	if errors.As(err, &unavailable) || errors.As(err, &readTimeout) || isAmbiguous(err) ||
		errors.Is(err, gocql.ErrNoConnections) || errors.Is(err, gocql.ErrSessionClosed) {
		return true
	}
	if errors.As(err, &reqErr) {
		switch reqErr.Code() {
		case gocql.ErrCodeOverloaded, gocql.ErrCodeBootstrapping, gocql.ErrCodeUnavailable,
			gocql.ErrCodeReadTimeout, gocql.ErrCodeWriteTimeout:
			return true
		}
	}
	return false
}

func (db *DB) runOnce(ctx context.Context, op lwt) (bool, error) {
	if db.Faults != nil {
		if err := db.Faults(op.name, BeforeLWT); err != nil {
			return false, err
		}
	}
	applied, err := op.run(ctx)
	if db.Faults != nil {
		if ferr := db.Faults(op.name, AfterLWT); ferr != nil {
			return false, ferr
		}
	}
	return applied, err
}

// isAmbiguous reports errors after which a write may or may not have been
// applied: timeouts on either side, "CAS result unknown", and connections
// lost while the request was out.
func isAmbiguous(err error) bool {
	var (
		writeTimeout *gocql.RequestErrWriteTimeout
		casUnknown   *gocql.RequestErrCASWriteUnknown
		netErr       net.Error
	)
	return errors.As(err, &writeTimeout) ||
		errors.As(err, &casUnknown) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// cas runs one conditional statement without driver retries (exec decides
// what to retry) and reports whether it applied. When it did not, gocqlx's
// GetCAS scans the columns Cassandra sent back into existing, a pointer to a
// row struct: the row in the way for IF NOT EXISTS, the condition's columns
// otherwise. existing is nil where only "applied" matters; ExecCAS then
// drops those columns.
func (db *DB) cas(ctx context.Context, existing any, stmt string, args ...any) (bool, error) {
	q := db.Session.ContextQuery(ctx, stmt, nil).Bind(args...)
	q.RetryPolicy(nil)
	if existing == nil {
		return q.ExecCASRelease()
	}
	return q.GetCASRelease(existing)
}

// newWriteID tags one write so a SERIAL read can recognize it.
func newWriteID() string { return gocql.TimeUUID().String() }
