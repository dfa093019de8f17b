package repository

import (
	"context"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"shelf/domain/groups"
)

// OutboxShard is the shard of an item's outbox marks (a test writes a
// late-landing mark by hand).
var OutboxShard = shardOf

// OutboxBucket is the window a mark made at t falls in, with o's layout.
func (o *Outbox) OutboxBucket(t time.Time) time.Time { return o.bucketOf(t) }

// WithLayout returns the outbox with windows of width and a horizon (tests
// that cannot wait minutes; its keyspace must be the test's own: a mark's
// window is worked out from the width again when it is done).
func (o *Outbox) WithLayout(width, horizon time.Duration) *Outbox {
	c := *o
	c.width, c.horizon = width, horizon
	return &c
}

// WithTracer returns the outbox tracing its reads of the queue's windows.
func (o *Outbox) WithTracer(t gocql.Tracer) *Outbox {
	c := *o
	c.tracer = t
	return &c
}

// WithExpiryHorizon returns the store with another expiry horizon.
func (s *Suspensions) WithExpiryHorizon(d time.Duration) *Suspensions {
	c := *s
	c.horizon = d
	return &c
}

// WithClock returns the store whose expiry reader runs on another process
// clock (a test of instances whose clocks disagree).
func (s *Suspensions) WithClock(now func() time.Time) *Suspensions {
	c := *s
	c.now = now
	return &c
}

// WithTracer returns the store tracing its reads of expired entries.
func (s *Suspensions) WithTracer(t gocql.Tracer) *Suspensions {
	c := *s
	c.tracer = t
	return &c
}

// InsertExpiry writes one expiry entry as Record does (at the account's
// version).
func (s *Suspensions) InsertExpiry(ctx context.Context, userID string, until time.Time, version int) error {
	return s.db.write(ctx, "suspension_expiries.insert", expiryInsertCQL, expiryShard, until, userID, int64(version))
}

// CopiesNow is how many copies a slow idempotent statement of s may get
// now (0 without a speculation).
func CopiesNow(s gocqlx.Session) int {
	if sp := speculationOf(s.Session); sp != nil {
		return sp.Attempts()
	}
	return 0
}

// WithIndex returns the index of membership changes with another horizon,
// tracing its reads with t (nil: none).
func (s *GroupChanges) WithIndex(horizon time.Duration, t gocql.Tracer) *GroupChanges {
	c := *s
	c.horizon, c.tracer = horizon, t
	return &c
}

// WithHold returns the index of membership changes holding its entries
// open past d (see hold).
func (s *GroupChanges) WithHold(d time.Duration) *GroupChanges {
	c := *s
	c.holdAfter = d
	return &c
}

// BeginInOldLayout writes e as a process of the release before migration
// 032 wrote it (group_change_attempts, clustered by group).
func (s *GroupChanges) BeginInOldLayout(ctx context.Context, e groups.ChangeEntry) error {
	return s.db.Session.Query(`INSERT INTO group_change_attempts (day, group_id, attempt, started_at) VALUES (?, ?, ?, ?) USING TIMESTAMP ?`, nil).
		Bind(deletionDay(e.At), e.GroupID, e.Attempt, e.At, e.At.UnixMicro()).WithContext(ctx).Exec()
}

// WithTracer returns the store tracing the reads of a page's slices.
func (s *Sessions) WithTracer(t gocql.Tracer) *Sessions {
	c := *s
	c.tracer = t
	return &c
}

// CopySessionIndex is 037's step in Go: sessions_by_user copied into the
// indexes a page and a revocation read.
func CopySessionIndex(ctx context.Context, s gocqlx.Session) error {
	return copySessionIndex(ctx, s, 0, "copy_session_index")
}

// WithClock returns the audit tidying the bucket index on another process
// clock (a test of instances whose clocks disagree).
func (a *Audit) WithClock(now func() time.Time) *Audit {
	c := *a
	c.now = now
	return &c
}
