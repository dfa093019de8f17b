package repository

import (
	"time"

	"shelf/domain/groups"
	"shelf/domain/lifecycle"
)

// Closings keeps the index of group closings in progress
// (group_closing_attempts_by_start, migration 032, clustered by the
// attempt's start; the old layout of migration 014 is read until a day
// after 032 ran: docs/design/closing.md): an attemptIndex of one row per
// attempt (the group, the attempt's tag), laid out as the index of
// account deletions.
type Closings struct {
	attemptIndex[groups.ClosingEntry, closingRow, *closingRow]
}

var _ lifecycle.ClosingStore = (*Closings)(nil)

// NewClosings returns the store.
func NewClosings(db *DB) *Closings {
	return &Closings{attemptIndex[groups.ClosingEntry, closingRow, *closingRow]{
		db: db, horizon: attemptHorizon, holdAfter: attemptHoldAfter, queue: "group_closing_attempts_by_start", name: "group_closings",
		insert: closingInsertCQL, remove: closingDeleteCQL, since: closingSinceCQL,
		legacy: legacyOf(closingQueue, "group_closing_attempts", closingLegacyDeleteCQL, closingLegacyDayCQL),
		key: func(e groups.ClosingEntry) attemptKey {
			return attemptKey{at: e.At, rest: []any{e.GroupID, e.Attempt}}
		},
		values: func(e groups.ClosingEntry) []any { return []any{e.By} },
		entry: func(r closingRow) groups.ClosingEntry {
			return groups.ClosingEntry{GroupID: r.GroupID, Attempt: r.Attempt, At: r.StartedAt.UTC(), By: r.ClosedBy}
		},
	}}
}

// closingQueue names the start of the old layout in queue_progress.
const closingQueue = "group_closings"

const (
	closingInsertCQL versionedCQL = `INSERT INTO group_closing_attempts_by_start (day, started_at, group_id, attempt, closed_by) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`
	closingDeleteCQL versionedCQL = `DELETE FROM group_closing_attempts_by_start USING TIMESTAMP ? WHERE day = ? AND started_at = ? AND group_id = ? AND attempt = ?`
	closingSinceCQL  readCQL      = `SELECT group_id, attempt, started_at, closed_by FROM group_closing_attempts_by_start WHERE day = ? AND started_at >= ?`

	closingLegacyDeleteCQL versionedCQL = `DELETE FROM group_closing_attempts USING TIMESTAMP ? WHERE day = ? AND group_id = ? AND attempt = ?`
	closingLegacyDayCQL    readCQL      = `SELECT group_id, attempt, started_at, closed_by FROM group_closing_attempts WHERE day = ?`
)

// closingRow is a row of group_closing_attempts_by_start (or of the old layout).
type closingRow struct {
	GroupID   string    `db:"group_id"`
	Attempt   string    `db:"attempt"`
	StartedAt time.Time `db:"started_at"`
	ClosedBy  string    `db:"closed_by"`
}

// columns are closingSinceCQL's (and closingLegacyDayCQL's).
func (r *closingRow) columns() []any { return []any{&r.GroupID, &r.Attempt, &r.StartedAt, &r.ClosedBy} }
