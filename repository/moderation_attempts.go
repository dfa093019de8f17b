package repository

import (
	"time"

	"shelf/domain/moderation"
)

// ModerationAttempts keeps the index of suspensions and unsuspensions in
// progress (moderation_attempts_by_start, migration 032, clustered by the
// attempt's start; the old layout of migration 023 is read until a day
// after 032 ran: docs/design/suspension.md): an attemptIndex laid out as
// the index of account deletions, one row per attempt (the user, the
// attempt's tag).
type ModerationAttempts struct {
	attemptIndex[moderation.Attempt, moderationAttemptRow, *moderationAttemptRow]
}

var _ moderation.AttemptIndex = (*ModerationAttempts)(nil)

// NewModerationAttempts returns the store.
func NewModerationAttempts(db *DB) *ModerationAttempts {
	return &ModerationAttempts{attemptIndex[moderation.Attempt, moderationAttemptRow, *moderationAttemptRow]{
		db: db, horizon: attemptHorizon, holdAfter: attemptHoldAfter, queue: "moderation_attempts_by_start", name: "moderation_attempts",
		insert: moderationAttemptInsertCQL, remove: moderationAttemptDeleteCQL, since: moderationAttemptSinceCQL,
		legacy: legacyOf(moderationQueue, "moderation_attempts", moderationAttemptLegacyDeleteCQL, moderationAttemptLegacyDayCQL),
		key:    func(a moderation.Attempt) attemptKey { return attemptKey{at: a.At, rest: []any{a.UserID, a.Tag}} },
		values: func(a moderation.Attempt) []any { return []any{a.Action} },
		entry: func(r moderationAttemptRow) moderation.Attempt {
			return moderation.Attempt{UserID: r.UserID, Tag: r.Attempt, At: r.StartedAt.UTC(), Action: r.Action}
		},
	}}
}

// moderationQueue names the start of the old layout in queue_progress.
const moderationQueue = "moderation_attempts"

const (
	moderationAttemptInsertCQL versionedCQL = `INSERT INTO moderation_attempts_by_start (day, started_at, user_id, attempt, action) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`
	moderationAttemptDeleteCQL versionedCQL = `DELETE FROM moderation_attempts_by_start USING TIMESTAMP ? WHERE day = ? AND started_at = ? AND user_id = ? AND attempt = ?`
	moderationAttemptSinceCQL  readCQL      = `SELECT user_id, attempt, started_at, action FROM moderation_attempts_by_start WHERE day = ? AND started_at >= ?`

	moderationAttemptLegacyDeleteCQL versionedCQL = `DELETE FROM moderation_attempts USING TIMESTAMP ? WHERE day = ? AND user_id = ? AND attempt = ?`
	moderationAttemptLegacyDayCQL    readCQL      = `SELECT user_id, attempt, started_at, action FROM moderation_attempts WHERE day = ?`
)

// moderationAttemptRow is a row of moderation_attempts_by_start (or of the old layout).
type moderationAttemptRow struct {
	UserID    string    `db:"user_id"`
	Attempt   string    `db:"attempt"`
	StartedAt time.Time `db:"started_at"`
	Action    string    `db:"action"`
}

// columns are moderationAttemptSinceCQL's (and moderationAttemptLegacyDayCQL's).
func (r *moderationAttemptRow) columns() []any {
	return []any{&r.UserID, &r.Attempt, &r.StartedAt, &r.Action}
}
