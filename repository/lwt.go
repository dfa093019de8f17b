package repository

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	// faults, when set (SetFaults), is called before and after every
	// lightweight transaction and plain write; see FaultFunc. Nil in
	// production. Atomic: background work (a mark cleared after the
	// answer) may run while a test swaps it.
	faults atomic.Pointer[FaultFunc]
	// Now is the clock of the timestamps this process writes (time.Now;
	// shifted by SHELF_CLOCK_OFFSET in tests of clock skew).
	Now func() time.Time
	// OnLWT, when set, is told each transaction's outcome: applied,
	// not_applied, ambiguous_resolved (an ambiguous answer settled by a
	// SERIAL read) or failed.
	OnLWT func(outcome string)
	// late counts attempts held back by ErrLandLate still to land.
	late sync.WaitGroup
	// held are plain writes held back by ErrHoldWrite, to land when
	// LandHeld runs.
	heldMu sync.Mutex
	held   []heldWrite
	// spec copies slow idempotent statements to another node (the
	// speculation Connect gave the session; nil: no copies).
	spec gocql.SpeculativeExecutionPolicy
}

// heldWrite is a write held back by ErrHoldWrite: a plain write with the
// timestamp the driver gave it when it was sent, or an attempt of a
// lightweight transaction (land runs it then; its condition decides).
type heldWrite struct {
	name string
	stmt plainWrite
	args []any
	sent int64
	land func(ctx context.Context) error
}

// NewDB wraps a session; serial is "SERIAL" or "LOCAL_SERIAL".
func NewDB(s gocqlx.Session, serial string) *DB {
	c := gocql.Consistency(gocql.LocalSerial)
	if serial == "SERIAL" {
		c = gocql.Consistency(gocql.Serial)
	}
	return &DB{Session: s, Serial: c, Now: time.Now, spec: speculationOf(s.Session)}
}

// SetFaults installs a fault injector (nil removes it).
func (db *DB) SetFaults(f FaultFunc) {
	if f == nil {
		db.faults.Store(nil)
		return
	}
	db.faults.Store(&f)
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
	// BeforeWrite and AfterWrite are the same around a plain (not
	// conditional) write, named like "users_by_status.delete".
	BeforeWrite
	AfterWrite
)

// FaultFunc injects faults into lightweight transactions and plain writes
// by name (e.g. "usernames.claim", "users.activate",
// "suspended_users.delete"). Tests use it to prove that ambiguous outcomes
// are resolved (U5) and that a failed step is finished by its retry.
type FaultFunc func(stmt string, at FaultPoint) error

// Returned by a FaultFunc at BeforeLWT, these hold the attempt back as a
// hung node holds a request in its queue: the caller gets a timeout at
// once, and the statement lands later. ErrLandLate lands it just before the
// transaction's next attempt (after the SERIAL read-back), or right after
// the answer when there is none; ErrLandAfterAnswer only after the answer.
var (
	ErrLandLate        = errors.New("fault: attempt held back; it lands before the next attempt")
	ErrLandAfterAnswer = errors.New("fault: attempt held back; it lands after the answer")
)

// ErrHoldWrite, returned by a FaultFunc at BeforeWrite, holds a plain write
// back as a hung node's queue does: the caller gets a timeout at once (its
// outcome unknown), and the statement lands, with the timestamp it was
// sent with, only when LandHeld runs, at the moment the test picks.
// Returned at BeforeLWT it holds that attempt of a lightweight transaction
// the same way: the transaction goes on as after a timeout (a SERIAL read,
// another attempt), and the held attempt lands, its condition decided
// then, only when LandHeld runs (after a background process acted, say).
var ErrHoldWrite = errors.New("fault: write held back; it lands when LandHeld runs")

// LandHeld lands every write held back by ErrHoldWrite, in the order they
// were sent (tests).
func (db *DB) LandHeld(ctx context.Context) error {
	db.heldMu.Lock()
	held := db.held
	db.held = nil
	db.heldMu.Unlock()
	for _, h := range held {
		if h.land != nil {
			if err := h.land(ctx); err != nil {
				return dbErr(h.name, err)
			}
			continue
		}
		q := db.plain(ctx, h.stmt, h.args...).WithTimestamp(h.sent)
		err := q.Exec()
		q.Release()
		if err != nil {
			return dbErr(h.name, err)
		}
	}
	return nil
}

