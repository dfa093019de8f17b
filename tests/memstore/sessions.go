package memstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// sessionTables keep sessions and their index as Cassandra keeps them
// (repository.Sessions): every write carries a timestamp fixed when it is
// sent, each cell keeps the write with the highest, a delete shadows every
// cell written at or before its own (a delete wins a tie), and cells
// expire with their TTL. So a row can be partial: a sighting written after
// a revocation's delete, with a later timestamp, outlives it alone.
type sessionTables struct {
	rows map[string]*sessionCells // by token hash
	// The user's index entries: sessions_by_user (by token hash),
	// sessions_by_epoch (by password epoch, creation in ms and public id)
	// and sessions_by_user_id (by public id), each by user first.
	index   map[string]map[string]*indexCells
	byEpoch map[string]map[epochKey]*indexCells
	byID    map[string]map[string]*indexCells
	// entriesRead counts the entries the index reads returned
	// (SessionEntriesRead).
	entriesRead int
}

// epochKey is a row's key in sessions_by_epoch: the password epoch,
// creation as the node keeps it (ms), then public id.
type epochKey struct {
	epoch int
	at    int64
	id    string
}

func newSessionTables() sessionTables {
	return sessionTables{rows: map[string]*sessionCells{}, index: map[string]map[string]*indexCells{},
		byEpoch: map[string]map[epochKey]*indexCells{}, byID: map[string]map[string]*indexCells{}}
}

// sessionCells is a row of sessions.
type sessionCells struct {
	// login is the login's columns, written at written (0: never).
	login   domain.Session
	written int64
	// seen is last_seen, written at seenAt (0: never).
	seen    time.Time
	seenAt  int64
	deleted int64
	// expires ends the login's cells and the sighting's (their TTL).
	expires, seenExpires time.Time
}

// session is what a read of the row finds: nothing unless the login's
// cells are live (a row holding a sighting alone has no user_id).
func (c *sessionCells) session(now time.Time) (domain.Session, bool) {
	if c.written <= c.deleted || !now.Before(c.expires) {
		return domain.Session{}, false
	}
	s := c.login
	s.Written = c.written
	if c.seenAt > c.deleted && now.Before(c.seenExpires) {
		s.LastSeen = c.seen
	}
	return s, true
}

// indexCells is a row of sessions_by_user.
type indexCells struct {
	entry            domain.Session
	written, deleted int64
}

func (e *indexCells) live(now time.Time) bool {
	return e.written > e.deleted && now.Before(e.entry.ExpiresAt)
}

func (t sessionTables) row(hash string) *sessionCells {
	c, ok := t.rows[hash]
	if !ok {
		c = &sessionCells{}
		t.rows[hash] = c
	}
	return c
}

// entryIn is the user's row of one index table under key, made when
// missing.
func entryIn[K comparable](table map[string]map[K]*indexCells, userID string, key K) *indexCells {
	rows, ok := table[userID]
	if !ok {
		rows = map[K]*indexCells{}
		table[userID] = rows
	}
	e, ok := rows[key]
	if !ok {
		e = &indexCells{}
		rows[key] = e
	}
	return e
}

// write sets the entry's cells, at ts, unless a later write holds them.
func (e *indexCells) write(sess domain.Session, ts int64) {
	if ts > e.written {
		e.entry = domain.Session{TokenHash: sess.TokenHash, UserID: sess.UserID, CreatedAt: sess.CreatedAt, ExpiresAt: sess.ExpiresAt,
			PasswordEpoch: sess.PasswordEpoch}
		e.written = ts
	}
}

// read is the entry as a read finds it, with its write timestamp.
func (e *indexCells) read() domain.Session {
	s := e.entry
	s.Written = e.written
	return s
}

// indexCall is a store call on one index entry: its name and the entry.
type indexCall struct {
	name string
	cell func() *indexCells
}

// epochKeyOf is the entry's key in sessions_by_epoch.
func epochKeyOf(sess domain.Session) epochKey {
	return epochKey{epoch: sess.PasswordEpoch, at: sess.CreatedAt.UnixMilli(), id: sess.ID()}
}

