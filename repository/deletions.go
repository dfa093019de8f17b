package repository

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Deletions keeps the index of account deletions in progress
// (account_deletions, migration 011; docs/design.md#deletion): one
// partition per UTC day a deletion began, read by the repair from a start
// that only moves forward.
type Deletions struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
}

var _ accounts.DeletionStore = (*Deletions)(nil)

// NewDeletions returns the store.
func NewDeletions(db *DB) *Deletions { return &Deletions{db: db, horizon: 24 * time.Hour} }

// deletionQueue names the index's start in queue_progress.
const deletionQueue = "account_deletions"

const (
	deletionInsertCQL = `INSERT INTO account_deletions (day, user_id, started_at, deleted_by, username_key, email_key) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	deletionDeleteCQL = `DELETE FROM account_deletions USING TIMESTAMP ? WHERE day = ? AND user_id = ?`
	deletionSelectCQL = `SELECT user_id, started_at, deleted_by, username_key, email_key FROM account_deletions WHERE day = ? AND user_id = ?`
	deletionDayCQL    = `SELECT user_id, started_at, deleted_by, username_key, email_key FROM account_deletions WHERE day = ?`
)

// deletionRow is a row of account_deletions.
type deletionRow struct {
	UserID      string    `db:"user_id"`
	StartedAt   time.Time `db:"started_at"`
	DeletedBy   string    `db:"deleted_by"`
	UsernameKey string    `db:"username_key"`
	EmailKey    string    `db:"email_key"`
}

// columns are deletionSelectCQL's (and deletionDayCQL's).
func (r *deletionRow) columns() []any {
	return []any{&r.UserID, &r.StartedAt, &r.DeletedBy, &r.UsernameKey, &r.EmailKey}
}

func (r deletionRow) toDomain() accounts.DeletionEntry {
	return accounts.DeletionEntry{UserID: r.UserID, At: r.StartedAt.UTC(), By: r.DeletedBy,
		UsernameKey: r.UsernameKey, EmailKey: r.EmailKey}
}

// deletionDay is the partition of a deletion begun at t.
func deletionDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Begin writes the entry at the deletion's start time (µs): every write
// of it is the same cell at the same timestamp.
func (s *Deletions) Begin(ctx context.Context, d accounts.DeletionEntry) error {
	return s.db.write(ctx, "account_deletions.insert", deletionInsertCQL, deletionDay(d.At), d.UserID, d.At,
		d.By, d.UsernameKey, d.EmailKey, d.At.UnixMicro())
}

// End deletes the entry one microsecond after its writes, so none of them,
// however late, outlives it.
func (s *Deletions) End(ctx context.Context, d accounts.DeletionEntry) error {
	return s.db.write(ctx, "account_deletions.delete", deletionDeleteCQL, d.At.UnixMicro()+1, deletionDay(d.At), d.UserID)
}

// Get reads the entry of userID's deletion begun at at.
func (s *Deletions) Get(ctx context.Context, userID string, at time.Time) (accounts.DeletionEntry, error) {
	r, found, err := getRow[deletionRow](s.db.query(ctx, 0, deletionSelectCQL, deletionDay(at), userID))
	switch {
	case err != nil:
		return accounts.DeletionEntry{}, dbErr("account_deletions.get", err)
	case !found || !r.StartedAt.Equal(at):
		return accounts.DeletionEntry{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry (see walkDays).
func (s *Deletions) InProgress(ctx context.Context, fn func(accounts.DeletionEntry) error) error {
	return walkDays(ctx, s.db, deletionQueue, s.horizon, func(day string) (int, error) {
		rows, err := selectRows[deletionRow](s.db.query(ctx, 0, deletionDayCQL, day))
		if err != nil {
			return 0, dbErr("account_deletions.day", err)
		}
		for _, r := range rows {
			if err := fn(r.toDomain()); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}

// walkDays reads an index of operations in progress kept one partition per
// UTC day (account deletions, group closings): from the queue's start up to
// today, readDay(day) answering how many entries it found. Then the start
// moves up to the first day that held an entry (or today), never closer to
// now than the horizon.
func walkDays(ctx context.Context, db *DB, queue string, horizon time.Duration, readDay func(day string) (int, error)) error {
	now := db.Now().UTC()
	start, found, err := db.queueStart(ctx, queue)
	if err != nil {
		return err
	}
	if !found {
		start = now.Add(-horizon) // a keyspace older than its migration's seed: none is older
	}
	first := time.Time{}
	today := deletionDay(now)
	for day := start.UTC().Truncate(24 * time.Hour); deletionDay(day) <= today; day = day.Add(24 * time.Hour) {
		n, err := readDay(deletionDay(day))
		if err != nil {
			return err
		}
		if n > 0 && first.IsZero() {
			first = day
		}
	}
	next := now.Truncate(24 * time.Hour)
	if !first.IsZero() {
		next = first
	}
	if limit := now.Add(-horizon); next.After(limit) {
		next = limit.Truncate(24 * time.Hour)
	}
	if next.After(start) {
		db.advanceQueue(ctx, queue, next)
	}
	return nil
}
