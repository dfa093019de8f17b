package repository

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
)

// Deletions keeps the index of account deletions in progress
// (account_deletion_attempts, migration 014; docs/design/deletion.md): one
// partition per UTC day an attempt began, one row per attempt (the user,
// the attempt's tag), read by the repair from a start that only moves
// forward. The index before 014 (account_deletions, one row per day and
// user) is read beside it, each of its rows carried over.
type Deletions struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
}

var _ lifecycle.DeletionStore = (*Deletions)(nil)

// NewDeletions returns the store.
func NewDeletions(db *DB) *Deletions { return &Deletions{db: db, horizon: 24 * time.Hour} }

// deletionQueue names the index's start in queue_progress.
const deletionQueue = "account_deletions"

const (
	deletionInsertCQL versionedCQL = `INSERT INTO account_deletion_attempts (day, user_id, attempt, started_at, deleted_by, username_key, email_key) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	deletionDeleteCQL versionedCQL = `DELETE FROM account_deletion_attempts USING TIMESTAMP ? WHERE day = ? AND user_id = ? AND attempt = ?`
	deletionSelectCQL readCQL      = `SELECT user_id, attempt, started_at, deleted_by, username_key, email_key FROM account_deletion_attempts WHERE day = ? AND user_id = ? AND attempt = ?`
	deletionDayCQL    readCQL      = `SELECT user_id, attempt, started_at, deleted_by, username_key, email_key FROM account_deletion_attempts WHERE day = ?`
	// The index before migration 014: one row per day and user.
	legacyDeletionDayCQL    readCQL      = `SELECT user_id, started_at, deleted_by, username_key, email_key FROM account_deletions WHERE day = ?`
	legacyDeletionDeleteCQL versionedCQL = `DELETE FROM account_deletions USING TIMESTAMP ? WHERE day = ? AND user_id = ?`
)

// deletionRow is a row of account_deletion_attempts.
type deletionRow struct {
	UserID      string    `db:"user_id"`
	Attempt     string    `db:"attempt"`
	StartedAt   time.Time `db:"started_at"`
	DeletedBy   string    `db:"deleted_by"`
	UsernameKey string    `db:"username_key"`
	EmailKey    string    `db:"email_key"`
}

// columns are deletionSelectCQL's (and deletionDayCQL's).
func (r *deletionRow) columns() []any {
	return []any{&r.UserID, &r.Attempt, &r.StartedAt, &r.DeletedBy, &r.UsernameKey, &r.EmailKey}
}

func (r deletionRow) toDomain() accounts.DeletionEntry {
	return accounts.DeletionEntry{UserID: r.UserID, Attempt: r.Attempt, At: r.StartedAt.UTC(), By: r.DeletedBy,
		UsernameKey: r.UsernameKey, EmailKey: r.EmailKey}
}

// legacyDeletionRow is a row of account_deletions (before 014): the entry
// of a deletion begun without a tag, which its account row records as empty.
type legacyDeletionRow struct {
	UserID      string    `db:"user_id"`
	StartedAt   time.Time `db:"started_at"`
	DeletedBy   string    `db:"deleted_by"`
	UsernameKey string    `db:"username_key"`
	EmailKey    string    `db:"email_key"`
}

// columns are legacyDeletionDayCQL's.
func (r *legacyDeletionRow) columns() []any {
	return []any{&r.UserID, &r.StartedAt, &r.DeletedBy, &r.UsernameKey, &r.EmailKey}
}

// deletionDay is the partition of a deletion begun at t.
func deletionDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Begin writes the attempt's entry at its start time (µs): every write of
// it is the same row at the same timestamp, and no other attempt's row.
func (s *Deletions) Begin(ctx context.Context, d accounts.DeletionEntry) error {
	return s.db.write(ctx, "account_deletions.insert", deletionInsertCQL, deletionDay(d.At), d.UserID, d.Attempt, d.At,
		d.By, d.UsernameKey, d.EmailKey, d.At.UnixMicro())
}

// End deletes the attempt's entry one microsecond after its writes, so
// none of them, however late, outlives it; another attempt's row stays.
func (s *Deletions) End(ctx context.Context, d accounts.DeletionEntry) error {
	return s.db.write(ctx, "account_deletions.delete", deletionDeleteCQL, d.At.UnixMicro()+1, deletionDay(d.At), d.UserID, d.Attempt)
}

// Get reads the entry of the attempt that began userID's deletion d.
func (s *Deletions) Get(ctx context.Context, userID string, d domain.Deletion) (accounts.DeletionEntry, error) {
	r, found, err := getRow[deletionRow](s.db.query(ctx, 0, deletionSelectCQL, deletionDay(d.At), userID, d.Attempt))
	switch {
	case err != nil:
		return accounts.DeletionEntry{}, dbErr("account_deletions.get", err)
	case !found || !r.StartedAt.Equal(d.At):
		return accounts.DeletionEntry{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry (see walkDays). A day's rows of the
// index before 014 are carried over first (carryOverDeletions).
func (s *Deletions) InProgress(ctx context.Context, fn func(accounts.DeletionEntry) error) error {
	return walkDays(ctx, s.db, deletionQueue, s.horizon, func(day string) (int, error) {
		if err := s.carryOver(ctx, day); err != nil {
			return 0, err
		}
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

// carryOver moves the day's rows of account_deletions (before 014) into
// account_deletion_attempts under the empty tag (what an account row without
// a tag records): the new row written at the old one's timestamp, so an
// end of that entry already written shadows it, then the old row deleted
// one microsecond after its own write, so only the version read goes. A
// crash between the two writes leaves the old row to be carried again.
func (s *Deletions) carryOver(ctx context.Context, day string) error {
	rows, err := selectRows[legacyDeletionRow](s.db.query(ctx, 0, legacyDeletionDayCQL, day))
	if err != nil {
		return dbErr("account_deletions.legacy", err)
	}
	for _, r := range rows {
		e := accounts.DeletionEntry{UserID: r.UserID, At: r.StartedAt.UTC(), By: r.DeletedBy, UsernameKey: r.UsernameKey, EmailKey: r.EmailKey}
		if err := s.Begin(ctx, e); err != nil {
			return err
		}
		if err := s.db.write(ctx, "account_deletions.legacy_delete", legacyDeletionDeleteCQL, e.At.UnixMicro()+1, day, e.UserID); err != nil {
			return err
		}
	}
	return nil
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
