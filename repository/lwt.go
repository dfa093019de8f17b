package repository

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"shelf/domain"
)

// DB is what every store shares: the session, the serial consistency for
// lightweight transactions and SERIAL reads, and the Sender every write
// goes through.
type DB struct {
	Session gocqlx.Session
	// Serial is the one scope of every compare-and-set (DB.conditional) and
	// of every SERIAL read that settles or checks one (DB.query at
	// db.Serial): SERIAL or LOCAL_SERIAL, whose wire values are the same
	// as consistencies'. One scope for all, since Paxos at LOCAL_SERIAL and
	// at SERIAL on one partition do not see each other's rounds, and every
	// LWT row may be written from any data centre (docs/design/regions.md).
	Serial gocql.Consistency
	// Now is the clock of the timestamps this process writes (time.Now;
	// shifted in tests of clock skew: app.ClockOffset).
	Now func() time.Time
	// OnLWT, when set, is told each transaction's outcome: applied,
	// not_applied, ambiguous_resolved (an ambiguous answer settled by a
	// SERIAL read) or failed.
	OnLWT func(outcome string)
	// OnIndexPass, when set, is told after each pass over an index of
	// attempts in progress (by its table's name) how it stood
	// (docs/design/jobs.md#index-start).
	OnIndexPass func(index string, pass IndexPass)
	// sender sends every write (send.go): the DB's own, or a decorator of
	// it (DB.Decorate).
	sender Sender
	// spec copies slow idempotent statements to another node (the
	// speculation Connect gave the session; nil: no copies).
	spec gocql.SpeculativeExecutionPolicy
	// Attempt is the client timeout of one attempt of a statement
	// (SHELF_CASSANDRA_TIMEOUT): the least time the read-back of an
	// ambiguous answer gets when the caller's deadline is nearer
	// (readBackContext).
	Attempt time.Duration
}

// NewDB wraps a session; serial is "SERIAL" or "LOCAL_SERIAL" (the
// scope start-up found safe for the keyspace: internal/app).
func NewDB(s gocqlx.Session, serial string) *DB {
	c := gocql.Consistency(gocql.LocalSerial)
	if serial == "SERIAL" {
		c = gocql.Consistency(gocql.Serial)
	}
	return &DB{Session: s, Serial: c, Now: time.Now, sender: direct{}, spec: speculationOf(s.Session), Attempt: defaultAttempt}
}

// lwt is one lightweight transaction and how to learn its outcome when the
// answer is ambiguous.
type lwt struct {
	name string
	// run executes it once and reports whether it applied.
	run func(ctx context.Context) (bool, error)
	// attempt, when set, stands for run: it gives the next attempt to
	// send, for a statement whose every attempt carries a tag of its own
	// (casTable.create), chosen before the attempt is sent, since a held
	// attempt may be run long after exec answered.
	attempt func() func(ctx context.Context) (bool, error)
	// resolve reads the row back at SERIAL (which completes any Paxos round
	// in flight) and says whether it holds this write; again asks for the
	// statement to be run once more (it did not apply and nothing stands in
	// its way).
	resolve func(ctx context.Context) (applied, again bool, err error)
}

// maxLWTAttempts bounds how often one transaction is re-run after
// ambiguous answers that turned out not applied.
const maxLWTAttempts = 5

// resolveTimeout bounds the SERIAL read that settles an ambiguous answer
// for a caller with no deadline (a worker's pass).
const resolveTimeout = 10 * time.Second

// defaultAttempt is DB.Attempt until the caller sets it: the default of
// SHELF_CASSANDRA_TIMEOUT.
const defaultAttempt = 2 * time.Second

