package repository

import (
	"time"

	"shelf/domain/groups"
	"shelf/domain/lifecycle"
)

// Closings keeps the index of group closings in progress
// (group_closing_attempts, migration 014; docs/design/closing.md): an
// attemptIndex of one row per attempt (the day, the group, the attempt's
// tag), laid out as the index of account deletions.
type Closings struct {
	attemptIndex[groups.ClosingEntry, closingRow, *closingRow]
}

var _ lifecycle.ClosingStore = (*Closings)(nil)

// NewClosings returns the store.
func NewClosings(db *DB) *Closings {
	return &Closings{attemptIndex[groups.ClosingEntry, closingRow, *closingRow]{
		db: db, horizon: 24 * time.Hour, queue: closingQueue, name: "group_closings",
		insert: closingInsertCQL, remove: closingDeleteCQL, day: closingDayCQL,
		key: func(e groups.ClosingEntry) attemptKey {
			return attemptKey{at: e.At, subject: e.GroupID, attempt: e.Attempt}
		},
		values: func(e groups.ClosingEntry) []any { return []any{e.By} },
		entry: func(r closingRow) groups.ClosingEntry {
			return groups.ClosingEntry{GroupID: r.GroupID, Attempt: r.Attempt, At: r.StartedAt.UTC(), By: r.ClosedBy}
		},
	}}
}

// closingQueue names the index's start in queue_progress.
const closingQueue = "group_closings"

const (
	closingInsertCQL versionedCQL = `INSERT INTO group_closing_attempts (day, group_id, attempt, started_at, closed_by) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`
	closingDeleteCQL versionedCQL = `DELETE FROM group_closing_attempts USING TIMESTAMP ? WHERE day = ? AND group_id = ? AND attempt = ?`
	closingDayCQL    readCQL      = `SELECT group_id, attempt, started_at, closed_by FROM group_closing_attempts WHERE day = ?`
)

// closingRow is a row of group_closing_attempts.
type closingRow struct {
	GroupID   string    `db:"group_id"`
	Attempt   string    `db:"attempt"`
	StartedAt time.Time `db:"started_at"`
	ClosedBy  string    `db:"closed_by"`
}

// columns are closingDayCQL's.
func (r *closingRow) columns() []any { return []any{&r.GroupID, &r.Attempt, &r.StartedAt, &r.ClosedBy} }
