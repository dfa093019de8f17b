package memstore

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Audit is the store as the repair's audit: each table's scan in one call,
// rows in key order (one call order per schedule), and point reads.
func (s *Store) Audit() moderation.Audit { return audit{s} }

type audit struct{ s *Store }

var _ moderation.Audit = audit{}

// scan calls fn for the rows collect returns (read in one call, under the
// lock) whose key is after from, in key order. Its one slice is the whole
// table: it reports the last key read as the position, all of it read.
func scan[T any](a audit, name, from string, collect func() []T, key func(T) string, fn func(T) error, progress func(string, float64)) error {
	var rows []T
	if _, err := a.s.call(name, false, func() (bool, error) {
		for _, r := range collect() {
			if key(r) > from {
				rows = append(rows, r)
			}
		}
		sort.Slice(rows, func(i, j int) bool { return key(rows[i]) < key(rows[j]) })
		return true, nil
	}); err != nil {
		return err
	}
	last := from
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
		last = key(r)
	}
	if progress != nil {
		progress(last, 1)
	}
	return nil
}

// EachModeratedUser reads the accounts suspended or lifted by id.
func (a audit) EachModeratedUser(_ context.Context, from string, fn func(domain.User) error, progress func(string, float64)) error {
	return scan(a, "users.scan", from, func() []domain.User {
		var out []domain.User
		for id := range a.s.users {
			if r, ok := a.s.liveUser(id); ok && (r.u.Status == domain.StatusSuspended || r.u.LastLift != nil) {
				out = append(out, r.u)
			}
		}
		return out
	}, func(u domain.User) string { return u.ID }, fn, progress)
}

// live lists a table's live rows (under the lock).
func live(table map[string]cell) []domain.Suspension {
	var out []domain.Suspension
	for _, c := range table {
		if !c.deleted {
			out = append(out, c.s)
		}
	}
	return out
}

// EachLookup reads the lookups by user id.
func (a audit) EachLookup(_ context.Context, from string, fn func(domain.Suspension) error, progress func(string, float64)) error {
	return scan(a, "suspended_users.scan", from, func() []domain.Suspension { return live(a.s.lookup) },
		func(s domain.Suspension) string { return s.UserID }, fn, progress)
}

// EachStatusRow reads the list rows by their key.
func (a audit) EachStatusRow(_ context.Context, from string, fn func(domain.Suspension) error, progress func(string, float64)) error {
	return scan(a, "users_by_status.scan", from, func() []domain.Suspension { return live(a.s.list) }, listKey, fn, progress)
}

// has reports whether table holds a live row at key (one read).
func (a audit) has(name string, table map[string]cell, key string) (bool, error) {
	return a.s.call(name, false, func() (bool, error) {
		c, ok := table[key]
		return ok && !c.deleted, nil
	})
}

func (a audit) ListedAs(_ context.Context, s domain.Suspension) (string, bool, error) {
	var name string
	found, err := a.s.call("users_by_status.get", false, func() (bool, error) {
		c, ok := a.s.list[listKey(s)]
		name = c.s.Username
		return ok && !c.deleted, nil
	})
	return name, found, err
}

func (a audit) HasExpiry(_ context.Context, s domain.Suspension) (bool, error) {
	return a.has("suspension_expiries.get", a.s.expiry, expiryKey(s.UserID, s.Until))
}

func (a audit) HasEvent(_ context.Context, e moderation.Event) (bool, error) {
	return a.s.call("moderation_history.get", false, func() (bool, error) {
		_, ok := a.s.history[eventKey(e.UserID, e.At, e.Kind)]
		return ok, nil
	})
}

// bucketsWithRows lists the buckets live list rows are in (under the lock).
func (a audit) bucketsWithRows() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range live(a.s.list) {
		if !seen[r.Bucket] {
			seen[r.Bucket] = true
			out = append(out, r.Bucket)
		}
	}
	sort.Strings(out)
	return out
}

func (a audit) Buckets(_ context.Context) (indexed, withRows []string, err error) {
	_, err = a.s.call("status_buckets.scan", false, func() (bool, error) {
		for b := range a.s.buckets {
			if a.s.indexed(b) {
				indexed = append(indexed, b)
			}
		}
		sort.Strings(indexed)
		withRows = a.bucketsWithRows()
		return true, nil
	})
	return indexed, withRows, err
}

func (a audit) IndexBucket(_ context.Context, bucket string) error {
	return (&Suspensions{s: a.s}).indexBucket(bucket)
}

// TidyIndex reads the index in one call, then deletes each entry marked
// emptied more than age ago (by the store's clock) at its mark's time,
// one call each, as the repository does. (The repository also marks the
// entries written before marks existed: every entry here has one.)
func (a audit) TidyIndex(_ context.Context, age time.Duration) (int, error) {
	marks := map[string]int64{}
	if _, err := a.s.call("status_buckets.scan", false, func() (bool, error) {
		before := a.s.now.Add(-age).UnixMicro()
		for b := range a.s.buckets {
			if found, emptied, ts := a.s.bucketEntry(b); found && emptied && ts < before {
				marks[b] = ts
			}
		}
		return true, nil
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, b := range slices.Sorted(maps.Keys(marks)) {
		if _, err := a.s.call("suspension_buckets.drop", true, func() (bool, error) {
			a.s.dropBucket(b, marks[b])
			return true, nil
		}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (a audit) PruneBucket(_ context.Context, bucket string) error {
	return (&Suspensions{s: a.s}).pruneBucket(bucket)
}
