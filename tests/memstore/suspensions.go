package memstore

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// cell is one row of a table written USING TIMESTAMP: a write lands only
// if its timestamp is newer than the row's, a delete also on a tie (as in
// Cassandra, where a tombstone wins a tie).
type cell struct {
	s       domain.Suspension
	ts      int64
	deleted bool
}

func (s *Store) put(table map[string]cell, key string, v domain.Suspension, ts int64) {
	if c, ok := table[key]; !ok || ts > c.ts {
		table[key] = cell{s: v, ts: ts}
	}
}

func (s *Store) del(table map[string]cell, key string, ts int64) {
	if c, ok := table[key]; !ok || ts >= c.ts {
		table[key] = cell{s: c.s, ts: ts, deleted: true}
	}
}

// Suspensions is the store as moderation's suspension store: the list rows,
// the reverse lookup, the expiry entries and the history, each write at
// the account's version, one store call per row, and the bucket index as
// the repository keeps it (see Record, pruneBucket and Page).
func (s *Store) Suspensions() *Suspensions { return &Suspensions{s: s} }

// SkewedSuspensions is the store as a process whose clock is d ahead of
// the store's (behind, for d < 0) sees it: the expiry reader bounds its
// reads and its start by the earlier of that clock and the store's (the
// node's), as the repository's Suspensions.Expired does.
func (s *Store) SkewedSuspensions(d time.Duration) *Suspensions { return &Suspensions{s: s, skew: d} }

// Suspensions keeps the records derived from suspensions.
type Suspensions struct {
	s    *Store
	skew time.Duration
}

var _ moderation.Store = (*Suspensions)(nil)

func listKey(sp domain.Suspension) string {
	return sp.Bucket + "|" + strconv.FormatInt(sp.SuspendedAt.UnixMilli(), 10) + "|" + sp.UserID
}

func expiryKey(userID string, until time.Time) string {
	return strconv.FormatInt(until.UnixMilli(), 10) + "|" + userID
}

func (ss *Suspensions) write(name string, apply func()) error {
	_, err := ss.s.call(name, true, func() (bool, error) { apply(); return true, nil })
	return err
}

