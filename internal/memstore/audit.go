package memstore

import (
	"context"
	"sort"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Audit is the store as the repair's audit: whole-table scans, one call
// each, rows in a fixed order (one call order per schedule).
func (s *Store) Audit() moderation.Audit { return audit{s} }

type audit struct{ s *Store }

var _ moderation.Audit = audit{}

// each calls fn for the rows collect returns (read in one call).
func each[T any](a audit, name string, collect func() []T, fn func(T) error) error {
	var rows []T
	if _, err := a.s.call(name, false, func() (bool, error) { rows = collect(); return true, nil }); err != nil {
		return err
	}
	for _, r := range rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// EachSuspendedUser reads the accounts in id order, after from; the
// position it reports is the last id read (one slice: the whole table).
func (a audit) EachSuspendedUser(_ context.Context, from string, fn func(domain.User) error, progress func(string, float64)) error {
	last := from
	err := each(a, "users.scan", func() []domain.User {
		var out []domain.User
		for id := range a.s.users {
			if r, ok := a.s.liveUser(id); ok && r.u.Status == domain.StatusSuspended && id > from {
				out = append(out, r.u)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		if len(out) > 0 {
			last = out[len(out)-1].ID
		}
		return out
	}, fn)
	if err == nil && progress != nil {
		progress(last, 1)
	}
	return err
}

// live lists a table's live rows by user id (under the lock).
func live(table map[string]cell) []domain.Suspension {
	var out []domain.Suspension
	for _, c := range table {
		if !c.deleted {
			out = append(out, c.s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].UserID != out[j].UserID {
			return out[i].UserID < out[j].UserID
		}
		return out[i].SuspendedAt.Before(out[j].SuspendedAt)
	})
	return out
}

func (a audit) EachLookup(_ context.Context, fn func(domain.Suspension) error) error {
	return each(a, "suspended_users.scan", func() []domain.Suspension { return live(a.s.lookup) }, fn)
}

func (a audit) EachStatusRow(_ context.Context, fn func(domain.Suspension) error) error {
	return each(a, "users_by_status.scan", func() []domain.Suspension { return live(a.s.list) }, fn)
}

func (a audit) EachExpiry(_ context.Context, fn func(domain.Suspension) error) error {
	return each(a, "suspension_expiries.scan", func() []domain.Suspension {
		var out []domain.Suspension
		for _, e := range live(a.s.expiry) {
			out = append(out, domain.Suspension{UserID: e.UserID, Until: e.Until})
		}
		return out
	}, fn)
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
			indexed = append(indexed, b)
		}
		sort.Strings(indexed)
		withRows = a.bucketsWithRows()
		return true, nil
	})
	return indexed, withRows, err
}

func (a audit) HasSessions(_ context.Context, userID string) (bool, error) {
	return a.s.call("sessions.by_user", false, func() (bool, error) {
		for _, sess := range a.s.sessions {
			if sess.UserID == userID {
				return true, nil
			}
		}
		return false, nil
	})
}

func (a audit) IndexBucket(_ context.Context, bucket string) error {
	_, err := a.s.call("status_buckets.insert", true, func() (bool, error) {
		a.s.buckets[bucket] = true
		return true, nil
	})
	return err
}

func (a audit) PruneBucket(_ context.Context, bucket string) error {
	_, err := a.s.call("status_buckets.prune", true, func() (bool, error) {
		for _, b := range a.bucketsWithRows() {
			if b == bucket {
				return false, nil
			}
		}
		delete(a.s.buckets, bucket)
		return true, nil
	})
	return err
}
