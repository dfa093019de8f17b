package repository

import (
	"context"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/moderation"
)

// The moderation history's statements (schema/009_moderation_history.cql).
const (
	historyInsertCQL    versionedCQL = `INSERT INTO moderation_history (user_id, at, kind, actor, reason, suspended_at, until) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	historyPageCQL      readCQL      = `SELECT at, kind, actor, reason, suspended_at, until FROM moderation_history WHERE user_id = ? LIMIT ?`
	historyPageAfterCQL readCQL      = `SELECT at, kind, actor, reason, suspended_at, until FROM moderation_history WHERE user_id = ? AND (at, kind) < (?, ?) LIMIT ?`
	historyEntryCQL     readCQL      = `SELECT kind FROM moderation_history WHERE user_id = ? AND at = ? AND kind = ?`
)

// writeEvent writes one history entry at the account's version. Every
// column is written each time (an absent actor or until as unset, which
// leaves no tombstone), so a repeated write rewrites the same row.
func (s *Suspensions) writeEvent(ctx context.Context, e moderation.Event, version int) error {
	return s.db.write(ctx, "moderation_history.insert", historyInsertCQL, e.UserID, e.At, string(e.Kind),
		orAbsent(e.Actor, gocql.UnsetValue), e.Reason, e.SuspendedAt, orAbsent(e.Until, gocql.UnsetValue), int64(version))
}

// RecordSuspended writes a suspension's history entry at the account's
// version.
func (s *Suspensions) RecordSuspended(ctx context.Context, sp domain.Suspension, version int) error {
	return s.writeEvent(ctx, moderation.SuspendedEvent(sp), version)
}

// RecordLift writes a lift's history entries (the suspension's and the
// lift's) at the account's version, at once.
func (s *Suspensions) RecordLift(ctx context.Context, l domain.Lift, version int) error {
	var writes []func(ctx context.Context) error
	for _, e := range moderation.LiftEvents(l) {
		writes = append(writes, func(ctx context.Context) error { return s.writeEvent(ctx, e, version) })
	}
	return all(ctx, writes)
}

// historyRow is a row of moderation_history as the page reads it.
type historyRow struct {
	At          time.Time `db:"at"`
	Kind        string    `db:"kind"`
	Actor       string    `db:"actor"`
	Reason      string    `db:"reason"`
	SuspendedAt time.Time `db:"suspended_at"`
	Until       time.Time `db:"until"`
}

// columns are historyPageCQL's.
func (r *historyRow) columns() []any {
	return []any{&r.At, &r.Kind, &r.Actor, &r.Reason, &r.SuspendedAt, &r.Until}
}

func (r historyRow) toDomain(userID string) moderation.Event {
	return moderation.Event{UserID: userID, Kind: moderation.EventKind(r.Kind), At: r.At.UTC(), Actor: r.Actor,
		Reason: r.Reason, SuspendedAt: utcOrZero(r.SuspendedAt), Until: utcOrZero(r.Until)}
}

// History reads one slice of the user's partition, newest first: a page
// costs one read however long the history.
func (s *Suspensions) History(ctx context.Context, userID string, after *moderation.HistoryCursor, limit int) ([]moderation.Event, error) {
	q := s.db.query(ctx, 0, historyPageCQL, userID, limit)
	if after != nil {
		q = s.db.query(ctx, 0, historyPageAfterCQL, userID, after.At, string(after.Kind), limit)
	}
	rows, err := selectRows[historyRow](q)
	if err != nil {
		return nil, dbErr("moderation_history.page", err)
	}
	out := make([]moderation.Event, len(rows))
	for i, r := range rows {
		out[i] = r.toDomain(userID)
	}
	return out, nil
}

// HasEvent reads a history entry by its key.
func (a *Audit) HasEvent(ctx context.Context, e moderation.Event) (bool, error) {
	return exists(a.db.query(ctx, 0, historyEntryCQL, e.UserID, e.At, string(e.Kind)), "moderation_history.check")
}