// readBackContext is the context of the SERIAL read that settles an
// ambiguous answer. It does not end with the caller's (whose expiry may be
// what made the answer ambiguous), so it gets at least one attempt; but it
// ends with the caller's deadline when that is further off, never later
// than resolveTimeout: without a quorum the read never settles, and a
// request waiting on it past its own deadline answers nobody (two signups
// took about 20 s to answer 503 with two of three nodes hung,
// docs/benchmarks.md). What it cannot settle in time is ErrOutcomeUnknown.
func (db *DB) readBackContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := resolveTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(resolveTimeout, max(time.Until(deadline), db.Attempt))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), budget)
}

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
//
// The rule (docs/design/faults.md): any attempt may land at any later time
// and any answer may be lost. Every attempt of one transaction carries the
// same tag (write id, op id; a create's each carry one of their own, and
// any of them is the create's), so its outcome is known only from an
// answer that came back, or from the row's tag. Once an attempt went unanswered, a
// later "not applied" proves nothing (the lost attempt may have applied and
// been overwritten since, or may still land), so the row is read back at
// SERIAL once more: our tag there means applied; anything else leaves the
// outcome unknown, and the caller gets domain.ErrOutcomeUnknown, on which
// nothing may be undone.
func (db *DB) execOnce(ctx context.Context, op lwt) (applied, resolved bool, err error) {
	tx := db.sender.Begin(op.name)
	defer tx.Done()
	var lastErr error
	for attempt := 0; attempt < maxLWTAttempts; attempt++ {
		run := op.run
		if op.attempt != nil {
			run = op.attempt()
		}
		applied, err := tx.Attempt(ctx, run)
		if err == nil {
			if applied || lastErr == nil {
				return applied, lastErr != nil, nil
			}
			return db.settle(ctx, op, lastErr)
		}
		if !casAmbiguous(err) {
			if lastErr != nil {
				return false, false, unknown(op.name, lastErr)
			}
			return false, false, dbErr(op.name, err)
		}
		lastErr = err
		rctx, cancel := db.readBackContext(ctx)
		applied, again, rerr := op.resolve(rctx)
		cancel()
		if rerr != nil {
			return false, false, fmt.Errorf("%s: reading the outcome back at SERIAL failed (%w): %w", op.name, rerr, unknown(op.name, err))
		}
		if !again {
			return applied, true, nil
		}
		if ctx.Err() != nil {
			return false, false, unknown(op.name, ctx.Err())
		}
	}
	return false, false, unknown(op.name, lastErr)
}

// settle decides a transaction whose last attempt did not apply after an
// earlier one went unanswered: only the row can say whether that one did.
func (db *DB) settle(ctx context.Context, op lwt, lost error) (applied, resolved bool, err error) {
	rctx, cancel := db.readBackContext(ctx)
	defer cancel()
	applied, again, err := op.resolve(rctx)
	switch {
	case err != nil:
		return false, false, fmt.Errorf("%s: reading the outcome back at SERIAL failed (%w): %w", op.name, err, unknown(op.name, lost))
	case again:
		// Not ours now, but ours may have applied and been overwritten,
		// or may still land.
		return false, false, unknown(op.name, lost)
	}
	return applied, true, nil
}

