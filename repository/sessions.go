package repository

import (
	"context"
	"errors"
	"time"

	"github.com/gocql/gocql"

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
}

const (
	sessionInsertCQL     = `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) USING TTL ?`
	sessionIndexCQL      = `INSERT INTO sessions_by_user (user_id, token_hash, expires_at) VALUES (?, ?, ?) USING TTL ?`
	sessionSelectCQL     = `SELECT token_hash, user_id, created_at, expires_at FROM sessions WHERE token_hash = ?`
	sessionDeleteCQL     = `DELETE FROM sessions WHERE token_hash = ?`
	sessionUnindexCQL    = `DELETE FROM sessions_by_user WHERE user_id = ? AND token_hash = ?`
	sessionsOfUserCQL    = `SELECT token_hash FROM sessions_by_user WHERE user_id = ?`
	sessionTTLMinSeconds = 1
)

// Create writes the index entry first, then the session: a session that
// exists is always listed, so revoking all of a user's sessions finds it.
func (s *Sessions) Create(ctx context.Context, sess domain.Session) error {
	ttl := int(time.Until(sess.ExpiresAt) / time.Second)
	if ttl < sessionTTLMinSeconds {
		ttl = sessionTTLMinSeconds
	}
	if err := s.db.write(ctx, "sessions_by_user.insert", sessionIndexCQL, sess.UserID, sess.TokenHash, sess.ExpiresAt, ttl); err != nil {
		return err
	}
	return s.db.write(ctx, "sessions.insert", sessionInsertCQL, sess.TokenHash, sess.UserID, sess.CreatedAt, sess.ExpiresAt, ttl)
}

// Get reads a session by token hash.
func (s *Sessions) Get(ctx context.Context, tokenHash string) (domain.Session, error) {
	var r sessionRow
	err := s.db.Session.ContextQuery(ctx, sessionSelectCQL, nil).Bind(tokenHash).GetRelease(&r)
	if errors.Is(err, gocql.ErrNotFound) {
		return domain.Session{}, domain.ErrNotFound
	}
	if err != nil {
		return domain.Session{}, dbErr("sessions.get", err)
	}
	return domain.Session{TokenHash: r.TokenHash, UserID: r.UserID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}, nil
}

// Delete revokes one session: the session first (it stops working at
// once), then its index entry.
func (s *Sessions) Delete(ctx context.Context, sess domain.Session) error {
	if err := s.db.write(ctx, "sessions.delete", sessionDeleteCQL, sess.TokenHash); err != nil {
		return err
	}
	return s.db.write(ctx, "sessions_by_user.delete", sessionUnindexCQL, sess.UserID, sess.TokenHash)
}

// DeleteAll revokes every session of the user but keep.
func (s *Sessions) DeleteAll(ctx context.Context, userID, keep string) error {
	var hashes []string
	if err := s.db.Session.ContextQuery(ctx, sessionsOfUserCQL, nil).Bind(userID).SelectRelease(&hashes); err != nil {
		return dbErr("sessions.list", err)
	}
	var errs []error
	for _, h := range hashes {
		if h == keep {
			continue
		}
		errs = append(errs, s.Delete(ctx, domain.Session{TokenHash: h, UserID: userID}))
	}
	return errors.Join(errs...)
}