// SessionEntriesRead is how many index entries the reads of a user's
// sessions (Entries, Newest, Entry) have returned: what a list or a
// revocation costs the node beside its round trips.
func (s *Store) SessionEntriesRead() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions.entriesRead
}

// Sessions is the store as the accounts' session store of an instance
// whose clock is the store's.
func (s *Store) Sessions() *Sessions { return &Sessions{s: s} }

// SessionsAhead is the session store of an instance whose clock runs d
// ahead of the store's: the timestamps of its writes (and so of its
// sightings, when its service has the same clock).
func (s *Store) SessionsAhead(d time.Duration) *Sessions { return &Sessions{s: s, ahead: d} }

// Sessions keeps login sessions, each statement of repository.Sessions a
// call of its own (GetMany of no hashes too, which the repository does
// not send). A session's cells live until its ExpiresAt exactly (the
// repository's TTL is in whole seconds, rounded down), and Get answers
// the whole session written, its client's address and agent too (the
// repository's Get reads neither; GetMany does).
type Sessions struct {
	s     *Store
	ahead time.Duration
}

// stamp is a write timestamp of this instance, fixed when the write is
// sent (a write held back lands with it).
func (ss *Sessions) stamp() int64 { return ss.s.Now().Add(ss.ahead).UnixMicro() }

// Create writes the index entries (one call each, in one order), then
// the session, at one timestamp. The entries keep creation as the node
// does, in ms.
func (ss *Sessions) Create(_ context.Context, sess domain.Session) error {
	ts := ss.stamp()
	entry := sess
	entry.CreatedAt = sess.CreatedAt.Truncate(time.Millisecond)
	for _, w := range []indexCall{
		{"sessions_by_user.insert", func() *indexCells { return entryIn(ss.s.sessions.index, sess.UserID, sess.TokenHash) }},
		{"sessions_by_epoch.insert", func() *indexCells { return entryIn(ss.s.sessions.byEpoch, sess.UserID, epochKeyOf(entry)) }},
		{"sessions_by_user_id.insert", func() *indexCells { return entryIn(ss.s.sessions.byID, sess.UserID, sess.ID()) }},
	} {
		if _, err := ss.s.call(w.name, true, func() (bool, error) {
			w.cell().write(entry, ts)
			return true, nil
		}); err != nil {
			return err
		}
	}
	_, err := ss.s.call("sessions.insert", true, func() (bool, error) {
		c := ss.s.sessions.row(sess.TokenHash)
		if ts > c.written {
			c.login, c.written, c.expires = sess, ts, sess.ExpiresAt
			c.login.LastSeen, c.login.Written = time.Time{}, 0
		}
		return true, nil
	})
	return err
}

// Get reads a live session.
func (ss *Sessions) Get(_ context.Context, hash string) (domain.Session, error) {
	var out domain.Session
	found, err := ss.s.call("sessions.get", false, func() (bool, error) {
		c, ok := ss.s.sessions.rows[hash]
		if !ok {
			return false, nil
		}
		var live bool
		out, live = c.session(ss.s.now)
		return live, nil
	})
	if err == nil && !found {
		return domain.Session{}, domain.ErrNotFound
	}
	return out, err
}

