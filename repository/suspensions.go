package repository

import (
	"context"
	"errors"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Suspensions keeps the records derived from accounts' suspensions: the
// suspended list (users_by_status), the reverse lookup (suspended_users),
// the expiry entries and the bucket index. The account row is the truth;
// these are written USING TIMESTAMP <account version>, so an older change's
// writes never win over a newer change's, in any order.
type Suspensions struct {
	db *DB
	// horizon is how far behind now the expiry reader's start may move
	// (docs/design/libraries.md#queues).
	horizon time.Duration
	// now is the process's clock the expiry reader bounds its reads by,
	// with the node's (db.Now; another in tests of clocks that disagree).
	now func() time.Time
	// tracer, when set, traces the reads of expired entries (tests count
	// the tombstones they meet).
	tracer gocql.Tracer
}

var _ moderation.Store = (*Suspensions)(nil)

// NewSuspensions returns the store.
func NewSuspensions(db *DB) *Suspensions {
	return &Suspensions{db: db, horizon: expiryHorizon, now: db.Now}
}

// expiryHorizon: the expiry reader's start stays this far behind now, so
// an entry whose write lands up to this late after its end is still found
// (whoever writes the records of a suspension that ended already lifts it
// itself: moderation's liftIfEnded).
const expiryHorizon = 2 * time.Minute

// expiryQueue is the queue_progress row of suspension_expiries.
const expiryQueue = "suspension_expiries"

// statusSuspended is the status partition the list reads.
const statusSuspended = "suspended"

// expiryShard is the one partition of suspension_expiries.
const expiryShard = 0

const (
	statusRowInsertCQL versionedCQL = `INSERT INTO users_by_status (bucket, status, occurred_on, user_id, username, reason, actor, until) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	statusRowDeleteCQL versionedCQL = `DELETE FROM users_by_status USING TIMESTAMP ? WHERE bucket = ? AND status = ? AND occurred_on = ? AND user_id = ?`
	lookupInsertCQL    versionedCQL = `INSERT INTO suspended_users (user_id, occurred_on, bucket, reason, actor, until, username) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	lookupDeleteCQL    versionedCQL = `DELETE FROM suspended_users USING TIMESTAMP ? WHERE user_id = ?`
	lookupSelectCQL    readCQL      = `SELECT user_id, occurred_on, bucket, reason, actor, until, username FROM suspended_users WHERE user_id = ?`
	expiryInsertCQL    versionedCQL = `INSERT INTO suspension_expiries (shard, until, user_id) VALUES (?, ?, ?) USING TIMESTAMP ?`
	expiryDeleteCQL    versionedCQL = `DELETE FROM suspension_expiries USING TIMESTAMP ? WHERE shard = ? AND until = ? AND user_id = ?`
	expirySelectCQL    readCQL      = `SELECT until, user_id FROM suspension_expiries WHERE shard = ? AND until >= ? AND until <= ? LIMIT ?`
	bucketEntryCQL     readCQL      = `SELECT emptied, WRITETIME(emptied) AS marked FROM status_buckets WHERE status = ? AND bucket = ?`
	bucketMarkCQL      versionedCQL = `UPDATE status_buckets USING TIMESTAMP ? SET emptied = ? WHERE status = ? AND bucket = ?`
	bucketDeleteCQL    versionedCQL = `DELETE FROM status_buckets USING TIMESTAMP ? WHERE status = ? AND bucket = ?`
	bucketsCQL         readCQL      = `SELECT bucket, emptied FROM status_buckets WHERE status = ? LIMIT ?`
	bucketsBeforeCQL   readCQL      = `SELECT bucket, emptied FROM status_buckets WHERE status = ? AND bucket <= ? LIMIT ?`
	bucketAnyRowCQL    readCQL      = `SELECT user_id FROM users_by_status WHERE bucket = ? AND status = ? LIMIT 1`
	pageCQL            readCQL      = `SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status WHERE bucket = ? AND status = ? LIMIT ?`
	pageAfterCQL       readCQL      = `SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status WHERE bucket = ? AND status = ? AND (occurred_on, user_id) < (?, ?) LIMIT ?`
)

// Record writes the status row, the reverse lookup, the expiry entry and
// the history entry at the account's version, then the bucket index entry
// (after the row it indexes: see pruneBucket).
func (s *Suspensions) Record(ctx context.Context, sp domain.Suspension, version int) error {
	ts := int64(version)
	until := orAbsent(sp.Until, nil)
	writes := []func(ctx context.Context) error{
		func(ctx context.Context) error { return s.writeEvent(ctx, moderation.SuspendedEvent(sp), version) },
		func(ctx context.Context) error {
			return s.db.write(ctx, "users_by_status.insert", statusRowInsertCQL, sp.Bucket, statusSuspended, sp.SuspendedAt, sp.UserID, sp.Username, sp.Reason, sp.SuspendedBy, until, ts)
		},
		func(ctx context.Context) error {
			return s.db.write(ctx, "suspended_users.insert", lookupInsertCQL, sp.UserID, sp.SuspendedAt, sp.Bucket, sp.Reason, sp.SuspendedBy, until, sp.Username, ts)
		},
	}
	if !sp.Until.IsZero() {
		writes = append(writes, func(ctx context.Context) error {
			return s.db.write(ctx, "suspension_expiries.insert", expiryInsertCQL, expiryShard, sp.Until, sp.UserID, ts)
		})
	}
	if err := all(ctx, writes); err != nil {
		return err
	}
	return s.indexBucket(ctx, sp.Bucket)
}

// Erase deletes the status row, the reverse lookup and the expiry entry at
// the account's version, then drops the bucket from the index if it is empty.
func (s *Suspensions) Erase(ctx context.Context, sp domain.Suspension, version int) error {
	return s.erase(ctx, sp, version, true)
}

// EraseListing is Erase but keeps the reverse lookup.
func (s *Suspensions) EraseListing(ctx context.Context, sp domain.Suspension, version int) error {
	return s.erase(ctx, sp, version, false)
}

// erase deletes the list row (and the bucket's index entry if the bucket is
// now empty), then the reverse lookup, then the expiry entry: whatever a
// failure leaves, the retry still finds it. Unsuspend's
// retry (and the next Suspend) find leftovers through the lookup, the
// sweeper's through the expiry entry, so each is erased only after what
// the other path needs (S2). An old suspension's listing (lookup false)
// keeps the lookup, which is the current suspension's.
func (s *Suspensions) erase(ctx context.Context, sp domain.Suspension, version int, lookup bool) error {
	ts := int64(version)
	if err := s.db.write(ctx, "users_by_status.delete", statusRowDeleteCQL, ts, sp.Bucket, statusSuspended, sp.SuspendedAt, sp.UserID); err != nil {
		return err
	}
	// The bucket's index entry follows its rows alone.
	if err := s.pruneBucket(ctx, sp.Bucket); err != nil {
		return err
	}
	if lookup {
		if err := s.db.write(ctx, "suspended_users.delete", lookupDeleteCQL, ts, sp.UserID); err != nil {
			return err
		}
	}
	if sp.Until.IsZero() {
		return nil
	}
	return s.db.write(ctx, "suspension_expiries.delete", expiryDeleteCQL, ts, expiryShard, sp.Until, sp.UserID)
}

// EraseExpiry deletes one expiry entry at the account's version.
func (s *Suspensions) EraseExpiry(ctx context.Context, userID string, until time.Time, version int) error {
	return s.db.write(ctx, "suspension_expiries.delete", expiryDeleteCQL, int64(version), expiryShard, until, userID)
}

// bucketEntry is a bucket's entry in the index as bucketEntryCQL reads
// it: marked is the write time of its emptied cell, 0 when it has none (an
// entry written before the cell existed, schema/034_bucket_emptied.cql).
type bucketEntry struct {
	Emptied bool  `db:"emptied"`
	Marked  int64 `db:"marked"`
}

// columns are bucketEntryCQL's.
func (e *bucketEntry) columns() []any { return []any{&e.Emptied, &e.Marked} }

// entry reads bucket's index entry; found is false when it has none.
func (s *Suspensions) entry(ctx context.Context, bucket string) (bucketEntry, bool, error) {
	e, found, err := getRow[bucketEntry](s.db.query(ctx, 0, bucketEntryCQL, statusSuspended, bucket))
	if err != nil {
		return bucketEntry{}, false, dbErr("status_buckets.entry", err)
	}
	return e, found, nil
}

// indexBucket lists bucket in the index, after the rows it indexes were
// written: it reads the entry and marks it live two microseconds or more
// after the mark it found (or at the clock's time, if later). A prune
// marks an entry emptied one microsecond after the mark it read before
// finding the bucket empty, so a bucket that gets a row after that read
// is marked live after it, whatever the two processes' clocks say
// (docs/design/suspension.md, "Buckets").
func (s *Suspensions) indexBucket(ctx context.Context, bucket string) error {
	e, _, err := s.entry(ctx, bucket)
	if err != nil {
		return err
	}
	ts := max(s.db.Now().UnixMicro(), e.Marked+2)
	return s.db.write(ctx, "suspension_buckets.insert", bucketMarkCQL, ts, false, statusSuspended, bucket)
}

// pruneBucket marks an empty bucket emptied, so listings skip it: it
// reads the entry, then the bucket's rows, and if it found none marks the
// entry one microsecond after the mark it read. A suspension that lands
// in the bucket meanwhile reads a mark at least as late (its read follows
// this one) and marks the entry live after this one (indexBucket). An
// entry with no mark (written before schema 034) is deleted at the time
// taken before the reads, as then: it holds while the clocks agree.
func (s *Suspensions) pruneBucket(ctx context.Context, bucket string) error {
	before := s.db.Now().UnixMicro()
	e, found, err := s.entry(ctx, bucket)
	if err != nil || !found || e.Emptied {
		return err
	}
	var any string
	q := s.db.query(ctx, 0, bucketAnyRowCQL, bucket, statusSuspended)
	err = q.Scan(&any)
	q.Release()
	if err == nil {
		return nil
	}
	if !errors.Is(err, gocql.ErrNotFound) {
		return dbErr("status_buckets.check", err)
	}
	if e.Marked == 0 {
		return s.db.write(ctx, "suspension_buckets.delete", bucketDeleteCQL, before, statusSuspended, bucket)
	}
	return s.db.write(ctx, "suspension_buckets.empty", bucketMarkCQL, e.Marked+1, true, statusSuspended, bucket)
}

// lookupRow is a row of suspended_users.
type lookupRow struct {
	UserID     string    `db:"user_id"`
	OccurredOn time.Time `db:"occurred_on"`
	Bucket     string    `db:"bucket"`
	Reason     string    `db:"reason"`
	Actor      string    `db:"actor"`
	Until      time.Time `db:"until"`
	Username   string    `db:"username"`
}

// columns are lookupSelectCQL's (and the audit's auditLookupsCQL's).
func (r *lookupRow) columns() []any {
	return []any{&r.UserID, &r.OccurredOn, &r.Bucket, &r.Reason, &r.Actor, &r.Until, &r.Username}
}

// Lookup reads the reverse lookup.
func (s *Suspensions) Lookup(ctx context.Context, userID string) (domain.Suspension, error) {
	r, found, err := getRow[lookupRow](s.db.query(ctx, 0, lookupSelectCQL, userID))
	if err != nil {
		return domain.Suspension{}, dbErr("suspended_users.get", err)
	}
	if !found {
		return domain.Suspension{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}

func (r lookupRow) toDomain() domain.Suspension {
	return domain.Suspension{UserID: r.UserID, Username: r.Username, Reason: r.Reason, SuspendedAt: r.OccurredOn.UTC(),
		SuspendedBy: r.Actor, Until: utcOrZero(r.Until), Bucket: r.Bucket}
}

// statusRow is a row of users_by_status as the list reads it.
type statusRow struct {
	Bucket     string    `db:"bucket"`
	OccurredOn time.Time `db:"occurred_on"`
	UserID     string    `db:"user_id"`
	Username   string    `db:"username"`
	Reason     string    `db:"reason"`
	Actor      string    `db:"actor"`
	Until      time.Time `db:"until"`
}

// columns are pageCQL's and pageAfterCQL's (and the audit's
// auditStatusRowsCQL's).
func (r *statusRow) columns() []any {
	return []any{&r.Bucket, &r.OccurredOn, &r.UserID, &r.Username, &r.Reason, &r.Actor, &r.Until}
}

func (r statusRow) toDomain() domain.Suspension {
	return domain.Suspension{UserID: r.UserID, Username: r.Username, Reason: r.Reason, SuspendedAt: r.OccurredOn.UTC(),
		SuspendedBy: r.Actor, Until: utcOrZero(r.Until), Bucket: r.Bucket}
}

// Page reads the bucket index once, then slices bucket after bucket, newest
// first, until it has limit rows. The index lists a bucket while it holds
// rows (see pruneBucket), so a page reads at most one bucket more than it
// takes rows from. Only entries left live by an interrupted prune, or more
// than indexSlack entries marked emptied in a row, make it read the index
// again.
func (s *Suspensions) Page(ctx context.Context, after *moderation.Cursor, limit int) ([]domain.Suspension, error) {
	out := make([]domain.Suspension, 0, limit)
	var upTo *string // read buckets at or before this one
	if after != nil {
		upTo = &after.Bucket
	}
	skipUpTo := false // upTo itself was read by the previous batch
	for {
		// Each live bucket holds a row: limit+1 of them fill a page.
		buckets, last, more, err := s.buckets(ctx, upTo, limit-len(out)+2)
		if err != nil {
			return nil, err
		}
		for _, b := range buckets {
			if skipUpTo && b == *upTo {
				continue
			}
			q := s.db.query(ctx, 0, pageCQL, b, statusSuspended, limit-len(out))
			if after != nil && b == after.Bucket {
				q = s.db.query(ctx, 0, pageAfterCQL, b, statusSuspended, after.SuspendedAt, after.UserID, limit-len(out))
			}
			rows, err := selectRows[statusRow](q)
			if err != nil {
				return nil, dbErr("users_by_status.page", err)
			}
			for _, r := range rows {
				out = append(out, r.toDomain())
			}
			if len(out) >= limit {
				return out, nil
			}
		}
		if !more {
			return out, nil // no older buckets
		}
		upTo, skipUpTo = &last, true
	}
}

// indexSlack is how many entries marked emptied a read of the index
// reads beyond the live ones it asks for: the sweeper deletes a mark an
// hour after it was made, so few are ever there.
const indexSlack = 16

// bucketRow is an entry of the index as bucketsCQL reads it.
type bucketRow struct {
	Bucket  string `db:"bucket"`
	Emptied bool   `db:"emptied"`
}

// columns are bucketsCQL's and bucketsBeforeCQL's.
func (r *bucketRow) columns() []any { return []any{&r.Bucket, &r.Emptied} }

// buckets reads n + indexSlack index entries, newest first, at or before
// from, and returns the live ones; last is the oldest entry read, more
// whether older ones may follow it.
func (s *Suspensions) buckets(ctx context.Context, from *string, n int) (live []string, last string, more bool, err error) {
	n += indexSlack
	q := s.db.query(ctx, 0, bucketsCQL, statusSuspended, n)
	if from != nil {
		q = s.db.query(ctx, 0, bucketsBeforeCQL, statusSuspended, *from, n)
	}
	rows, err := selectRows[bucketRow](q)
	if err != nil {
		return nil, "", false, dbErr("status_buckets.list", err)
	}
	for _, r := range rows {
		if !r.Emptied {
			live = append(live, r.Bucket)
		}
	}
	if len(rows) > 0 {
		last = rows[len(rows)-1].Bucket
	}
	return live, last, len(rows) == n, nil
}

// expiryRow is a row of suspension_expiries as expirySelectCQL reads it.
type expiryRow struct {
	Until  time.Time `db:"until"`
	UserID string    `db:"user_id"`
}

// columns are expirySelectCQL's.
func (r *expiryRow) columns() []any { return []any{&r.Until, &r.UserID} }

// NodeNow reads the answering node's clock.
func (s *Suspensions) NodeNow(ctx context.Context) (time.Time, error) { return s.db.nodeNow(ctx) }

// Expired reads expiry entries that have ended by t, oldest first, from
// the reader's start: entries before it were all read and erased, so the
// read never meets their tombstones again. It moves the start up to the
// first entry it found (or to t), never closer to now than the horizon.
// Now, for both the entries read and the start, is this process's clock
// or the answering node's, whichever is behind (as walkFromStart's): a
// process whose clock runs ahead neither moves the start past the entries
// the others write meanwhile nor reads an entry before it ended by the
// node's clock.
func (s *Suspensions) Expired(ctx context.Context, t time.Time, limit int) ([]domain.Suspension, error) {
	start, nodeNow, found, err := s.db.queueStartAt(ctx, expiryQueue)
	if err == nil && !found {
		// No row yet: the whole partition, once (the table from before the
		// reader had a start), and the node's clock read on its own.
		start = time.UnixMilli(0).UTC()
		nodeNow, err = s.db.nodeNow(ctx)
	}
	if err != nil {
		return nil, err
	}
	now := domain.Behind(s.now(), nodeNow)
	if t.After(now) {
		t = now
	}
	rows, err := selectRows[expiryRow](traced(s.db.query(ctx, 0, expirySelectCQL, expiryShard, start, t, limit), s.tracer))
	if err != nil {
		return nil, dbErr("suspension_expiries.list", err)
	}
	out := make([]domain.Suspension, len(rows))
	for i, r := range rows {
		out[i] = domain.Suspension{UserID: r.UserID, Until: r.Until.UTC()}
	}
	next := t
	if len(rows) > 0 {
		next = rows[0].Until
	}
	if latest := now.Add(-s.horizon); next.After(latest) {
		next = latest
	}
	if next.After(start) {
		s.db.advanceQueue(ctx, expiryQueue, next)
	}
	return out, nil
}

// all runs independent writes at once (each on its own branch of ctx,
// domain.Parallel) and returns their errors joined.
func all(ctx context.Context, fns []func(ctx context.Context) error) error {
	errs := make([]error, len(fns))
	domain.Parallel(ctx, len(fns), func(ctx context.Context, i int) { errs[i] = fns[i](ctx) })
	return errors.Join(errs...)
}