// heldAttempt is an attempt held back by a fault, to land later.
type heldAttempt struct {
	land        func()
	afterAnswer bool
}

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
//
// The rule (docs/design.md#faults): any attempt may land at any later time
// and any answer may be lost. Every attempt of one transaction carries the
// same tag (write id, op id), so its outcome is known only from an answer
// that came back, or from the row's tag. Once an attempt went unanswered, a
// later "not applied" proves nothing (the lost attempt may have applied and
// been overwritten since, or may still land), so the row is read back at
// SERIAL once more: our tag there means applied; anything else leaves the
// outcome unknown, and the caller gets domain.ErrOutcomeUnknown, on which
// nothing may be undone.
func (db *DB) execOnce(ctx context.Context, op lwt) (applied, resolved bool, err error) {
	var held []heldAttempt // attempts held back by a fault, landing later
	defer func() {
		if len(held) > 0 {
			db.landLate(held)
		}
	}()
	var lastErr error
	for attempt := 0; attempt < maxLWTAttempts; attempt++ {
		held = slices.DeleteFunc(held, func(h heldAttempt) bool {
			if !h.afterAnswer {
				h.land() // it lands before the next attempt is sent
			}
			return !h.afterAnswer
		})
		applied, err := db.runOnce(ctx, op, &held)
		if err == nil {
			if applied || lastErr == nil {
				return applied, lastErr != nil, nil
			}
			return db.settle(ctx, op, lastErr)
		}
		if !isAmbiguous(err) {
			if lastErr != nil {
				return false, false, unknown(op.name, lastErr)
			}
			return false, false, dbErr(op.name, err)
		}
		lastErr = err
		if !settleAmbiguous {
			return false, false, unknown(op.name, err) // the broken build, on purpose
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
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
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
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

// landLate lets held attempts land after the answer, as a hung node's
// queue does once it resumes.
func (db *DB) landLate(held []heldAttempt) {
	db.late.Add(1)
	go func() {
		defer db.late.Done()
		for _, h := range held {
			h.land()
		}
	}()
}

// WaitLate waits until every held attempt has landed (tests).
func (db *DB) WaitLate() { db.late.Wait() }

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

func (db *DB) runOnce(ctx context.Context, op lwt, held *[]heldAttempt) (bool, error) {
	if faults := db.faults.Load(); faults != nil {
		err := (*faults)(op.name, BeforeLWT)
		if errors.Is(err, ErrLandLate) || errors.Is(err, ErrLandAfterAnswer) {
			land := func() { _, _ = op.run(context.Background()) }
			*held = append(*held, heldAttempt{land: land, afterAnswer: errors.Is(err, ErrLandAfterAnswer)})
			return false, gocql.ErrTimeoutNoResponse
		}
		if errors.Is(err, ErrHoldWrite) {
			db.heldMu.Lock()
			db.held = append(db.held, heldWrite{name: op.name, land: func(ctx context.Context) error {
				_, err := op.run(ctx)
				return err
			}})
			db.heldMu.Unlock()
			return false, gocql.ErrTimeoutNoResponse
		}
		if err != nil {
			return false, err
		}
	}
	applied, err := op.run(ctx)
	if faults := db.faults.Load(); faults != nil {
		if ferr := (*faults)(op.name, AfterLWT); ferr != nil {
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
	)
	// A cancelled request (the client went away) may have been sent: its
	// outcome is as unknown as a timeout's. So may every request in flight
	// on a connection the driver closed because too many statements timed
	// out on it (SHELF_CASSANDRA_CONN_TIMEOUT_LIMIT): they get that error.
	return errors.As(err, &writeTimeout) ||
		errors.As(err, &casUnknown) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) ||
		errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, gocql.ErrTooManyTimeouts) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		connectionLost(err)
}

// write runs one plain write (name says which, for errors and faults),
// sent again or copied as its kind allows (statements.go).
func (db *DB) write(ctx context.Context, name string, stmt plainWrite, args ...any) error {
	if faults := db.faults.Load(); faults != nil {
		if err := (*faults)(name, BeforeWrite); errors.Is(err, ErrHoldWrite) {
			db.heldMu.Lock()
			db.held = append(db.held, heldWrite{name: name, stmt: stmt, args: args, sent: time.Now().UnixMicro()})
			db.heldMu.Unlock()
			return dbErr(name, gocql.ErrTimeoutNoResponse)
		} else if err != nil {
			return dbErr(name, err)
		}
	}
	q := db.plain(ctx, stmt, args...)
	err := q.Exec()
	q.Release()
	if err != nil {
		return dbErr(name, err)
	}
	if faults := db.faults.Load(); faults != nil {
		if err := (*faults)(name, AfterWrite); err != nil {
			return dbErr(name, err)
		}
	}
	return nil
}

// batch runs one single-partition batch of plain writes (name says which,
// for errors and faults), like write.
func (db *DB) batch(name string, b *writeBatch) error {
	if faults := db.faults.Load(); faults != nil {
		if err := (*faults)(name, BeforeWrite); err != nil {
			return dbErr(name, err)
		}
	}
	if err := db.Session.Session.ExecuteBatch(b.ready(db.spec)); err != nil {
		return dbErr(name, err)
	}
	if faults := db.faults.Load(); faults != nil {
		if err := (*faults)(name, AfterWrite); err != nil {
			return dbErr(name, err)
		}
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

// cas runs one conditional statement, never sent again nor copied by the
// driver (exec decides what to run again), and reports whether it applied. When it did not, gocqlx's
// GetCAS scans the columns Cassandra sent back into existing, a pointer to a
// row struct: the row in the way for IF NOT EXISTS, the condition's columns
// otherwise. existing is nil where only "applied" matters; ExecCAS then
// drops those columns.
func (db *DB) cas(ctx context.Context, existing any, stmt conditionalCQL, args ...any) (bool, error) {
	q := db.conditional(ctx, stmt, args...)
	if existing == nil {
		return q.ExecCASRelease()
	}
	return q.GetCASRelease(existing)
}

// newWriteID tags one write so a SERIAL read can recognize it.
func newWriteID() string { return gocql.TimeUUID().String() }