// Record writes the history entry, the list row, the lookup and the
// expiry entry, one call each, and tries them all whatever fails, as the
// repository sends the four at once: any of them may be left out. Once
// all four are written, the bucket's index entry: a read of its mark,
// then a write two microseconds after it (or at the clock's time).
func (ss *Suspensions) Record(_ context.Context, sp domain.Suspension, version int) error {
	s, ts := ss.s, int64(version)
	errs := []error{
		ss.writeEvent(moderation.SuspendedEvent(sp), ts),
		ss.write("users_by_status.insert", func() { s.put(s.list, listKey(sp), sp, ts) }),
		ss.write("suspended_users.insert", func() { s.put(s.lookup, sp.UserID, sp, ts) }),
	}
	if !sp.Until.IsZero() {
		errs = append(errs, ss.write("suspension_expiries.insert", func() { s.put(s.expiry, expiryKey(sp.UserID, sp.Until), sp, ts) }))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ss.indexBucket(sp.Bucket)
}

// indexBucket lists bucket in the index, as the repository's: a read of
// its entry's mark, then a write marking it live two microseconds or more
// after it (at the clock's time if that is later).
func (ss *Suspensions) indexBucket(bucket string) error {
	s := ss.s
	var ts int64
	if _, err := s.call("status_buckets.entry", false, func() (bool, error) {
		_, _, marked := s.bucketEntry(bucket)
		ts = max(s.stamp(), marked+2)
		return true, nil
	}); err != nil {
		return err
	}
	return ss.write("suspension_buckets.insert", func() { s.markBucket(bucket, false, ts) })
}

// Erase deletes the list row, prunes the bucket's index entry, then
// deletes the lookup, then the expiry entry, as the repository does.
func (ss *Suspensions) Erase(_ context.Context, sp domain.Suspension, version int) error {
	return ss.erase(sp, version, true)
}

// EraseListing is Erase without the lookup.
func (ss *Suspensions) EraseListing(_ context.Context, sp domain.Suspension, version int) error {
	return ss.erase(sp, version, false)
}

func (ss *Suspensions) erase(sp domain.Suspension, version int, lookup bool) error {
	s, ts := ss.s, int64(version)
	if err := ss.write("users_by_status.delete", func() { s.del(s.list, listKey(sp), ts) }); err != nil {
		return err
	}
	if err := ss.pruneBucket(sp.Bucket); err != nil {
		return err
	}
	if lookup {
		if err := ss.write("suspended_users.delete", func() { s.del(s.lookup, sp.UserID, ts) }); err != nil {
			return err
		}
	}
	if !sp.Until.IsZero() {
		return ss.write("suspension_expiries.delete", func() { s.del(s.expiry, expiryKey(sp.UserID, sp.Until), ts) })
	}
	return nil
}

// Lookup reads the reverse lookup.
func (ss *Suspensions) Lookup(_ context.Context, userID string) (domain.Suspension, error) {
	var out domain.Suspension
	found, err := ss.s.call("suspended_users.get", false, func() (bool, error) {
		c, ok := ss.s.lookup[userID]
		out = c.s
		return ok && !c.deleted, nil
	})
	if err == nil && !found {
		return domain.Suspension{}, domain.ErrNotFound
	}
	return out, err
}

// Page lists the suspended newest first, ties by user id descending (the
// buckets' order, buckets newest first), after the cursor, from the live
// list rows of the buckets the index lists, as the repository reads.
func (ss *Suspensions) Page(_ context.Context, after *moderation.Cursor, limit int) ([]domain.Suspension, error) {
	var out []domain.Suspension
	_, err := ss.s.call("users_by_status.page", false, func() (bool, error) {
		for _, c := range ss.s.list {
			if !c.deleted && ss.s.indexed(c.s.Bucket) && (after == nil || listedAfter(c.s, *after)) {
				out = append(out, c.s)
			}
		}
		return true, nil
	})
	sort.Slice(out, func(i, j int) bool {
		return listedAfter(out[j], moderation.Cursor{Bucket: out[i].Bucket, SuspendedAt: out[i].SuspendedAt, UserID: out[i].UserID})
	})
	return out[:min(limit, len(out))], err
}

// listedAfter reports whether sp comes after the position in the list:
// an older bucket, or in its bucket an older time or, at one time, a
// lower user id.
func listedAfter(sp domain.Suspension, at moderation.Cursor) bool {
	if sp.Bucket != at.Bucket {
		return sp.Bucket < at.Bucket
	}
	if !sp.SuspendedAt.Equal(at.SuspendedAt) {
		return sp.SuspendedAt.Before(at.SuspendedAt)
	}
	return sp.UserID < at.UserID
}

// Expired lists expiry entries whose end is at or before t, oldest first
// (ties by user id), up to limit.
//
// Like the repository's, it reads from a start that follows the entries
// it read up to ExpiryHorizon behind now: an entry written with an end
// further behind is never read. Now is the reader's clock or the store's
// (the node's), whichever is behind: t is bounded by it too.
// NodeNow reads the store's clock (the node's).
func (ss *Suspensions) NodeNow(_ context.Context) (time.Time, error) {
	var now time.Time
	_, err := ss.s.call("system.local.now", false, func() (bool, error) {
		now = ss.s.now
		return true, nil
	})
	return now, err
}

func (ss *Suspensions) Expired(_ context.Context, t time.Time, limit int) ([]domain.Suspension, error) {
	var out []domain.Suspension
	s := ss.s
	_, err := s.call("suspension_expiries.select", false, func() (bool, error) {
		out = nil
		var start time.Time
		if s.expiryStart != nil {
			start = *s.expiryStart
		}
		now := s.now
		if ss.skew < 0 {
			now = now.Add(ss.skew)
		}
		if t.After(now) {
			t = now
		}
		for _, c := range s.expiry {
			if !c.deleted && !c.s.Until.Before(start) && !c.s.Until.After(t) {
				out = append(out, domain.Suspension{UserID: c.s.UserID, Until: c.s.Until})
			}
		}
		sort.Slice(out, func(i, j int) bool {
			if !out[i].Until.Equal(out[j].Until) {
				return out[i].Until.Before(out[j].Until)
			}
			return out[i].UserID < out[j].UserID
		})
		out = out[:min(limit, len(out))]
		next := t
		if len(out) > 0 {
			next = out[0].Until
		}
		if latest := now.Add(-ExpiryHorizon); next.After(latest) {
			next = latest
		}
		if next.After(start) {
			s.expiryStart = &next
		}
		return true, nil
	})
	return out, err
}

// ExpiryHorizon is how far behind now the expiry reader's start stays,
// the repository's expiryHorizon.
const ExpiryHorizon = 2 * time.Minute

// EraseExpiry deletes one expiry entry.
func (ss *Suspensions) EraseExpiry(_ context.Context, userID string, until time.Time, version int) error {
	s := ss.s
	return ss.write("suspension_expiries.delete", func() { s.del(s.expiry, expiryKey(userID, until), int64(version)) })
}

// Records returns the live list rows, lookups and expiry entries of a
// user, for invariant checks.
func (s *Store) Records(userID string) (list, lookup, expiry []domain.Suspension) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, table := range []struct {
		m   map[string]cell
		out *[]domain.Suspension
	}{{s.list, &list}, {s.lookup, &lookup}, {s.expiry, &expiry}} {
		for _, c := range table.m {
			if !c.deleted && c.s.UserID == userID {
				*table.out = append(*table.out, c.s)
			}
		}
	}
	return list, lookup, expiry
}

