package repository

import (
	"time"

	"shelf/domain/groups"
)

// GroupChanges keeps the index of membership changes in progress
// (group_change_attempts_by_start, migration 032, clustered by the
// attempt's start; the old layout of migration 031 is read until a day
// after 032 ran: docs/design/groups.md#interrupted-changes): an
// attemptIndex of one row per attempt (the group, the attempt's tag),
// laid out as the index of closings.
type GroupChanges struct {
	attemptIndex[groups.ChangeEntry, changeRow, *changeRow]
}

var _ groups.ChangeIndex = (*GroupChanges)(nil)

// NewGroupChanges returns the store.
func NewGroupChanges(db *DB) *GroupChanges {
	return &GroupChanges{attemptIndex[groups.ChangeEntry, changeRow, *changeRow]{
		db: db, horizon: attemptHorizon, holdAfter: attemptHoldAfter, queue: "group_change_attempts_by_start", name: "group_changes",
		insert: changeInsertCQL, remove: changeDeleteCQL, since: changeSinceCQL,
		legacy: legacyOf(changeQueue, "group_change_attempts", changeLegacyDeleteCQL, changeLegacyDayCQL),
		key: func(e groups.ChangeEntry) attemptKey {
			return attemptKey{at: e.At, rest: []any{e.GroupID, e.Attempt}}
		},
		values: func(groups.ChangeEntry) []any { return nil },
		entry: func(r changeRow) groups.ChangeEntry {
			return groups.ChangeEntry{GroupID: r.GroupID, Attempt: r.Attempt, At: r.StartedAt.UTC()}
		},
	}}
}

// changeQueue names the start of the old layout in queue_progress.
const changeQueue = "group_changes"

const (
	changeInsertCQL versionedCQL = `INSERT INTO group_change_attempts_by_start (day, started_at, group_id, attempt) VALUES (?, ?, ?, ?) USING TIMESTAMP ?`
	changeDeleteCQL versionedCQL = `DELETE FROM group_change_attempts_by_start USING TIMESTAMP ? WHERE day = ? AND started_at = ? AND group_id = ? AND attempt = ?`
	changeSinceCQL  readCQL      = `SELECT group_id, attempt, started_at FROM group_change_attempts_by_start WHERE day = ? AND started_at >= ?`

	changeLegacyDeleteCQL versionedCQL = `DELETE FROM group_change_attempts USING TIMESTAMP ? WHERE day = ? AND group_id = ? AND attempt = ?`
	changeLegacyDayCQL    readCQL      = `SELECT group_id, attempt, started_at FROM group_change_attempts WHERE day = ?`
)

// changeRow is a row of group_change_attempts_by_start (or of the old layout).
type changeRow struct {
	GroupID   string    `db:"group_id"`
	Attempt   string    `db:"attempt"`
	StartedAt time.Time `db:"started_at"`
}

// columns are changeSinceCQL's (and changeLegacyDayCQL's).
func (r *changeRow) columns() []any { return []any{&r.GroupID, &r.Attempt, &r.StartedAt} }
