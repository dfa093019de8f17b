package repository

import (
	"context"
	"time"

	"shelf/domain/groups"
	"shelf/domain/lifecycle"
)

// Closings keeps the index of group closings in progress
// (group_closing_attempts, migration 014; docs/design/closing.md), laid out
// as the index of account deletions: one partition per UTC day an attempt
// began, one row per attempt (the group, the attempt's tag), read by the
// repair from a start that only moves forward. The index before 014
// (group_closings, one row per day and group) is read beside it, each of
// its rows carried over.
type Closings struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
}

var _ lifecycle.ClosingStore = (*Closings)(nil)

// NewClosings returns the store.
func NewClosings(db *DB) *Closings { return &Closings{db: db, horizon: 24 * time.Hour} }

// closingQueue names the index's start in queue_progress.
const closingQueue = "group_closings"

const (
	closingInsertCQL versionedCQL = `INSERT INTO group_closing_attempts (day, group_id, attempt, started_at, closed_by) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?`
	closingDeleteCQL versionedCQL = `DELETE FROM group_closing_attempts USING TIMESTAMP ? WHERE day = ? AND group_id = ? AND attempt = ?`
	closingDayCQL    readCQL      = `SELECT group_id, attempt, started_at, closed_by FROM group_closing_attempts WHERE day = ?`
	// The index before migration 014: one row per day and group.
	legacyClosingDayCQL    readCQL      = `SELECT group_id, started_at, closed_by FROM group_closings WHERE day = ?`
	legacyClosingDeleteCQL versionedCQL = `DELETE FROM group_closings USING TIMESTAMP ? WHERE day = ? AND group_id = ?`
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

// legacyClosingRow is a row of group_closings (before 014): the entry of a
// closing begun without a tag, which its group row records as empty.
type legacyClosingRow struct {
	GroupID   string    `db:"group_id"`
	StartedAt time.Time `db:"started_at"`
	ClosedBy  string    `db:"closed_by"`
}

// columns are legacyClosingDayCQL's.
func (r *legacyClosingRow) columns() []any { return []any{&r.GroupID, &r.StartedAt, &r.ClosedBy} }

// Begin writes the attempt's entry at its start time (µs): every write of
// it is the same row at the same timestamp, and no other attempt's row.
func (s *Closings) Begin(ctx context.Context, e groups.ClosingEntry) error {
	return s.db.write(ctx, "group_closings.insert", closingInsertCQL, deletionDay(e.At), e.GroupID, e.Attempt, e.At, e.By, e.At.UnixMicro())
}

// End deletes the attempt's entry one microsecond after its writes, so
// none of them, however late, outlives it; another attempt's row stays.
func (s *Closings) End(ctx context.Context, e groups.ClosingEntry) error {
	return s.db.write(ctx, "group_closings.delete", closingDeleteCQL, e.At.UnixMicro()+1, deletionDay(e.At), e.GroupID, e.Attempt)
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry (see walkDays). A day's rows of the
// index before 014 are carried over first, as the deletions' are
// (Deletions.carryOver).
func (s *Closings) InProgress(ctx context.Context, fn func(groups.ClosingEntry) error) error {
	return walkDays(ctx, s.db, closingQueue, s.horizon, func(day string) (int, error) {
		if err := s.carryOver(ctx, day); err != nil {
			return 0, err
		}
		rows, err := selectRows[closingRow](s.db.query(ctx, 0, closingDayCQL, day))
		if err != nil {
			return 0, dbErr("group_closings.day", err)
		}
		for _, r := range rows {
			if err := fn(groups.ClosingEntry{GroupID: r.GroupID, Attempt: r.Attempt, At: r.StartedAt.UTC(), By: r.ClosedBy}); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}

// carryOver moves the day's rows of group_closings (before 014) into
// group_closing_attempts under the empty tag, as Deletions.carryOver does.
func (s *Closings) carryOver(ctx context.Context, day string) error {
	rows, err := selectRows[legacyClosingRow](s.db.query(ctx, 0, legacyClosingDayCQL, day))
	if err != nil {
		return dbErr("group_closings.legacy", err)
	}
	for _, r := range rows {
		e := groups.ClosingEntry{GroupID: r.GroupID, At: r.StartedAt.UTC(), By: r.ClosedBy}
		if err := s.Begin(ctx, e); err != nil {
			return err
		}
		if err := s.db.write(ctx, "group_closings.legacy_delete", legacyClosingDeleteCQL, e.At.UnixMicro()+1, day, e.GroupID); err != nil {
			return err
		}
	}
	return nil
}
