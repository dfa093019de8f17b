package moderation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"shelf/domain"
)

// Audit reads everything the repair cross-checks: a command for
// operators, never a request path. The accounts are read in slices of the
// table (it grows with every signup), resumable; the derived records grow
// only with the suspensions and are read whole, a page at a time.
type Audit interface {
	// EachSuspendedUser calls fn for every account whose status is
	// suspended, in slices of the table, starting after position from
	// ("": the beginning). After each slice it calls progress (when set)
	// with the position reached, to resume from, and the share of the
	// table read so far (0 to 1).
	EachSuspendedUser(ctx context.Context, from string, fn func(domain.User) error, progress func(at string, done float64)) error
	// EachLookup calls fn for every reverse lookup row.
	EachLookup(ctx context.Context, fn func(domain.Suspension) error) error
	// EachStatusRow calls fn for every row of the suspended list.
	EachStatusRow(ctx context.Context, fn func(domain.Suspension) error) error
	// EachExpiry calls fn for every expiry entry (UserID and Until set).
	EachExpiry(ctx context.Context, fn func(domain.Suspension) error) error
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

// RepairOptions says how a repair runs.
type RepairOptions struct {
	// DryRun only reports.
	DryRun bool
	// From resumes the scan of the accounts after this position (one
	// Progress reported in an earlier run); "" starts at the beginning.
	From string
	// Progress, when set, is told after each slice of the accounts where
	// the scan stands and how much of it is done.
	Progress func(at string, done float64)
}

// RepairSuspensions cross-checks the account rows (the truth), the reverse
// lookup, the suspended list and its bucket index, and makes the derived
// records agree with the accounts (S2): a suspended account gets its
// records and loses its sessions; a record of a suspension its account no
// longer has is erased; buckets are indexed exactly when they hold rows.
// With dryRun it only reports.
func (m *Service) RepairSuspensions(ctx context.Context, audit Audit, dryRun bool) (RepairReport, error) {
	return m.Repair(ctx, audit, RepairOptions{DryRun: dryRun})
}

// Repair is RepairSuspensions with options. It reads the derived records,
// then the accounts slice by slice, fixing each suspended account as it
// meets it, so it can run while traffic flows and resume where a stopped
// run reached; then it checks each record nobody met against its account,
// read again at SERIAL.
func (m *Service) Repair(ctx context.Context, audit Audit, o RepairOptions) (RepairReport, error) {
	r := &repair{m: m, audit: audit, dryRun: o.DryRun, suspended: map[string]domain.User{}}
	if err := r.loadRecords(ctx); err != nil {
		return r.report, err
	}
	if err := audit.EachSuspendedUser(ctx, o.From, func(u domain.User) error {
		if u.Suspension == nil {
			return nil
		}
		r.suspended[u.ID] = u
		return r.finishSuspended(ctx, u)
	}, o.Progress); err != nil {
		return r.report, errors.Join(append(r.errs, err)...)
	}
	r.eraseStale(ctx)
	if err := r.indexBuckets(ctx); err != nil {
		return r.report, errors.Join(append(r.errs, err)...)
	}
	return r.report, errors.Join(r.errs...)
}

// repair is one run of RepairSuspensions: what it read, found and fixed.
type repair struct {
	m      *Service
	audit  Audit
	dryRun bool
	report RepairReport
	errs   []error // of the fixes; the run goes on past them
	// suspended accounts, reverse lookups, list rows and expiry entries
	// by user id.
	suspended map[string]domain.User
	lookups   map[string]domain.Suspension
	rows      map[string][]domain.Suspension
	expiries  map[string][]time.Time
}

func (r *repair) problem(format string, args ...any) {
	r.report.Problems = append(r.report.Problems, fmt.Sprintf(format, args...))
}

// fixed records the outcome of one fix.
func (r *repair) fixed(err error) {
	if err == nil {
		r.report.Fixed++
	}
	r.errs = append(r.errs, err)
}

// sameSuspension reports whether two records are of one suspension.
func sameSuspension(a, b domain.Suspension) bool {
	return a.SuspendedAt.Equal(b.SuspendedAt) && a.Bucket == b.Bucket
}

// loadRecords reads every derived record: reverse lookups, expiry entries
// and list rows (as many as there are suspensions).
func (r *repair) loadRecords(ctx context.Context) error {
	r.lookups = map[string]domain.Suspension{}
	r.rows = map[string][]domain.Suspension{}
	if err := r.audit.EachLookup(ctx, func(s domain.Suspension) error { r.lookups[s.UserID] = s; return nil }); err != nil {
		return err
	}
	r.expiries = map[string][]time.Time{}
	if err := r.audit.EachExpiry(ctx, func(s domain.Suspension) error {
		r.expiries[s.UserID] = append(r.expiries[s.UserID], s.Until)
		return nil
	}); err != nil {
		return err
	}
	return r.audit.EachStatusRow(ctx, func(s domain.Suspension) error {
		r.rows[s.UserID] = append(r.rows[s.UserID], s)
		return nil
	})
}

// finishSuspended gives a suspended account its records and ends its
// sessions, where some are missing or left.
func (r *repair) finishSuspended(ctx context.Context, u domain.User) error {
	id, s := u.ID, *u.Suspension
	l, hasLookup := r.lookups[id]
	hasRow := slices.ContainsFunc(r.rows[id], func(row domain.Suspension) bool { return sameSuspension(row, s) })
	sessions, err := r.audit.HasSessions(ctx, id)
	if err != nil {
		return err
	}
	// A suspension with an end needs its expiry entry, or the sweeper
	// never lifts it.
	hasExpiry := s.Until.IsZero() || slices.ContainsFunc(r.expiries[id], s.Until.Equal)
	if hasLookup && sameSuspension(l, s) && hasRow && hasExpiry && !sessions {
		return nil
	}
	r.problem("user %s is suspended (since %s) but list row present=%v, reverse lookup current=%v, expiry entry present=%v, sessions left=%v",
		id, s.SuspendedAt.Format("2006-01-02T15:04:05.000Z"), hasRow, hasLookup && sameSuspension(l, s), hasExpiry, sessions)
	if !r.dryRun {
		r.fixed(r.m.finishSuspension(ctx, s, u.Version))
	}
	return nil
}

// eraseStale erases records of suspensions that their accounts no longer
// have.
func (r *repair) eraseStale(ctx context.Context) {
	for _, l := range r.lookups {
		r.eraseIfStale(ctx, "reverse lookup", l)
	}
	for _, rs := range r.rows {
		for _, row := range rs {
			r.eraseIfStale(ctx, "list row", row)
		}
	}
}

// eraseIfStale erases one record (kind says which) unless its account,
// read again at SERIAL, has that suspension.
func (r *repair) eraseIfStale(ctx context.Context, kind string, s domain.Suspension) {
	if u, ok := r.suspended[s.UserID]; ok && sameSuspension(*u.Suspension, s) {
		return
	}
	// Not met in this run's scan (suspended since, or before where a
	// resumed run started): the account says.
	u, err := r.m.users.GetSerial(ctx, s.UserID)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		r.errs = append(r.errs, err)
		return
	}
	if u.Status == domain.StatusSuspended && u.Suspension != nil && sameSuspension(*u.Suspension, s) {
		return
	}
	r.problem("%s of user %s (suspended at %s) is not backed by the account", kind, s.UserID, s.SuspendedAt.Format("2006-01-02T15:04:05.000Z"))
	if r.dryRun {
		return
	}
	switch {
	case u.Status == domain.StatusSuspended && u.Suspension != nil:
		// Suspended, but differently: the lookup row is rewritten by
		// finishSuspended; only the old list row and expiry entry go.
		// (Erasing the lookup at the version the fix wrote it would delete
		// it.)
		if kind == "list row" {
			r.fixed(r.m.suspensions.EraseListing(ctx, s, u.Version))
		}
	default:
		r.fixed(r.m.suspensions.Erase(ctx, s, u.Version))
	}
}

// indexBuckets makes the bucket index hold exactly the buckets with rows.
func (r *repair) indexBuckets(ctx context.Context) error {
	indexed, withRows, err := r.audit.Buckets(ctx)
	if err != nil {
		return err
	}
	for _, b := range withRows {
		if !slices.Contains(indexed, b) {
			r.problem("bucket %s holds suspensions but is not indexed", b)
			if !r.dryRun {
				r.fixed(r.audit.IndexBucket(ctx, b))
			}
		}
	}
	for _, b := range indexed {
		if !slices.Contains(withRows, b) {
			r.problem("bucket %s is indexed but empty", b)
			if !r.dryRun {
				r.fixed(r.audit.PruneBucket(ctx, b))
			}
		}
	}
	return nil
}
