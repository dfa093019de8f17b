package domain

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// SuspensionAudit reads everything the repair cross-checks. It scans whole
// tables: a command for operators, never a request path.
type SuspensionAudit interface {
	// EachSuspendedUser calls fn for every account whose status is suspended.
	EachSuspendedUser(ctx context.Context, fn func(User) error) error
	// EachLookup calls fn for every reverse lookup row.
	EachLookup(ctx context.Context, fn func(Suspension) error) error
	// EachStatusRow calls fn for every row of the suspended list.
	EachStatusRow(ctx context.Context, fn func(Suspension) error) error
	// Buckets returns the indexed buckets and the buckets holding rows.
	Buckets(ctx context.Context) (indexed, withRows []string, err error)
	// HasSessions reports whether the user has any session left.
	HasSessions(ctx context.Context, userID string) (bool, error)
	// IndexBucket adds a bucket to the index; PruneBucket drops it if empty.
	IndexBucket(ctx context.Context, bucket string) error
	PruneBucket(ctx context.Context, bucket string) error
}

// RepairReport says what a repair found (and fixed, unless it was a dry run).
type RepairReport struct {
	Problems []string
	Fixed    int
}

// RepairSuspensions cross-checks the account rows (the truth), the reverse
// lookup, the suspended list and its bucket index, and makes the derived
// records agree with the accounts (S2): a suspended account gets its
// records and loses its sessions; a record of a suspension its account no
// longer has is erased; buckets are indexed exactly when they hold rows.
// With dryRun it only reports.
func (m *Moderation) RepairSuspensions(ctx context.Context, audit SuspensionAudit, dryRun bool) (RepairReport, error) {
	var rep RepairReport
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	fix := func(err error) error {
		if err == nil {
			rep.Fixed++
		}
		return err
	}

	suspended := map[string]User{}
	if err := audit.EachSuspendedUser(ctx, func(u User) error {
		if u.Suspension != nil {
			suspended[u.ID] = u
		}
		return nil
	}); err != nil {
		return rep, err
	}
	lookups := map[string]Suspension{}
	if err := audit.EachLookup(ctx, func(s Suspension) error { lookups[s.UserID] = s; return nil }); err != nil {
		return rep, err
	}
	rows := map[string][]Suspension{}
	if err := audit.EachStatusRow(ctx, func(s Suspension) error { rows[s.UserID] = append(rows[s.UserID], s); return nil }); err != nil {
		return rep, err
	}

	same := func(a, b Suspension) bool { return a.SuspendedAt.Equal(b.SuspendedAt) && a.Bucket == b.Bucket }
	var errs []error
	for id, u := range suspended {
		s := *u.Suspension
		l, hasLookup := lookups[id]
		hasRow := false
		for _, r := range rows[id] {
			hasRow = hasRow || same(r, s)
		}
		sessions, err := audit.HasSessions(ctx, id)
		if err != nil {
			return rep, err
		}
		if hasLookup && same(l, s) && hasRow && !sessions {
			continue
		}
		problem("user %s is suspended (since %s) but list row present=%v, reverse lookup current=%v, sessions left=%v",
			id, s.SuspendedAt.Format("2006-01-02T15:04:05.000Z"), hasRow, hasLookup && same(l, s), sessions)
		if !dryRun {
			errs = append(errs, fix(m.finishSuspension(ctx, s, u.Version)))
		}
	}
	// Records of suspensions that their accounts no longer have.
	stale := func(kind string, s Suspension) {
		if u, ok := suspended[s.UserID]; ok && same(*u.Suspension, s) {
			return
		}
		problem("%s of user %s (suspended at %s) is not backed by the account", kind, s.UserID, s.SuspendedAt.Format("2006-01-02T15:04:05.000Z"))
		if dryRun {
			return
		}
		u, err := m.users.GetSerial(ctx, s.UserID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
			return
		}
		switch {
		case u.Status == StatusSuspended && u.Suspension != nil && same(*u.Suspension, s):
			return // suspended again meanwhile
		case u.Status == StatusSuspended && u.Suspension != nil:
			// Suspended, but differently: the lookup row is rewritten by the
			// fix above; only the old list row and expiry entry go. (Erasing
			// the lookup at the version the fix wrote it would delete it.)
			if kind == "list row" {
				errs = append(errs, fix(m.suspensions.EraseListing(ctx, s, u.Version)))
			}
		default:
			errs = append(errs, fix(m.suspensions.Erase(ctx, s, u.Version)))
		}
	}
	for _, l := range lookups {
		stale("reverse lookup", l)
	}
	for _, rs := range rows {
		for _, r := range rs {
			stale("list row", r)
		}
	}
	// The bucket index: exactly the buckets with rows.
	indexed, withRows, err := audit.Buckets(ctx)
	if err != nil {
		return rep, errors.Join(append(errs, err)...)
	}
	has := map[string]bool{}
	for _, b := range withRows {
		has[b] = true
	}
	for _, b := range withRows {
		if !slices.Contains(indexed, b) {
			problem("bucket %s holds suspensions but is not indexed", b)
			if !dryRun {
				errs = append(errs, fix(audit.IndexBucket(ctx, b)))
			}
		}
	}
	for _, b := range indexed {
		if !has[b] {
			problem("bucket %s is indexed but empty", b)
			if !dryRun {
				errs = append(errs, fix(audit.PruneBucket(ctx, b)))
			}
		}
	}
	return rep, errors.Join(errs...)
}
