package repository

import (
	"context"
	"errors"
	"sync"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Sessions keeps login sessions: the session row (read by every
// authenticated request) and the user's index of them (for revoking all).
// Both expire with the session.
type Sessions struct {
	db *DB
}

var _ accounts.SessionStore = (*Sessions)(nil)

// NewSessions returns the session store.
func NewSessions(db *DB) *Sessions { return &Sessions{db: db} }

type sessionRow struct {
	TokenHash string    `db:"token_hash"`
	UserID    string    `db:"user_id"`
	CreatedAt time.Time `db:"created_at"`
	ExpiresAt time.Time `db:"expires_at"`
	// Written is the rows' write timestamp (µs): a revocation deletes at
	// Written+1, so it shadows the session whatever the writer's clock.
	Written int64 `db:"written"`
}

// columns are sessionSelectCQL's.
func (r *sessionRow) columns() []any {
	return []any{&r.TokenHash, &r.UserID, &r.CreatedAt, &r.ExpiresAt, &r.Written}
}

// sessionIndexRow is a row of sessions_by_user as sessionsOfUserCQL reads
// it.
type sessionIndexRow struct {
	TokenHash string `db:"token_hash"`
	Written   int64  `db:"written"`
}

// columns are sessionsOfUserCQL's.
func (r *sessionIndexRow) columns() []any { return []any{&r.TokenHash, &r.Written} }

const (
	sessionInsertCQL     = `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionIndexCQL      = `INSERT INTO sessions_by_user (user_id, token_hash, expires_at) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionSelectCQL     = `SELECT token_hash, user_id, created_at, expires_at, WRITETIME(user_id) AS written FROM sessions WHERE token_hash = ?`
	sessionDeleteCQL     = `DELETE FROM sessions USING TIMESTAMP ? WHERE token_hash = ?`
	sessionUnindexCQL    = `DELETE FROM sessions_by_user USING TIMESTAMP ? WHERE user_id = ? AND token_hash = ?`
	sessionsOfUserCQL    = `SELECT token_hash, WRITETIME(expires_at) AS written FROM sessions_by_user WHERE user_id = ?`
	sessionTTLMinSeconds = 1
)

// Create writes the index entry first, then the session: a session that
// exists is always listed, so revoking all of a user's sessions finds it.
// Both rows carry one timestamp, which the index keeps for revocation.
func (s *Sessions) Create(ctx context.Context, sess domain.Session) error {
	ttl := int(time.Until(sess.ExpiresAt) / time.Second)
	if ttl < sessionTTLMinSeconds {
		ttl = sessionTTLMinSeconds
	}
	ts := s.db.Now().UnixMicro()
	if err := s.db.write(ctx, "sessions_by_user.insert", sessionIndexCQL, sess.UserID, sess.TokenHash, sess.ExpiresAt, ts, ttl); err != nil {
		return err
	}
	return s.db.write(ctx, "sessions.insert", sessionInsertCQL, sess.TokenHash, sess.UserID, sess.CreatedAt, sess.ExpiresAt, ts, ttl)
}

// Get reads a session by token hash.
func (s *Sessions) Get(ctx context.Context, tokenHash string) (domain.Session, error) {
	r, found, err := getRow[sessionRow](s.db.query(ctx, 0, sessionSelectCQL, tokenHash))
	if err != nil {
		return domain.Session{}, dbErr("sessions.get", err)
	}
	if !found {
		return domain.Session{}, domain.ErrNotFound
	}
	return domain.Session{TokenHash: r.TokenHash, UserID: r.UserID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
		Written: r.Written}, nil
}

// Delete revokes one session: the session first (it stops working at
// once), then its index entry, both at the session's write timestamp + 1,
// so the delete shadows the write even when the instance that wrote it had
// a clock ahead of ours (and the current time when that is later).
func (s *Sessions) Delete(ctx context.Context, sess domain.Session) error {
	ts := max(sess.Written+1, s.db.Now().UnixMicro())
	if err := s.db.write(ctx, "sessions.delete", sessionDeleteCQL, ts, sess.TokenHash); err != nil {
		return err
	}
	return s.db.write(ctx, "sessions_by_user.delete", sessionUnindexCQL, ts, sess.UserID, sess.TokenHash)
}

// revokeConcurrency bounds the deletes one revocation runs at once.
const revokeConcurrency = 16

// DeleteAll revokes every session of the user but keep, revokeConcurrency
// at a time: tens of thousands of sessions take seconds, not one round
// trip each in a row. (Requests check the account's status anyway, so a
// suspension does not wait for this: see accounts.Authenticate.)
func (s *Sessions) DeleteAll(ctx context.Context, userID, keep string) error {
	rows, err := selectRows[sessionIndexRow](s.db.query(ctx, 0, sessionsOfUserCQL, userID))
	if err != nil {
		return dbErr("sessions.list", err)
	}
	sem := make(chan struct{}, revokeConcurrency)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, r := range rows {
		if r.TokenHash == keep {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.Delete(ctx, domain.Session{TokenHash: r.TokenHash, UserID: userID, Written: r.Written}); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