// unknown is the error of a transaction whose outcome stays unknown: 503
// for the client (domain.ErrUnavailable), and nothing undone on it.
func unknown(name string, cause error) error {
	return fmt.Errorf("%s: %w: %w (last: %w)", name, domain.ErrOutcomeUnknown, domain.ErrUnavailable, cause)
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
	if errors.As(err, &unavailable) || errors.As(err, &readTimeout) || Ambiguous(err) ||
		errors.Is(err, gocql.ErrNoConnections) || errors.Is(err, gocql.ErrSessionClosed) {
		return true
	}
	var readFailure *gocql.RequestErrReadFailure
	if errors.As(err, &readFailure) && (indexNotAvailable(readFailure) || failedInTime(readFailure.ErrorMap)) {
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

// reasonIndexNotAvailable is Cassandra's RequestFailureReason
// INDEX_NOT_AVAILABLE (6 in 5.0's enum).
const reasonIndexNotAvailable = 6

// reasonTimeout and reasonNodeDown are Cassandra 5.0's RequestFailureReason
// TIMEOUT (2) and NODE_DOWN (5).
const (
	reasonTimeout  = 2
	reasonNodeDown = 5
)

// failedInTime reports a failure a replica reported because its part of
// the request expired before it ran, or because it was down: Paxos v2
// answers a proposal or a read at SERIAL that a replica dropped so (a node
// paused past the timeout, then resumed) with a failure, not a timeout. A
// read may be tried again; a write may have applied on the other replicas.
func failedInTime(m gocql.ErrorMap) bool {
	return hasReason(m, reasonTimeout, reasonNodeDown)
}

// hasReason reports whether a replica of the error map failed for one of
// reasons (Cassandra's RequestFailureReason codes).
func hasReason(m gocql.ErrorMap, reasons ...uint16) bool {
	for _, reason := range m {
		if slices.Contains(reasons, reason) {
			return true
		}
	}
	return false
}

// indexNotAvailable reports a read through a storage-attached index that a
// replica has not finished building: after a migration that adds one (019
// and 030, the user and people searches) on a table that already holds
// rows, until the build
// ends. That is "try again later" (503), not a fault of the request. The
// reason comes in the error map (protocol 5) and in the message.
func indexNotAvailable(f *gocql.RequestErrReadFailure) bool {
	return hasReason(f.ErrorMap, reasonIndexNotAvailable) || strings.Contains(f.Message(), "INDEX_NOT_AVAILABLE")
}

// Ambiguous reports errors after which a write may or may not have been
// applied: timeouts on either side, "CAS result unknown", and connections
// lost while the request was out.
func Ambiguous(err error) bool {
	var (
		writeTimeout *gocql.RequestErrWriteTimeout
		casUnknown   *gocql.RequestErrCASWriteUnknown
		writeFailure *gocql.RequestErrWriteFailure
	)
	// A cancelled request (the client went away) may have been sent: its
	// outcome is as unknown as a timeout's. So may every request in flight
	// on a connection the driver closed because too many statements timed
	// out on it (SHELF_CASSANDRA_CONN_TIMEOUT_LIMIT): they get that error.
	return errors.As(err, &writeTimeout) ||
		errors.As(err, &casUnknown) ||
		(errors.As(err, &writeFailure) && failedInTime(writeFailure.ErrorMap)) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, gocql.ErrTooManyTimeouts) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		connectionLost(err)
}

// casAmbiguous reports errors after which a compare-and-set may have
// applied: every Ambiguous error, and the answers a coordinator gives
// after a quorum may have accepted the proposal. Cassandra commits an
// accepted proposal at the statement's own consistency: Paxos v1 checks
// that enough replicas are up for it (Unavailable at that consistency,
// not at SERIAL or LOCAL_SERIAL as before its Paxos round) and the hints
// in flight to each (Overloaded "Too many in flight hints"), and a
// replica's failure of the commit (v1) or of the proposal (v2) is a
// write failure whatever its reason. Any of these is read back, never
// taken for "not applied": its caller would give back what the write
// relies on (a change of username its claims) while the write lands.
// Only a refusal before the statement ran (refusedUnrun) and an
// Unavailable at a serial consistency prove nothing of it applied.
func casAmbiguous(err error) bool {
	var (
		writeFailure *gocql.RequestErrWriteFailure
		unavailable  *gocql.RequestErrUnavailable
		reqErr       gocql.RequestError
	)
	switch {
	case Ambiguous(err) || errors.As(err, &writeFailure):
		return true
	case errors.As(err, &unavailable):
		return !isSerial(unavailable.Consistency)
	case errors.As(err, &reqErr) && reqErr.Code() == gocql.ErrCodeOverloaded:
		return !refusedUnrun(err)
	}
	return false
}

// write runs one plain write (name says which, for errors and the
// Sender), sent again or copied as its kind allows (statements.go).
func (db *DB) write(ctx context.Context, name string, stmt plainWrite, args ...any) error {
	err := db.sender.Write(ctx, Write{Name: name, send: func(ctx context.Context, timestamp int64) error {
		q := db.plain(ctx, stmt, args...)
		if timestamp != 0 {
			q = q.WithTimestamp(timestamp)
		}
		err := q.Exec()
		q.Release()
		return err
	}})
	if err != nil {
		return dbErr(name, err)
	}
	return nil
}

// batch runs one single-partition batch of plain writes (name says which,
// for errors and the Sender), like write.
func (db *DB) batch(name string, b *writeBatch) error {
	err := db.sender.Batch(name, func() error { return db.Session.Session.ExecuteBatch(b.ready(db.spec)) })
	if err != nil {
		return dbErr(name, err)
	}
	return nil
}

// connectionLost reports a connection that failed while the request was
// out, so it may have been sent: the driver hands every request in flight
// the error that closed the connection (io.EOF, a reset), or for a failed
// heartbeat a bare "gocql: heartbeat failed" (gocql v1.7.0 gives it no type,
// so its text is matched).
func connectionLost(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "gocql: heartbeat failed")
}

// cas runs one conditional statement, never copied, and sent again by the
// driver only after its coordinator refused it unrun (retryRefused; exec
// decides what else to run again), and reports whether it applied. When
// it did not, gocqlx's GetCAS scans the columns Cassandra sent back into
// existing, a pointer to a row struct: the row in the way for IF NOT
// EXISTS, the condition's columns otherwise. existing is nil where only
// "applied" matters; ExecCAS then drops those columns.
func (db *DB) cas(ctx context.Context, existing any, stmt conditionalCQL, args ...any) (bool, error) {
	q := db.conditional(ctx, stmt, args...)
	if existing == nil {
		return q.ExecCASRelease()
	}
	return q.GetCASRelease(existing)
}

// newWriteID tags one write so a SERIAL read can recognize it.
func newWriteID() string { return gocql.TimeUUID().String() }
