package repository

import (
	"context"
	"time"

	"shelf/domain/moderation"
)

// ModerationAttempts keeps the index of suspensions and unsuspensions in
// progress (moderation_attempts, migration 023; docs/design/suspension.md),
// laid out as the index of account deletions: one partition per UTC day an
// attempt began, one row per attempt, read from a start that only moves
// forward (walkDays).
type ModerationAttempts struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
}

var _ moderation.AttemptIndex = (*ModerationAttempts)(nil)

// NewModerationAttempts returns the store.
func NewModerationAttempts(db *DB) *ModerationAttempts {
	return &ModerationAttempts{db: db, horizon: 24 * time.Hour}
}

// moderationQueue names the index's start in queue_progress.
const moderationQueue = "moderation_attempts"

const (
	moderationAttemptInsertCQL versionedCQL = `INSERT INTO moderation_attempts (day, user_id, attempt, started_at, action) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`
	moderationAttemptDeleteCQL versionedCQL = `DELETE FROM moderation_attempts USING TIMESTAMP ? WHERE day = ? AND user_id = ? AND attempt = ?`
	moderationAttemptDayCQL    readCQL      = `SELECT user_id, attempt, started_at, action FROM moderation_attempts WHERE day = ?`
)

// moderationAttemptRow is a row of moderation_attempts.
type moderationAttemptRow struct {
	UserID    string    `db:"user_id"`
	Attempt   string    `db:"attempt"`
	StartedAt time.Time `db:"started_at"`
	Action    string    `db:"action"`
}

// columns are moderationAttemptDayCQL's.
func (r *moderationAttemptRow) columns() []any {
	return []any{&r.UserID, &r.Attempt, &r.StartedAt, &r.Action}
}

// Begin writes the attempt's entry at its start time (µs).
func (s *ModerationAttempts) Begin(ctx context.Context, a moderation.Attempt) error {
	return s.db.write(ctx, "moderation_attempts.insert", moderationAttemptInsertCQL, deletionDay(a.At), a.UserID, a.Tag, a.At, a.Action, a.At.UnixMicro())
}

// End deletes the attempt's entry one microsecond after its writes.
func (s *ModerationAttempts) End(ctx context.Context, a moderation.Attempt) error {
	return s.db.write(ctx, "moderation_attempts.delete", moderationAttemptDeleteCQL, a.At.UnixMicro()+1, deletionDay(a.At), a.UserID, a.Tag)
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry.
func (s *ModerationAttempts) InProgress(ctx context.Context, fn func(moderation.Attempt) error) error {
	return walkDays(ctx, s.db, moderationQueue, s.horizon, func(day string) (int, error) {
		rows, err := selectRows[moderationAttemptRow](s.db.query(ctx, 0, moderationAttemptDayCQL, day))
		if err != nil {
			return 0, dbErr("moderation_attempts.day", err)
		}
		for _, r := range rows {
			if err := fn(moderation.Attempt{UserID: r.UserID, Tag: r.Attempt, At: r.StartedAt.UTC(), Action: r.Action}); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}
