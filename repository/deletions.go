package repository

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
)

// Deletions keeps the index of account deletions in progress
// (account_deletion_attempts_by_start, migration 032, clustered by the
// attempt's start; the old layout of migration 014 is read until a day
// after 032 ran: docs/design/deletion.md): an attemptIndex of one row per
// attempt (the user, the attempt's tag) that also reads the entry a
// deletion's finish ends (Get).
type Deletions struct {
	attemptIndex[accounts.DeletionEntry, deletionRow, *deletionRow]
}

var _ lifecycle.DeletionStore = (*Deletions)(nil)

// NewDeletions returns the store.
func NewDeletions(db *DB) *Deletions {
	return &Deletions{attemptIndex[accounts.DeletionEntry, deletionRow, *deletionRow]{
		db: db, horizon: attemptHorizon, holdAfter: attemptHoldAfter, queue: "account_deletion_attempts_by_start", name: "account_deletions",
		insert: deletionInsertCQL, remove: deletionDeleteCQL, since: deletionSinceCQL,
		legacy: legacyOf(deletionQueue, "account_deletion_attempts", deletionLegacyDeleteCQL, deletionLegacyDayCQL),
		key: func(d accounts.DeletionEntry) attemptKey {
			return attemptKey{at: d.At, rest: []any{d.UserID, d.Attempt}}
		},
		values: func(d accounts.DeletionEntry) []any {
			return []any{d.By, d.UsernameKey, d.EmailKey}
		},
		entry: deletionRow.toDomain,
	}}
}

// deletionQueue names the start of the old layout in queue_progress.
const deletionQueue = "account_deletions"

const (
	deletionInsertCQL versionedCQL = `INSERT INTO account_deletion_attempts_by_start (day, started_at, user_id, attempt, deleted_by, username_key, email_key) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	deletionDeleteCQL versionedCQL = `DELETE FROM account_deletion_attempts_by_start USING TIMESTAMP ? WHERE day = ? AND started_at = ? AND user_id = ? AND attempt = ?`
	deletionSelectCQL readCQL      = `SELECT user_id, attempt, started_at, deleted_by, username_key, email_key FROM account_deletion_attempts_by_start WHERE day = ? AND started_at = ? AND user_id = ? AND attempt = ?`
	deletionSinceCQL  readCQL      = `SELECT user_id, attempt, started_at, deleted_by, username_key, email_key FROM account_deletion_attempts_by_start WHERE day = ? AND started_at >= ?`

	deletionLegacyDeleteCQL versionedCQL = `DELETE FROM account_deletion_attempts USING TIMESTAMP ? WHERE day = ? AND user_id = ? AND attempt = ?`
	deletionLegacySelectCQL readCQL      = `SELECT user_id, attempt, started_at, deleted_by, username_key, email_key FROM account_deletion_attempts WHERE day = ? AND user_id = ? AND attempt = ?`
	deletionLegacyDayCQL    readCQL      = `SELECT user_id, attempt, started_at, deleted_by, username_key, email_key FROM account_deletion_attempts WHERE day = ?`
)

// deletionRow is a row of account_deletion_attempts_by_start (or of the
// old layout).
type deletionRow struct {
	UserID      string    `db:"user_id"`
	Attempt     string    `db:"attempt"`
	StartedAt   time.Time `db:"started_at"`
	DeletedBy   string    `db:"deleted_by"`
	UsernameKey string    `db:"username_key"`
	EmailKey    string    `db:"email_key"`
}

// columns are deletionSelectCQL's (and every other select's here).
func (r *deletionRow) columns() []any {
	return []any{&r.UserID, &r.Attempt, &r.StartedAt, &r.DeletedBy, &r.UsernameKey, &r.EmailKey}
}

func (r deletionRow) toDomain() accounts.DeletionEntry {
	return accounts.DeletionEntry{UserID: r.UserID, Attempt: r.Attempt, At: r.StartedAt.UTC(), By: r.DeletedBy,
		UsernameKey: r.UsernameKey, EmailKey: r.EmailKey}
}

// Get reads the entry of the attempt that began userID's deletion d (in
// the old layout too, while it is read).
func (s *Deletions) Get(ctx context.Context, userID string, d domain.Deletion) (accounts.DeletionEntry, error) {
	r, found, err := getRow[deletionRow](s.db.query(ctx, 0, deletionSelectCQL, deletionDay(d.At), d.At, userID, d.Attempt))
	if err == nil && !found && !s.legacy.drained.Load() {
		r, found, err = getRow[deletionRow](s.db.query(ctx, 0, deletionLegacySelectCQL, deletionDay(d.At), userID, d.Attempt))
		if err == nil && found {
			s.legacy.seen.Store(legacyKey(s.key(r.toDomain())), true)
		}
	}
	switch {
	case err != nil:
		return accounts.DeletionEntry{}, dbErr("account_deletions.get", err)
	case !found || !r.StartedAt.Equal(d.At):
		return accounts.DeletionEntry{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}
