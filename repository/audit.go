package repository

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Audit scans the moderation tables for `api admin repair-suspensions`:
// each table token range after token range (resumable, a page at a time),
// and an account's derived records by their keys.
type Audit struct {
	db          *DB
	suspensions *Suspensions
	// now is the tidier's process clock (tests skew it).
	now func() time.Time
}

var _ moderation.Audit = (*Audit)(nil)

// NewAudit returns the scanner.
func NewAudit(db *DB) *Audit { return &Audit{db: db, suspensions: NewSuspensions(db), now: db.Now} }

// The audit's statements: the scans read one token range of their table
// each (eachInSlices), the rest one row or one partition by its key.
const (
	auditUsersCQL      scanCQL = `SELECT id, ` + userReadColumnNames + ` FROM users WHERE token(id) > ? AND token(id) <= ?`
	auditLookupsCQL    scanCQL = `SELECT user_id, occurred_on, bucket, reason, actor, until, username FROM suspended_users WHERE token(user_id) > ? AND token(user_id) <= ?`
	auditStatusRowsCQL scanCQL = `SELECT bucket, occurred_on, user_id, username, reason, actor, until, status FROM users_by_status WHERE token(bucket, status) > ? AND token(bucket, status) <= ?`
	auditListRowCQL    readCQL = `SELECT username FROM users_by_status WHERE bucket = ? AND status = ? AND occurred_on = ? AND user_id = ?`
	auditExpiryCQL     readCQL = `SELECT user_id FROM suspension_expiries WHERE shard = ? AND until = ? AND user_id = ?`
	auditBucketsCQL    readCQL = `SELECT bucket, emptied, WRITETIME(emptied) AS marked FROM status_buckets WHERE status = ?`
	auditPartitionsCQL scanCQL = `SELECT DISTINCT bucket, status FROM users_by_status`
)

// auditSlices is how many token ranges a scan walks, one after another,
// each read a page (auditPage rows) at a time.
const (
	auditSlices = 256
	auditPage   = 500
)

// eachInSlices reads stmt, whose last restrictions are `token(<partition
// key>) > ? AND token(<partition key>) <= ?`, one token range of the ring
// after another, a page at a time, starting after the token from ("": the
// ring's start), and calls fn with each row. After each range it calls
// progress (when set) with the range's last token, a position to resume
// after, and the share of the ring read. A read holds one page, whatever
// the table's size; a row written behind the scan is not met (the repair
// meets it through its account).
func eachInSlices[R any, P scanned[R]](ctx context.Context, db *DB, op string, stmt scanCQL, from string, fn func(R) error, progress func(string, float64)) error {
	lo := int64(math.MinInt64) // Murmur3 never gives it: every token is above
	if from != "" {
		t, err := strconv.ParseInt(from, 10, 64)
		if err != nil {
			return fmt.Errorf("resume position %q: not a token", from)
		}
		lo = t
	}
	for k := 1; k <= auditSlices; k++ {
		hi := sliceEnd(k)
		if hi <= lo {
			continue
		}
		if err := eachRow[R, P](db.scan(ctx, stmt, lo, hi).PageSize(auditPage), op, fn); err != nil {
			return err
		}
		lo = hi
		if progress != nil {
			progress(strconv.FormatInt(hi, 10), float64(k)/auditSlices)
		}
	}
	return nil
}

// sliceEnd is the last token of the k-th of auditSlices equal ranges of
// the ring (k from 1; the last ends at the ring's end).
func sliceEnd(k int) int64 {
	if k >= auditSlices {
		return math.MaxInt64
	}
	// In the ring's unsigned form: the first token is 1<<63 (MinInt64),
	// each slice sliceWidth wide, wrapping past zero.
	return int64(uint64(1)<<63 + uint64(k)*sliceWidth)
}

// sliceWidth is 2^64 / auditSlices.
const sliceWidth = math.MaxUint64/auditSlices + 1

// EachModeratedUser scans the users table for accounts suspended or
// lifted at least once.
func (a *Audit) EachModeratedUser(ctx context.Context, from string, fn func(domain.User) error, progress func(string, float64)) error {
	return eachInSlices(ctx, a.db, "users.scan", auditUsersCQL, from, func(r userRow) error {
		if r.Status != string(domain.StatusSuspended) && r.LiftedAt.IsZero() {
			return nil
		}
		return fn(r.toDomain())
	}, progress)
}

// EachLookup scans suspended_users.
func (a *Audit) EachLookup(ctx context.Context, from string, fn func(domain.Suspension) error, progress func(string, float64)) error {
	return eachInSlices(ctx, a.db, "suspended_users.scan", auditLookupsCQL, from, func(r lookupRow) error {
		return fn(r.toDomain())
	}, progress)
}

// listEntry is a row of users_by_status with its status, as the audit's
// scan reads it (the list's reads name the status; a scan meets them all).
type listEntry struct {
	statusRow
	Status string `db:"status"`
}

// columns are auditStatusRowsCQL's.
func (r *listEntry) columns() []any { return append(r.statusRow.columns(), &r.Status) }

