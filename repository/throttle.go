package repository

import (
	"context"
	"time"

	"shelf/domain/accounts"
)

// Attempts keeps attempts counted by every instance together
// (throttle_attempts, migration 016; docs/design.md#throttle): one row per
// attempt, written before its scope is counted. Writes and reads are at
// the session's consistency (LOCAL_QUORUM by default), which is what makes
// a count read after a write include it; at ONE the limit holds per
// replica only.
type Attempts struct {
	db *DB
}

var _ accounts.AttemptStore = (*Attempts)(nil)

// NewAttempts returns the attempt store.
func NewAttempts(db *DB) *Attempts { return &Attempts{db: db} }

// attemptRow is a row of throttle_attempts as attemptsSelectCQL reads it.
type attemptRow struct {
	At      time.Time `db:"at"`
	Attempt string    `db:"attempt"`
}

// columns are attemptsSelectCQL's.
func (r *attemptRow) columns() []any { return []any{&r.At, &r.Attempt} }

const (
	// attemptInsertCQL is USING TIMESTAMP <the attempt's start>: a repeat
	// writes the same cells, and the delete at that + 1 shadows them all.
	attemptInsertCQL  versionedCQL = `INSERT INTO throttle_attempts (scope, at, attempt) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	attemptDeleteCQL  versionedCQL = `DELETE FROM throttle_attempts USING TIMESTAMP ? WHERE scope = ? AND at = ? AND attempt = ?`
	attemptsSelectCQL readCQL      = `SELECT at, attempt FROM throttle_attempts WHERE scope = ? LIMIT ?`
)

// Add writes one attempt's row under scope, living for ttl.
func (s *Attempts) Add(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	return s.db.write(ctx, "throttle_attempts.add", attemptInsertCQL, scope, a.At, a.ID, a.At.UnixMicro(), ttlSeconds(ttl))
}

// List reads up to max of the scope's live attempts, oldest first (the
// clustering order).
func (s *Attempts) List(ctx context.Context, scope string, max int) ([]accounts.Attempt, error) {
	rows, err := selectRows[attemptRow](s.db.query(ctx, 0, attemptsSelectCQL, scope, max))
	if err != nil {
		return nil, dbErr("throttle_attempts.list", err)
	}
	out := make([]accounts.Attempt, len(rows))
	for i, r := range rows {
		out[i] = accounts.Attempt{ID: r.Attempt, At: r.At.UTC()}
	}
	return out, nil
}

// Remove deletes one attempt's row one microsecond after its write.
func (s *Attempts) Remove(ctx context.Context, scope string, a accounts.Attempt) error {
	return s.db.write(ctx, "throttle_attempts.remove", attemptDeleteCQL, a.At.UnixMicro()+1, scope, a.At, a.ID)
}