// GetMany reads the live sessions among the hashes.
func (ss *Sessions) GetMany(_ context.Context, hashes []string) (map[string]domain.Session, error) {
	out := map[string]domain.Session{}
	_, err := ss.s.call("sessions.get_many", false, func() (bool, error) {
		for _, h := range hashes {
			if c, ok := ss.s.sessions.rows[h]; ok {
				if s, live := c.session(ss.s.now); live {
					out[h] = s
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Entries lists the user's live entries of sessions_by_user.
func (ss *Sessions) Entries(_ context.Context, userID string) ([]domain.Session, error) {
	var out []domain.Session
	_, err := ss.s.call("sessions.list", false, func() (bool, error) {
		for _, e := range ss.s.sessions.index[userID] {
			if e.live(ss.s.now) {
				out = append(out, e.read())
			}
		}
		ss.s.sessions.entriesRead += len(out)
		return true, nil
	})
	// In one order, so a schedule's calls are the same every run.
	slices.SortFunc(out, func(a, b domain.Session) int { return strings.Compare(a.TokenHash, b.TokenHash) })
	return out, err
}

// Newest reads up to limit live entries of the epoch's partition of
// sessions_by_epoch, newest first, after before (compared as the node
// does: creation in ms, then id).
func (ss *Sessions) Newest(_ context.Context, userID string, epoch int, before *accounts.SessionKey, limit int) ([]domain.Session, error) {
	var out []domain.Session
	_, err := ss.s.call("sessions_by_epoch.page", false, func() (bool, error) {
		var keys []epochKey
		for k, e := range ss.s.sessions.byEpoch[userID] {
			if k.epoch == epoch && e.live(ss.s.now) && (before == nil || compareEpochKeys(k, epochKey{epoch: epoch, at: before.At.UnixMilli(), id: before.ID}) < 0) {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b epochKey) int { return compareEpochKeys(b, a) })
		for _, k := range keys[:min(limit, len(keys))] {
			out = append(out, ss.s.sessions.byEpoch[userID][k].read())
		}
		ss.s.sessions.entriesRead += len(out)
		return true, nil
	})
	return out, err
}

// compareEpochKeys orders the keys of one epoch's partition as the node
// does: creation, then id.
func compareEpochKeys(a, b epochKey) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// Entry reads the user's live entry of sessions_by_user_id under the
// public id.
func (ss *Sessions) Entry(_ context.Context, userID, sessionID string) (domain.Session, error) {
	var out domain.Session
	found, err := ss.s.call("sessions_by_user_id.get", false, func() (bool, error) {
		e, ok := ss.s.sessions.byID[userID][sessionID]
		if !ok || !e.live(ss.s.now) {
			return false, nil
		}
		out = e.read()
		ss.s.sessions.entriesRead++
		return true, nil
	})
	if err == nil && !found {
		return domain.Session{}, domain.ErrNotFound
	}
	return out, err
}

// Touch writes last_seen alone, at the sighting's time as timestamp.
func (ss *Sessions) Touch(_ context.Context, sess domain.Session, seen time.Time) error {
	ts := seen.UnixMicro()
	_, err := ss.s.call("sessions.touch", true, func() (bool, error) {
		c := ss.s.sessions.row(sess.TokenHash)
		if ts > c.seenAt {
			c.seen, c.seenAt, c.seenExpires = seen, ts, sess.ExpiresAt
		}
		return true, nil
	})
	return err
}

// Delete revokes one session: the session, then its index entries (one
// call each, in one order), at its write timestamp + 1 (or this
// instance's clock, when later). The entry newest first is keyed by the
// creation given, as the repository's delete is (none without one).
func (ss *Sessions) Delete(_ context.Context, sess domain.Session) error {
	ts := max(sess.Written+1, ss.stamp())
	if _, err := ss.s.call("sessions.delete", true, func() (bool, error) {
		c := ss.s.sessions.row(sess.TokenHash)
		c.deleted = max(c.deleted, ts)
		return true, nil
	}); err != nil {
		return err
	}
	deletes := []indexCall{
		{"sessions_by_user.delete", func() *indexCells { return entryIn(ss.s.sessions.index, sess.UserID, sess.TokenHash) }},
		{"sessions_by_user_id.delete", func() *indexCells { return entryIn(ss.s.sessions.byID, sess.UserID, sess.ID()) }},
	}
	if !sess.CreatedAt.IsZero() {
		deletes = append(deletes, indexCall{"sessions_by_epoch.delete", func() *indexCells { return entryIn(ss.s.sessions.byEpoch, sess.UserID, epochKeyOf(sess)) }})
	}
	var errs []error
	for _, d := range deletes {
		_, err := ss.s.call(d.name, true, func() (bool, error) {
			e := d.cell()
			e.deleted = max(e.deleted, ts)
			return true, nil
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// DeleteAll revokes every session of the user but keep, one after another
// (the repository runs revokeConcurrency, 16, at once), going on past a
// failure.
func (ss *Sessions) DeleteAll(ctx context.Context, userID, keep string) error {
	entries, err := ss.Entries(ctx, userID)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.TokenHash != keep {
			errs = append(errs, ss.Delete(ctx, e))
		}
	}
	return errors.Join(errs...)
}
