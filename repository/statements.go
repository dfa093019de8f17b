package repository

import (
	"context"
	"fmt"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// The kinds of CQL statement. Every statement of this package is a constant
// (or a conversion) of one of these types, and each is sent only by the
// functions of this file, which mark it with what its kind allows: so no
// statement goes out without having said whether it may run twice
// (TestEveryStatementHasAKind checks the source; docs/design/faults.md).
//
// gocql v1.7.0 sends a statement more than once in two ways: a retry after
// an error (the cluster's RetryPolicy, which v1.7.0 applies whatever the
// statement's idempotent flag says: retryIdempotent reads the flag), and a
// speculative execution, a copy sent to the next node of the plan while the
// first is still out (only for statements flagged idempotent).
type (
	// readCQL is a SELECT of one partition: sent again after an error, and
	// a copy sent when the first is slow. At SERIAL, though, a read runs a
	// Paxos round: sent again, never two at once (readCQL.at).
	readCQL string
	// scanCQL is a SELECT over token ranges or a whole table (the audit,
	// the user and people searches, the grams' backfill), or a count of a
	// whole partition (a library's, for a job): sent again after an error,
	// never copied (it is heavy: a copy would do it twice).
	scanCQL string
	// versionedCQL is a plain write USING TIMESTAMP <a version, an
	// attempt's start, or a time the caller derived from a cell's write
	// time (the suspended list's bucket index)>: a repeat writes the same
	// cells at the same timestamp. Sent again, and copied.
	versionedCQL string
	// repeatableCQL is a plain write at the driver's timestamp whose values
	// are all bound by the caller (no now(), no counter, no list append): a
	// repeat writes the same values a little later, as the first attempt
	// landing late would. Sent again, and copied.
	repeatableCQL string
	// onceCQL is a plain write that must not run twice (a counter, a list
	// append, a value computed by the node): never sent again by the
	// driver. No statement here is one today (the lwt broken build's
	// claims without their condition, tests/broken's CheckThenAct, go out
	// with no retry policy at all).
	onceCQL string
	// conditionalCQL is a lightweight transaction (IF ...): never sent
	// again by the driver nor copied (Paxos duels, double application); a
	// lost answer is settled by reading the row back at SERIAL (DB.exec).
	conditionalCQL string
	// schemaCQL is a schema change: never sent again by the driver nor
	// copied (two at once on two coordinators disagree); EnsureKeyspace
	// repeats its own after a timeout, one at a time.
	schemaCQL string
)

// attempts is what a kind of statement allows.
type attempts struct {
	// again: sent again after an error, on the next node of its plan
	// (gocql's idempotent flag, which retryIdempotent reads).
	again bool
	// twice: a copy sent to the next node while the first is still out
	// (speculative execution; gocql needs the idempotent flag too).
	twice bool
	// refused: a statement not sent again otherwise still goes to the
	// next node when its coordinator refused it before running it (it is
	// shutting down: refusedUnrun), since nothing of it ran anywhere.
	refused bool
}

func (readCQL) attempts() attempts        { return attempts{again: true, twice: true} }
func (scanCQL) attempts() attempts        { return attempts{again: true} }
func (versionedCQL) attempts() attempts   { return attempts{again: true, twice: true} }
func (repeatableCQL) attempts() attempts  { return attempts{again: true, twice: true} }
func (onceCQL) attempts() attempts        { return attempts{refused: true} }
func (conditionalCQL) attempts() attempts { return attempts{refused: true} }
func (schemaCQL) attempts() attempts      { return attempts{} }

// at is what the read allows at cl. At SERIAL it completes any Paxos
// round in flight on its partition, so two at once duel like two
// compare-and-sets would; one after another is harmless.
func (s readCQL) at(cl gocql.Consistency) attempts {
	if isSerial(cl) {
		return attempts{again: true}
	}
	return s.attempts()
}

// isSerial says whether a read at cl runs a Paxos round.
func isSerial(cl gocql.Consistency) bool {
	return cl == gocql.Consistency(gocql.Serial) || cl == gocql.Consistency(gocql.LocalSerial)
}

// plainWrite is a write without a condition; only these go through
// DB.write and into batches.
type plainWrite interface {
	attempts() attempts
	text() string
}

func (s versionedCQL) text() string  { return string(s) }
func (s repeatableCQL) text() string { return string(s) }
func (s onceCQL) text() string       { return string(s) }

// onTable fills a statement template's table (the claim tables share
// their statements).
func onTable[S ~string](s S, table string) S { return S(fmt.Sprintf(string(s), table)) }

// tunable is what attempts sets on a statement: a *gocql.Query (tests
// record it).
type tunable interface {
	Idempotent(bool) *gocql.Query
	RetryPolicy(gocql.RetryPolicy) *gocql.Query
	SetSpeculativeExecutionPolicy(gocql.SpeculativeExecutionPolicy) *gocql.Query
}

// apply marks q: idempotent when it may be sent again (and then copied
// with spec when it may run twice at once, spec set); otherwise with
// retryRefused when a refusal may send it on, else without a retry policy
// at all, so that nothing, whatever the cluster's policy, sends it again.
func (a attempts) apply(q tunable, spec gocql.SpeculativeExecutionPolicy) {
	q.Idempotent(a.again)
	if !a.again {
		if a.refused {
			q.RetryPolicy(retryRefused{})
		} else {
			q.RetryPolicy(nil)
		}
		return
	}
	if copies := a.copies(spec); copies != nil {
		q.SetSpeculativeExecutionPolicy(copies)
	}
}

// copies is the speculation a statement that allows a goes out with:
// spec when it may run twice at once, else nil (no copy).
func (a attempts) copies(spec gocql.SpeculativeExecutionPolicy) gocql.SpeculativeExecutionPolicy {
	if a.again && a.twice {
		return spec
	}
	return nil
}

// newQuery is stmt with its arguments on ctx, marked with a; a statement
// with copies says so on its context too, for the host policy (only it
// may probe a silent host: withCopies).
func newQuery(s *gocql.Session, ctx context.Context, stmt string, a attempts, spec gocql.SpeculativeExecutionPolicy, args ...any) *gocql.Query {
	q := s.Query(stmt, args...).WithContext(withCopies(ctx, a.copies(spec)))
	a.apply(q, spec)
	return q
}

// query is a read on ctx at cl (0: the session's consistency). A read at
// SERIAL or LOCAL_SERIAL (db.Serial) runs its Paxos round at cl, and says
// so as its serial consistency too, so that nothing of the session's
// default goes out with it.
func (db *DB) query(ctx context.Context, cl gocql.Consistency, stmt readCQL, args ...any) *gocql.Query {
	q := newQuery(db.Session.Session, ctx, string(stmt), stmt.at(cl), db.spec, args...)
	if cl != 0 {
		q = q.Consistency(cl)
	}
	if isSerial(cl) {
		q = q.SerialConsistency(gocql.SerialConsistency(cl))
	}
	return q
}

// scan is a read of token ranges on ctx.
func (db *DB) scan(ctx context.Context, stmt scanCQL, args ...any) *gocql.Query {
	return newQuery(db.Session.Session, ctx, string(stmt), stmt.attempts(), db.spec, args...)
}

// plain is a plain write on ctx.
func (db *DB) plain(ctx context.Context, stmt plainWrite, args ...any) *gocql.Query {
	return newQuery(db.Session.Session, ctx, stmt.text(), stmt.attempts(), db.spec, args...)
}

// conditional is a lightweight transaction on ctx, through gocqlx for its
// CAS scans, run at the DB's serial scope: the session's default is never
// relied on, so the reads that settle it and it cannot differ.
func (db *DB) conditional(ctx context.Context, stmt conditionalCQL, args ...any) *gocqlx.Queryx {
	q := db.Session.ContextQuery(ctx, string(stmt), nil).Bind(args...)
	stmt.attempts().apply(q.Query, nil)
	db.scope(q.Query)
	return q
}

// scoped is what DB.scope sets on a compare-and-set: a *gocql.Query
// (tests record it).
type scoped interface {
	SerialConsistency(gocql.SerialConsistency) *gocql.Query
}

// scope runs q's Paxos rounds at the DB's serial scope.
func (db *DB) scope(q scoped) {
	q.SerialConsistency(gocql.SerialConsistency(db.Serial))
}

// writeBatch is a single-partition unlogged batch of plain writes. gocql
// counts a batch idempotent only when every entry is; so is it sent again
// and copied.
type writeBatch struct {
	b *gocql.Batch
	a attempts
}

// newBatch starts an unlogged batch on ctx.
func (db *DB) newBatch(ctx context.Context) *writeBatch {
	return batchOf(db.Session.Session.NewBatch(gocql.UnloggedBatch).WithContext(ctx))
}

// batchOf starts a batch of writes in b: empty, it allows everything.
func batchOf(b *gocql.Batch) *writeBatch {
	return &writeBatch{b: b, a: attempts{again: true, twice: true}}
}

// add appends one write; the batch is sent again, or copied, only if every
// entry allows it. A batch not sent again goes without any retry policy
// (ready), even after a refusal.
func (w *writeBatch) add(stmt plainWrite, args ...any) {
	a := stmt.attempts()
	w.b.Entries = append(w.b.Entries, gocql.BatchEntry{Stmt: stmt.text(), Args: args, Idempotent: a.again})
	w.a.again = w.a.again && a.again
	w.a.twice = w.a.twice && a.twice
}

// ready is the batch marked with what its entries allow.
func (w *writeBatch) ready(spec gocql.SpeculativeExecutionPolicy) *gocql.Batch {
	if !w.a.again {
		return w.b.RetryPolicy(nil)
	}
	if copies := w.a.copies(spec); copies != nil {
		return w.b.SpeculativeExecutionPolicy(copies).WithContext(withCopies(w.b.Context(), copies))
	}
	return w.b
}

// schemaChange is a schema change on s and ctx.
func schemaChange(s *gocql.Session, ctx context.Context, stmt schemaCQL) *gocql.Query {
	return newQuery(s, ctx, string(stmt), stmt.attempts(), nil)
}
