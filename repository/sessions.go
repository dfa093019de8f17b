package repository

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	// tracer, when set, traces the reads of a page's slices (tests count
	// the tombstones they meet).
	tracer gocql.Tracer
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
	Written  int64     `db:"written"`
	LastSeen time.Time `db:"last_seen"`
	// PasswordEpoch is the account's when the login checked the password
	// (015; null, so 0, before).
	PasswordEpoch int `db:"password_epoch"`
	// MadeWith is what the login proved, comma-separated (028; null
	// before).
	MadeWith string `db:"made_with"`
}

// columns are sessionSelectCQL's.
func (r *sessionRow) columns() []any {
	return []any{&r.TokenHash, &r.UserID, &r.CreatedAt, &r.ExpiresAt, &r.Written, &r.LastSeen, &r.PasswordEpoch, &r.MadeWith}
}

func (r sessionRow) toDomain() domain.Session {
	s := domain.Session{TokenHash: r.TokenHash, UserID: r.UserID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
		Written: r.Written, LastSeen: r.LastSeen, PasswordEpoch: r.PasswordEpoch}
	if r.MadeWith != "" {
		s.MadeWith = strings.Split(r.MadeWith, ",")
	}
	return s
}

// sessionDetailRow is a row of sessions as its owner's list reads it.
type sessionDetailRow struct {
	sessionRow
	UserAgent string `db:"user_agent"`
	ClientIP  string `db:"client_ip"`
}

// columns are sessionsSelectManyCQL's.
func (r *sessionDetailRow) columns() []any {
	return append(r.sessionRow.columns(), &r.UserAgent, &r.ClientIP)
}

// sessionIndexRow is an entry of a user's sessions as sessionsOfUserCQL
// (sessions_by_user), sessionsPageCQL (sessions_by_epoch) and
// sessionEntryCQL (sessions_by_user_id) read it.
type sessionIndexRow struct {
	TokenHash string    `db:"token_hash"`
	Written   int64     `db:"written"`
	CreatedAt time.Time `db:"created_at"`
	ExpiresAt time.Time `db:"expires_at"`
	// PasswordEpoch is the session's (037; null, so 0, in an entry of
	// sessions_by_user from before).
	PasswordEpoch int `db:"password_epoch"`
}

// columns are sessionsOfUserCQL's.
func (r *sessionIndexRow) columns() []any {
	return []any{&r.TokenHash, &r.Written, &r.CreatedAt, &r.ExpiresAt, &r.PasswordEpoch}
}

func (r sessionIndexRow) toDomain(userID string) domain.Session {
	return domain.Session{TokenHash: r.TokenHash, UserID: userID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Written: r.Written,
		PasswordEpoch: r.PasswordEpoch}
}