// eventCell is one row of the moderation history, written USING
// TIMESTAMP (never deleted).
type eventCell struct {
	e  moderation.Event
	ts int64
}

func eventKey(userID string, at time.Time, kind moderation.EventKind) string {
	return userID + "|" + strconv.FormatInt(at.UnixMilli(), 10) + "|" + string(kind)
}

// writeEvent writes one history entry (one store call), keeping the row
// with the newest timestamp.
func (ss *Suspensions) writeEvent(e moderation.Event, ts int64) error {
	s := ss.s
	return ss.write("moderation_history.insert", func() {
		k := eventKey(e.UserID, e.At, e.Kind)
		if c, ok := s.history[k]; !ok || ts > c.ts {
			s.history[k] = eventCell{e: e, ts: ts}
		}
	})
}

// RecordSuspended writes the suspension's history entry (one call).
func (ss *Suspensions) RecordSuspended(_ context.Context, sp domain.Suspension, version int) error {
	return ss.writeEvent(moderation.SuspendedEvent(sp), int64(version))
}

// RecordLift writes the lift's history entries, one call each, and tries
// them all whatever fails, as the repository sends them at once.
func (ss *Suspensions) RecordLift(_ context.Context, l domain.Lift, version int) error {
	var errs []error
	for _, e := range moderation.LiftEvents(l) {
		errs = append(errs, ss.writeEvent(e, int64(version)))
	}
	return errors.Join(errs...)
}

// History reads the user's history, newest first (ties by kind,
// descending), after the cursor.
func (ss *Suspensions) History(_ context.Context, userID string, after *moderation.HistoryCursor, limit int) ([]moderation.Event, error) {
	var out []moderation.Event
	_, err := ss.s.call("moderation_history.page", false, func() (bool, error) {
		out = ss.s.events(userID)
		return true, nil
	})
	if after != nil {
		for len(out) > 0 && !historyBefore(out[0], after.At, after.Kind) {
			out = out[1:]
		}
	}
	return out[:min(limit, len(out))], err
}

// historyBefore reports whether e comes after the position (at, kind) in
// the history's order.
func historyBefore(e moderation.Event, at time.Time, kind moderation.EventKind) bool {
	return e.At.Before(at) || (e.At.Equal(at) && e.Kind < kind)
}

// events lists a user's history entries in the history's order (under the
// lock).
func (s *Store) events(userID string) []moderation.Event {
	var out []moderation.Event
	for _, c := range s.history {
		if c.e.UserID == userID {
			out = append(out, c.e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return historyBefore(out[j], out[i].At, out[i].Kind) })
	return out
}

// Events returns a user's history entries, newest first, for checks.
func (s *Store) Events(userID string) []moderation.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events(userID)
}

// Changes returns the rows every applied update of the account wrote, in
// order, for checks.
func (s *Store) Changes(userID string) []domain.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]domain.User(nil), s.changes[userID]...)
}

// pruneBucket marks an empty bucket emptied, as the repository's: a read
// of its entry, a read of the bucket's rows, then, if it found none, a
// mark one microsecond after the one it read, so a suspension that lands
// in the bucket meanwhile (it reads the entry after its row) marks it
// live after this. (The repository's delete of an entry written before
// the mark existed has no counterpart here: every entry has one.)
func (ss *Suspensions) pruneBucket(bucket string) error {
	s := ss.s
	var marked int64
	live, err := s.call("status_buckets.entry", false, func() (bool, error) {
		found, emptied, ts := s.bucketEntry(bucket)
		marked = ts
		return found && !emptied, nil
	})
	if err != nil || !live {
		return err
	}
	empty, err := s.call("status_buckets.check", false, func() (bool, error) {
		return !s.bucketHasRows(bucket), nil
	})
	if err != nil || !empty {
		return err
	}
	return ss.write("suspension_buckets.empty", func() { s.markBucket(bucket, true, marked+1) })
}
