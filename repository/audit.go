package repository

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Audit scans the moderation tables for `api admin repair-suspensions`:
// the accounts token range after token range (resumable), the derived
// records (as many as the suspensions) whole, page by page.
type Audit struct {
	db          *DB
	suspensions *Suspensions
}

var _ moderation.Audit = (*Audit)(nil)

// NewAudit returns the scanner.
func NewAudit(db *DB) *Audit { return &Audit{db: db, suspensions: NewSuspensions(db)} }

// The audit's statements: whole tables, read page by page.
const (
	auditUsersCQL       = `SELECT id, username, username_key, email, email_key, display_name, password_hash, roles, status, created_at, updated_at, version, write_id, suspended_at, suspension_bucket, suspension_reason, suspended_by, suspended_until FROM users WHERE token(id) > ? AND token(id) <= ?`
	auditLookupsCQL     = `SELECT user_id, occurred_on, bucket, reason, actor, until, username FROM suspended_users`
	auditStatusRowsCQL  = `SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status`
	auditExpiriesCQL    = `SELECT user_id, until FROM suspension_expiries`
	auditBucketsCQL     = `SELECT bucket FROM status_buckets WHERE status = ?`
	auditPartitionsCQL  = `SELECT DISTINCT bucket, status FROM users_by_status`
	auditHasSessionsCQL = `SELECT token_hash FROM sessions_by_user WHERE user_id = ? LIMIT 1`
)

// auditSlices is how many token ranges the accounts' scan walks, one after
// another, each read a page (auditPage rows) at a time.
const (
	auditSlices = 256
	auditPage   = 500
)

// EachSuspendedUser scans the users table for suspended accounts, token
// range after token range; a position is the last token of a range read.
func (a *Audit) EachSuspendedUser(ctx context.Context, from string, fn func(domain.User) error, progress func(string, float64)) error {
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
		q := a.db.query(ctx, 0, auditUsersCQL, lo, hi).PageSize(auditPage)
		if err := eachRow[userRow](q, "users.scan", func(r userRow) error {
			if r.Status != string(domain.StatusSuspended) {
				return nil
			}
			return fn(r.toDomain())
		}); err != nil {
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

// EachLookup scans suspended_users.
func (a *Audit) EachLookup(ctx context.Context, fn func(domain.Suspension) error) error {
	return eachRow[lookupRow](a.db.query(ctx, 0, auditLookupsCQL), "suspended_users.scan", func(r lookupRow) error {
		return fn(r.toDomain())
	})
}

// EachStatusRow scans users_by_status.
func (a *Audit) EachStatusRow(ctx context.Context, fn func(domain.Suspension) error) error {
	return eachRow[statusRow](a.db.query(ctx, 0, auditStatusRowsCQL), "users_by_status.scan", func(r statusRow) error {
		return fn(r.toDomain())
	})
}

// expiryEntry is a row of suspension_expiries as auditExpiriesCQL reads it.
type expiryEntry struct {
	UserID string    `db:"user_id"`
	Until  time.Time `db:"until"`
}

// columns are auditExpiriesCQL's.
func (r *expiryEntry) columns() []any { return []any{&r.UserID, &r.Until} }

// EachExpiry scans suspension_expiries (UserID and Until set).
func (a *Audit) EachExpiry(ctx context.Context, fn func(domain.Suspension) error) error {
	return eachRow[expiryEntry](a.db.query(ctx, 0, auditExpiriesCQL), "suspension_expiries.scan", func(r expiryEntry) error {
		return fn(domain.Suspension{UserID: r.UserID, Until: r.Until.UTC()})
	})
}

// partitionRow is a partition key of users_by_status.
type partitionRow struct {
	Bucket string `db:"bucket"`
	Status string `db:"status"`
}

// columns are auditPartitionsCQL's.
func (r *partitionRow) columns() []any { return []any{&r.Bucket, &r.Status} }

// Buckets returns the indexed buckets and those whose partition has rows.
func (a *Audit) Buckets(ctx context.Context) (indexed, withRows []string, err error) {
	indexed, err = selectValues[string](a.db.query(ctx, 0, auditBucketsCQL, statusSuspended))
	if err != nil {
		return nil, nil, dbErr("status_buckets.scan", err)
	}
	parts, err := selectRows[partitionRow](a.db.query(ctx, 0, auditPartitionsCQL))
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

// HasSessions reports whether the user has a session index entry left.
func (a *Audit) HasSessions(ctx context.Context, userID string) (bool, error) {
	hashes, err := selectValues[string](a.db.query(ctx, 0, auditHasSessionsCQL, userID))
	if err != nil {
		return false, dbErr("sessions_by_user.check", err)
	}
	return len(hashes) > 0, nil
}

// IndexBucket adds a bucket to the index.
func (a *Audit) IndexBucket(ctx context.Context, bucket string) error {
	return a.suspensions.db.write(ctx, "suspension_buckets.insert", bucketInsertCQL, statusSuspended, bucket)
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