// EachStatusRow scans users_by_status for the rows of the suspended list.
func (a *Audit) EachStatusRow(ctx context.Context, from string, fn func(domain.Suspension) error, progress func(string, float64)) error {
	return eachInSlices(ctx, a.db, "users_by_status.scan", auditStatusRowsCQL, from, func(r listEntry) error {
		if r.Status != statusSuspended {
			return nil
		}
		return fn(r.toDomain())
	}, progress)
}

// ListedAs reads the suspension's list row by its primary key: found, and
// the username it shows.
func (a *Audit) ListedAs(ctx context.Context, s domain.Suspension) (string, bool, error) {
	names, err := selectValues[string](a.db.query(ctx, 0, auditListRowCQL, s.Bucket, statusSuspended, s.SuspendedAt, s.UserID))
	if err != nil {
		return "", false, dbErr("users_by_status.check", err)
	}
	if len(names) == 0 {
		return "", false, nil
	}
	return names[0], true, nil
}

// HasExpiry reads the suspension's expiry entry by its primary key (the
// one shard, the end, the user), as Suspensions.Record writes it.
func (a *Audit) HasExpiry(ctx context.Context, s domain.Suspension) (bool, error) {
	return exists(a.db.query(ctx, 0, auditExpiryCQL, expiryShard, s.Until, s.UserID), "suspension_expiries.check")
}

// exists reports whether q, which selects one text column, finds a row.
func exists(q *gocql.Query, op string) (bool, error) {
	values, err := selectValues[string](q)
	if err != nil {
		return false, dbErr(op, err)
	}
	return len(values) > 0, nil
}

// partitionRow is a partition key of users_by_status.
type partitionRow struct {
	Bucket string `db:"bucket"`
	Status string `db:"status"`
}

// columns are auditPartitionsCQL's.
func (r *partitionRow) columns() []any { return []any{&r.Bucket, &r.Status} }

// indexEntry is an entry of the bucket index as auditBucketsCQL reads it.
type indexEntry struct {
	Bucket  string `db:"bucket"`
	Emptied bool   `db:"emptied"`
	Marked  int64  `db:"marked"`
}

// columns are auditBucketsCQL's.
func (e *indexEntry) columns() []any { return []any{&e.Bucket, &e.Emptied, &e.Marked} }

// index reads every entry of the bucket index.
func (a *Audit) index(ctx context.Context) ([]indexEntry, error) {
	entries, err := selectRows[indexEntry](a.db.query(ctx, 0, auditBucketsCQL, statusSuspended))
	if err != nil {
		return nil, dbErr("status_buckets.scan", err)
	}
	return entries, nil
}

// Buckets returns the indexed buckets (those not marked emptied) and
// those whose partition has rows.
func (a *Audit) Buckets(ctx context.Context) (indexed, withRows []string, err error) {
	entries, err := a.index(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if !e.Emptied {
			indexed = append(indexed, e.Bucket)
		}
	}
	parts, err := selectRows[partitionRow](a.db.scan(ctx, auditPartitionsCQL))
	if err != nil {
		return nil, nil, dbErr("users_by_status.partitions", err)
	}
	for _, p := range parts {
		if p.Status == statusSuspended {
			withRows = append(withRows, p.Bucket)
		}
	}
	return indexed, withRows, nil
}

// IndexBucket adds a bucket to the index.
func (a *Audit) IndexBucket(ctx context.Context, bucket string) error {
	return a.suspensions.indexBucket(ctx, bucket)
}

// TidyIndex deletes the index entries marked emptied more than age ago,
// each at its mark's time: a suspension that read the mark marks its entry
// live after it, and so outlives the delete. Their age is counted by this
// process's clock or the answering node's, whichever is behind: a tidier
// whose clock runs ahead would delete a mark just made, and a suspension
// from a process whose clock is behind the mark, finding no entry, would
// mark it live under the delete, hiding the bucket until the clocks pass
// the mark (TestATidierAheadKeepsAFreshEmptiedMark). It marks live the
// entries written before the mark existed (schema 034), so that no prune
// has to delete one by its clock. It returns how many entries it changed.
func (a *Audit) TidyIndex(ctx context.Context, age time.Duration) (int, error) {
	entries, err := a.index(ctx)
	if err != nil {
		return 0, err
	}
	node, err := a.db.nodeNow(ctx)
	if err != nil {
		return 0, err
	}
	before, n := domain.Behind(a.now(), node).Add(-age).UnixMicro(), 0
	for _, e := range entries {
		switch {
		case e.Marked == 0:
			err = a.suspensions.indexBucket(ctx, e.Bucket)
		case e.Emptied && e.Marked < before:
			err = a.db.write(ctx, "suspension_buckets.drop", bucketDeleteCQL, e.Marked, statusSuspended, e.Bucket)
		default:
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// PruneBucket drops a bucket from the index if it is empty.
func (a *Audit) PruneBucket(ctx context.Context, bucket string) error {
	return a.suspensions.pruneBucket(ctx, bucket)
}

func dbErrOrNil(op string, err error) error {
	if err == nil {
		return nil
	}
	return dbErr(op, err)
}
