package repository

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Audit scans the moderation tables for `api admin repair-suspensions`.
// Every method reads a whole table, page by page.
type Audit struct {
	db          *DB
	suspensions *Suspensions
}

var _ moderation.Audit = (*Audit)(nil)

// NewAudit returns the scanner.
func NewAudit(db *DB) *Audit { return &Audit{db: db, suspensions: NewSuspensions(db)} }

// EachSuspendedUser scans the users table for suspended accounts.
func (a *Audit) EachSuspendedUser(ctx context.Context, fn func(domain.User) error) error {
	iter := a.db.Session.ContextQuery(ctx, `SELECT id, username, username_key, email, email_key, display_name, password_hash, roles, status, created_at, updated_at, version, write_id, suspended_at, suspension_bucket, suspension_reason, suspended_by, suspended_until FROM users`, nil).Iter()
	var r userRow
	for iter.StructScan(&r) {
		if r.Status == string(domain.StatusSuspended) {
			if err := fn(r.toDomain()); err != nil {
				_ = iter.Close()
				return err
			}
		}
		r = userRow{}
	}
	return dbErrOrNil("users.scan", iter.Close())
}

// EachLookup scans suspended_users.
func (a *Audit) EachLookup(ctx context.Context, fn func(domain.Suspension) error) error {
	iter := a.db.Session.ContextQuery(ctx, `SELECT user_id, occurred_on, bucket, reason, actor, until, username FROM suspended_users`, nil).Iter()
	var r lookupRow
	for iter.StructScan(&r) {
		if err := fn(r.toDomain()); err != nil {
			_ = iter.Close()
			return err
		}
		r = lookupRow{}
	}
	return dbErrOrNil("suspended_users.scan", iter.Close())
}

// EachStatusRow scans users_by_status.
func (a *Audit) EachStatusRow(ctx context.Context, fn func(domain.Suspension) error) error {
	iter := a.db.Session.ContextQuery(ctx, `SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status`, nil).Iter()
	var r statusRow
	for iter.StructScan(&r) {
		if err := fn(r.toDomain()); err != nil {
			_ = iter.Close()
			return err
		}
		r = statusRow{}
	}
	return dbErrOrNil("users_by_status.scan", iter.Close())
}

// EachExpiry scans suspension_expiries (UserID and Until set).
func (a *Audit) EachExpiry(ctx context.Context, fn func(domain.Suspension) error) error {
	iter := a.db.Session.ContextQuery(ctx, `SELECT user_id, until FROM suspension_expiries`, nil).Iter()
	var r struct {
		UserID string    `db:"user_id"`
		Until  time.Time `db:"until"`
	}
	for iter.StructScan(&r) {
		if err := fn(domain.Suspension{UserID: r.UserID, Until: r.Until.UTC()}); err != nil {
			_ = iter.Close()
			return err
		}
	}
	return dbErrOrNil("suspension_expiries.scan", iter.Close())
}

// Buckets returns the indexed buckets and those whose partition has rows.
func (a *Audit) Buckets(ctx context.Context) (indexed, withRows []string, err error) {
	if err := a.db.Session.ContextQuery(ctx, `SELECT bucket FROM status_buckets WHERE status = ?`, nil).
		Bind(statusSuspended).SelectRelease(&indexed); err != nil {
		return nil, nil, dbErr("status_buckets.scan", err)
	}
	var parts []struct {
		Bucket string `db:"bucket"`
		Status string `db:"status"`
	}
	if err := a.db.Session.ContextQuery(ctx, `SELECT DISTINCT bucket, status FROM users_by_status`, nil).SelectRelease(&parts); err != nil {
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
	var hashes []string
	if err := a.db.Session.ContextQuery(ctx, `SELECT token_hash FROM sessions_by_user WHERE user_id = ? LIMIT 1`, nil).
		Bind(userID).SelectRelease(&hashes); err != nil {
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
