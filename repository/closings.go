package repository

import (
	"context"
	"time"

	"shelf/domain/groups"
)

// Closings keeps the index of group closings in progress (group_closings,
// migration 013; docs/design.md#closing), laid out as the index of account
// deletions: one partition per UTC day a closing began, read by the repair
// from a start that only moves forward.
type Closings struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
}

var _ groups.ClosingStore = (*Closings)(nil)

// NewClosings returns the store.
func NewClosings(db *DB) *Closings { return &Closings{db: db, horizon: 24 * time.Hour} }

// closingQueue names the index's start in queue_progress.
const closingQueue = "group_closings"

const (
	closingInsertCQL = `INSERT INTO group_closings (day, group_id, started_at, closed_by) VALUES (?, ?, ?, ?) USING TIMESTAMP ?`
	closingDeleteCQL = `DELETE FROM group_closings USING TIMESTAMP ? WHERE day = ? AND group_id = ?`
	closingDayCQL    = `SELECT group_id, started_at, closed_by FROM group_closings WHERE day = ?`
)

// closingRow is a row of group_closings.
type closingRow struct {
	GroupID   string    `db:"group_id"`
	StartedAt time.Time `db:"started_at"`
	ClosedBy  string    `db:"closed_by"`
}

// columns are closingDayCQL's.
func (r *closingRow) columns() []any { return []any{&r.GroupID, &r.StartedAt, &r.ClosedBy} }

// Begin writes the entry at the closing's start time (µs): every write of
// it is the same cell at the same timestamp.
func (s *Closings) Begin(ctx context.Context, e groups.ClosingEntry) error {
	return s.db.write(ctx, "group_closings.insert", closingInsertCQL, deletionDay(e.At), e.GroupID, e.At, e.By, e.At.UnixMicro())
}

// End deletes the entry one microsecond after its writes, so none of them,
// however late, outlives it.
func (s *Closings) End(ctx context.Context, e groups.ClosingEntry) error {
	return s.db.write(ctx, "group_closings.delete", closingDeleteCQL, e.At.UnixMicro()+1, deletionDay(e.At), e.GroupID)
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry (see walkDays).
func (s *Closings) InProgress(ctx context.Context, fn func(groups.ClosingEntry) error) error {
	return walkDays(ctx, s.db, closingQueue, s.horizon, func(day string) (int, error) {
		rows, err := selectRows[closingRow](s.db.query(ctx, 0, closingDayCQL, day))
		if err != nil {
			return 0, dbErr("group_closings.day", err)
		}
		for _, r := range rows {
			if err := fn(groups.ClosingEntry{GroupID: r.GroupID, At: r.StartedAt.UTC(), By: r.ClosedBy}); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}