const (
	sessionInsertCQL versionedCQL = `INSERT INTO sessions (token_hash, user_id, created_at, expires_at, user_agent, client_ip, password_epoch, made_with) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionIndexCQL  versionedCQL = `INSERT INTO sessions_by_user (user_id, token_hash, created_at, expires_at, password_epoch) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionSelectCQL readCQL      = `SELECT token_hash, user_id, created_at, expires_at, WRITETIME(user_id) AS written, last_seen, password_epoch, made_with FROM sessions WHERE token_hash = ?`
	// sessionsSelectManyCQL reads the sessions of one page of a user's
	// list at once (their partitions, by IN).
	sessionsSelectManyCQL readCQL = `SELECT token_hash, user_id, created_at, expires_at, WRITETIME(user_id) AS written, last_seen, password_epoch, made_with, user_agent, client_ip FROM sessions WHERE token_hash IN ?`
	// sessionTouchCQL records a sighting: last_seen alone, at the
	// sighting's own timestamp, expiring with the session.
	sessionTouchCQL      versionedCQL = `UPDATE sessions USING TIMESTAMP ? AND TTL ? SET last_seen = ? WHERE token_hash = ?`
	sessionDeleteCQL     versionedCQL = `DELETE FROM sessions USING TIMESTAMP ? WHERE token_hash = ?`
	sessionUnindexCQL    versionedCQL = `DELETE FROM sessions_by_user USING TIMESTAMP ? WHERE user_id = ? AND token_hash = ?`
	sessionsOfUserCQL    readCQL      = `SELECT token_hash, WRITETIME(expires_at) AS written, created_at, expires_at, password_epoch FROM sessions_by_user WHERE user_id = ?`
	sessionTTLMinSeconds              = 1

	// The indexes a page and a revocation read (037): newest first in a
	// partition per password epoch, and by public id.
	sessionByEpochCQL     versionedCQL = `INSERT INTO sessions_by_epoch (user_id, password_epoch, created_at, session_id, token_hash, expires_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionByIDCQL        versionedCQL = `INSERT INTO sessions_by_user_id (user_id, session_id, token_hash, password_epoch, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL ?`
	sessionUnepochCQL     versionedCQL = `DELETE FROM sessions_by_epoch USING TIMESTAMP ? WHERE user_id = ? AND password_epoch = ? AND created_at = ? AND session_id = ?`
	sessionUnbyIDCQL      versionedCQL = `DELETE FROM sessions_by_user_id USING TIMESTAMP ? WHERE user_id = ? AND session_id = ?`
	sessionsPageCQL       readCQL      = `SELECT token_hash, WRITETIME(expires_at) AS written, created_at, expires_at, password_epoch FROM sessions_by_epoch WHERE user_id = ? AND password_epoch = ? LIMIT ?`
	sessionsPageBeforeCQL readCQL      = `SELECT token_hash, WRITETIME(expires_at) AS written, created_at, expires_at, password_epoch FROM sessions_by_epoch WHERE user_id = ? AND password_epoch = ? AND (created_at, session_id) < (?, ?) LIMIT ?`
	sessionEntryCQL       readCQL      = `SELECT token_hash, WRITETIME(expires_at) AS written, created_at, expires_at, password_epoch FROM sessions_by_user_id WHERE user_id = ? AND session_id = ?`
)

// orUnset is s, or no value at all when empty (no cell, no tombstone).
func orUnset(s string) any {
	if s == "" {
		return gocql.UnsetValue
	}
	return s
}

// ttlUntil is the TTL, in whole seconds (at least one), of a row that
// lives until expires.
func (s *Sessions) ttlUntil(expires time.Time) int {
	return max(int(expires.Sub(s.db.Now())/time.Second), sessionTTLMinSeconds)
}

// Create writes the index entries first (the three at once), then the
// session: a session that exists is always listed, and revoking all of a
// user's sessions finds it. Every row carries one timestamp, which the
// entries keep for revocation.
func (s *Sessions) Create(ctx context.Context, sess domain.Session) error {
	ttl := s.ttlUntil(sess.ExpiresAt)
	ts := s.db.Now().UnixMicro()
	id := sess.ID()
	if err := all(ctx, []func(ctx context.Context) error{
		func(ctx context.Context) error {
			return s.db.write(ctx, "sessions_by_user.insert", sessionIndexCQL, sess.UserID, sess.TokenHash, sess.CreatedAt, sess.ExpiresAt, sess.PasswordEpoch, ts, ttl)
		},
		func(ctx context.Context) error {
			return s.db.write(ctx, "sessions_by_epoch.insert", sessionByEpochCQL, sess.UserID, sess.PasswordEpoch, sess.CreatedAt, id, sess.TokenHash, sess.ExpiresAt, ts, ttl)
		},
		func(ctx context.Context) error {
			return s.db.write(ctx, "sessions_by_user_id.insert", sessionByIDCQL, sess.UserID, id, sess.TokenHash, sess.PasswordEpoch, sess.CreatedAt, sess.ExpiresAt, ts, ttl)
		},
	}); err != nil {
		return err
	}
	return s.db.write(ctx, "sessions.insert", sessionInsertCQL, sess.TokenHash, sess.UserID, sess.CreatedAt, sess.ExpiresAt,
		orUnset(sess.UserAgent), orUnset(sess.ClientIP), sess.PasswordEpoch, orUnset(strings.Join(sess.MadeWith, ",")), ts, ttl)
}

// Get reads a session by token hash. A row without user_id is no session:
// all a late sighting leaves of a revoked one (see Touch).
func (s *Sessions) Get(ctx context.Context, tokenHash string) (domain.Session, error) {
	r, found, err := getRow[sessionRow](s.db.query(ctx, 0, sessionSelectCQL, tokenHash))
	if err != nil {
		return domain.Session{}, dbErr("sessions.get", err)
	}
	if !found || r.UserID == "" {
		return domain.Session{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}

// GetMany reads the sessions of the token hashes in one statement; rows
// without user_id are left out, as Get leaves them.
func (s *Sessions) GetMany(ctx context.Context, tokenHashes []string) (map[string]domain.Session, error) {
	out := make(map[string]domain.Session, len(tokenHashes))
	if len(tokenHashes) == 0 {
		return out, nil
	}
	rows, err := selectRows[sessionDetailRow](s.db.query(ctx, 0, sessionsSelectManyCQL, tokenHashes))
	if err != nil {
		return nil, dbErr("sessions.get_many", err)
	}
	for _, r := range rows {
		if r.UserID == "" {
			continue
		}
		d := r.toDomain()
		d.UserAgent, d.ClientIP = r.UserAgent, r.ClientIP
		out[r.TokenHash] = d
	}
	return out, nil
}

// Entries reads the user's index entries (one partition).
func (s *Sessions) Entries(ctx context.Context, userID string) ([]domain.Session, error) {
	rows, err := selectRows[sessionIndexRow](s.db.query(ctx, 0, sessionsOfUserCQL, userID))
	if err != nil {
		return nil, dbErr("sessions.list", err)
	}
	out := make([]domain.Session, len(rows))
	for i, r := range rows {
		out[i] = r.toDomain(userID)
	}
	return out, nil
}

// Newest reads one slice of the user's sessions opened at the password
// epoch, newest first (creation, then id, descending): the first limit
// entries, or those after before when set.
func (s *Sessions) Newest(ctx context.Context, userID string, epoch int, before *accounts.SessionKey, limit int) ([]domain.Session, error) {
	q := s.db.query(ctx, 0, sessionsPageCQL, userID, epoch, limit)
	if before != nil {
		q = s.db.query(ctx, 0, sessionsPageBeforeCQL, userID, epoch, before.At, before.ID, limit)
	}
	rows, err := selectRows[sessionIndexRow](traced(q, s.tracer))
	if err != nil {
		return nil, dbErr("sessions_by_epoch.page", err)
	}
	out := make([]domain.Session, len(rows))
	for i, r := range rows {
		out[i] = r.toDomain(userID)
	}
	return out, nil
}

// Entry reads the user's entry of the session whose public id is
// sessionID, by key (domain.ErrNotFound when there is none).
func (s *Sessions) Entry(ctx context.Context, userID, sessionID string) (domain.Session, error) {
	r, found, err := getRow[sessionIndexRow](s.db.query(ctx, 0, sessionEntryCQL, userID, sessionID))
	if err != nil {
		return domain.Session{}, dbErr("sessions_by_user_id.get", err)
	}
	if !found {
		return domain.Session{}, domain.ErrNotFound
	}
	return r.toDomain(userID), nil
}

// Touch records that the session was seen at seen: last_seen alone, USING
// TIMESTAMP seen (µs) and with the session's remaining TTL. The timestamp
// is the sighting's own, so of two sightings landing in any order the
// later is kept, and a sighting that lands after a revocation is shadowed
// by its delete (session write timestamp + 1, or the revoking clock)
// unless the sighting's clock was further ahead. Then its cell outlives
// the delete in a row that has no user_id, created_at or expires_at: Get
// and GetMany take such a row for no session, the index entry that lists
// a session is gone, and the cell expires with the TTL it carries. Not a
// lightweight transaction: a conditional write cannot carry its own
// timestamp, and its Paxos timestamp could as well be ahead of the delete.
func (s *Sessions) Touch(ctx context.Context, sess domain.Session, seen time.Time) error {
	return s.db.write(ctx, "sessions.touch", sessionTouchCQL, seen.UnixMicro(), s.ttlUntil(sess.ExpiresAt), seen, sess.TokenHash)
}

// Delete revokes one session: the session first (it stops working at
// once), then its index entries (the three at once), all at the session's
// write timestamp + 1, so the delete shadows the write even when the
// instance that wrote it had a clock ahead of ours (and the current time
// when that is later). The entry newest first is keyed by the session's
// epoch and creation, which every caller has (the session row and each
// entry keep them); a session without a creation (from before 010, long
// expired) has none.
func (s *Sessions) Delete(ctx context.Context, sess domain.Session) error {
	ts := max(sess.Written+1, s.db.Now().UnixMicro())
	if err := s.db.write(ctx, "sessions.delete", sessionDeleteCQL, ts, sess.TokenHash); err != nil {
		return err
	}
	id := sess.ID()
	deletes := []func(ctx context.Context) error{
		func(ctx context.Context) error {
			return s.db.write(ctx, "sessions_by_user.delete", sessionUnindexCQL, ts, sess.UserID, sess.TokenHash)
		},
		func(ctx context.Context) error {
			return s.db.write(ctx, "sessions_by_user_id.delete", sessionUnbyIDCQL, ts, sess.UserID, id)
		},
	}
	if !sess.CreatedAt.IsZero() {
		deletes = append(deletes, func(ctx context.Context) error {
			return s.db.write(ctx, "sessions_by_epoch.delete", sessionUnepochCQL, ts, sess.UserID, sess.PasswordEpoch, sess.CreatedAt, id)
		})
	}
	return all(ctx, deletes)
}

// revokeConcurrency bounds the deletes one revocation runs at once.
const revokeConcurrency = 16

// DeleteAll revokes every session of the user but keep, revokeConcurrency
// at a time: tens of thousands of sessions take seconds, not one round
// trip each in a row. (Requests check the account's status anyway, so a
// suspension does not wait for this: see accounts.Service.Authenticate.)
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
			if err := s.Delete(ctx, r.toDomain(userID)); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
