package moderation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"shelf/domain"
)

// Audit reads what the repair cross-checks: a command for operators, never
// a request path. Every table is read in slices, resumable, so no read
// grows with a table and a run stopped part-way can be picked up; each
// account's derived records are read by their keys.
type Audit interface {
	// EachModeratedUser calls fn for every account that is suspended or
	// has a last lift, in slices of the users table, starting after
	// position from ("": the beginning). After each slice it calls
	// progress (when set) with the position reached, to resume from, and
	// the share of the table read so far (0 to 1).
	EachModeratedUser(ctx context.Context, from string, fn func(domain.User) error, progress func(at string, done float64)) error
	// EachLookup is EachModeratedUser for the reverse lookup rows.
	EachLookup(ctx context.Context, from string, fn func(domain.Suspension) error, progress func(at string, done float64)) error
	// EachStatusRow is EachModeratedUser for the rows of the suspended list.
	EachStatusRow(ctx context.Context, from string, fn func(domain.Suspension) error, progress func(at string, done float64)) error
	// ListedAs reads the suspension's row of the suspended list by its
	// key (bucket, time and user): whether it is there, and the username
	// it shows.
	ListedAs(ctx context.Context, s domain.Suspension) (username string, found bool, err error)
	// HasExpiry reports whether the expiry entry of the suspension (which
	// has an end) is there (by its key: end and user).
	HasExpiry(ctx context.Context, s domain.Suspension) (bool, error)
	// HasEvent reports whether the history entry is there (by its key:
	// user, time and kind).
	HasEvent(ctx context.Context, e Event) (bool, error)
	// Buckets returns the indexed buckets and the buckets holding rows.
	Buckets(ctx context.Context) (indexed, withRows []string, err error)
	// IndexBucket adds a bucket to the index; PruneBucket marks it
	// emptied if it is empty.
	IndexBucket(ctx context.Context, bucket string) error
	PruneBucket(ctx context.Context, bucket string) error
	// TidyIndex deletes the index entries marked emptied more than age
	// ago (by the store's clock), marks the entries from before marks
	// existed, and reports how many entries it changed.
	TidyIndex(ctx context.Context, age time.Duration) (int, error)
}

// The repair's phases, in the order it runs them: each scans one table.
const (
	// PhaseAccounts finishes each suspended account's records and each
	// account's history (its suspension's entry, its last lift's).
	PhaseAccounts = "accounts"
	// PhaseLookups erases the reverse lookups no account backs.
	PhaseLookups = "lookups"
	// PhaseList erases the rows of the suspended list no account backs.
	PhaseList = "list"
)

var phases = []string{PhaseAccounts, PhaseLookups, PhaseList}

// Position is where a repair stands: a phase and the position its scan
// reached ("" its start). Written "lookups:-4611686018427387904".
type Position struct {
	Phase string
	At    string
}

func (p Position) String() string { return p.Phase + ":" + p.At }

// ParsePosition reads a position as String writes it. "" is the
// beginning; a position without a phase (a bare token) is one of the
// accounts phase.
func ParsePosition(s string) (Position, error) {
	phase, at, found := strings.Cut(s, ":")
	if !found {
		return Position{Phase: PhaseAccounts, At: s}, nil
	}
	if !slices.Contains(phases, phase) {
		return Position{}, fmt.Errorf("resume position %q: no phase %q (one of %s)", s, phase, strings.Join(phases, ", "))
	}
	return Position{Phase: phase, At: at}, nil
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
	// From resumes after this position (one Progress reported in an
	// earlier run, as ParsePosition reads it), skipping the phases before
	// its own; "" starts at the beginning.
	From string
	// Progress, when set, is told after each slice of each phase's scan
	// where the repair stands and how much of that phase's table is read.
	Progress func(at Position, done float64)
}

// RepairSuspensions cross-checks the account rows (the truth), the reverse
// lookup, the suspended list and its bucket index, and the history, and
// makes the derived records agree with the accounts (S2, S5): a suspended
// account gets its records; an account's current
// suspension and last lift get their history entries; a record of a
// suspension its account no longer has is erased; buckets are indexed
// exactly when they hold rows.
// With dryRun it only reports.
func (m *Service) RepairSuspensions(ctx context.Context, audit Audit, dryRun bool) (RepairReport, error) {
	return m.Repair(ctx, audit, RepairOptions{DryRun: dryRun})
}

// Repair is RepairSuspensions with options. It reads no table whole and
// holds nothing of one: phase after phase it scans a table slice by slice
// and fixes what it meets at once, so it can run while traffic flows and
// resume where a stopped run reached. Accounts: each suspended or lifted
// account's records and history entries are read by their keys and
// written where missing. Lookups, then
// list rows: each record whose account (read by id) does not have its
// suspension is checked again against the account read at SERIAL, and
// erased only if that says so. Then the bucket index.
func (m *Service) Repair(ctx context.Context, audit Audit, o RepairOptions) (RepairReport, error) {
	from, err := ParsePosition(o.From)
	if err != nil {
		return RepairReport{}, err
	}
	r := &repair{m: m, audit: audit, dryRun: o.DryRun}
	scans := map[string]func(from string, progress func(string, float64)) error{
		PhaseAccounts: func(from string, progress func(string, float64)) error {
			return audit.EachModeratedUser(ctx, from, func(u domain.User) error { return r.finishAccount(ctx, u) }, progress)
		},
		PhaseLookups: func(from string, progress func(string, float64)) error {
			return audit.EachLookup(ctx, from, func(s domain.Suspension) error { r.eraseIfStale(ctx, "reverse lookup", s); return nil }, progress)
		},
		PhaseList: func(from string, progress func(string, float64)) error {
			return audit.EachStatusRow(ctx, from, func(s domain.Suspension) error { r.eraseIfStale(ctx, "list row", s); return nil }, progress)
		},
	}
	for _, phase := range phases[slices.Index(phases, from.Phase):] {
		at := ""
		if phase == from.Phase {
			at = from.At
		}
		progress := func(at string, done float64) {
			if o.Progress != nil {
				o.Progress(Position{Phase: phase, At: at}, done)
			}
		}
		if err := scans[phase](at, progress); err != nil {
			return r.report, errors.Join(append(r.errs, err)...)
		}
	}
	if err := r.indexBuckets(ctx); err != nil {
		return r.report, errors.Join(append(r.errs, err)...)
	}
	return r.report, errors.Join(r.errs...)
}

// IndexBuckets makes the suspended list's bucket index hold exactly the
// buckets that hold rows, as the repair's last phase does, and reports
// how many entries it fixed; then it tidies the index (TidyIndex: the
// entries marked emptied more than Config.EmptiedKept ago deleted, those
// from before marks existed marked). Every process's sweeper runs it
// (bucketsEvery in internal/app), so the list never waits for an
// operator: an entry an interrupted prune or a failed write left wrong,
// one a prune in another data centre marked before the bucket's row
// reached it, or one a process of the release before schema 034 deleted
// by its clock, is set right at the next pass (docs/design/suspension.md,
// "Buckets").
func (m *Service) IndexBuckets(ctx context.Context, audit Audit) (int, error) {
	r := &repair{m: m, audit: audit}
	if err := r.indexBuckets(ctx); err != nil {
		return r.report.Fixed, errors.Join(append(r.errs, err)...)
	}
	if _, err := audit.TidyIndex(ctx, m.cfg.EmptiedKept); err != nil {
		r.errs = append(r.errs, err)
	}
	return r.report.Fixed, errors.Join(r.errs...)
}

// repair is one run of RepairSuspensions: what it found and fixed.
type repair struct {
	m      *Service
	audit  Audit
	dryRun bool
	report RepairReport
	errs   []error // of the fixes; the run goes on past them
	// nodeNow is the node's clock, read once a run (liftEnded).
	nodeNow time.Time
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

// backs reports whether the account has the suspension a record is of.
func backs(u domain.Standing, s domain.Suspension) bool {
	return u.Status == domain.StatusSuspended && u.Suspension != nil && sameSuspension(*u.Suspension, s)
}

// finishAccount finishes what the account's current suspension and last
// lift left undone.
func (r *repair) finishAccount(ctx context.Context, u domain.User) error {
	if u.Status == domain.StatusSuspended && u.Suspension != nil {
		if err := r.finishSuspended(ctx, u); err != nil {
			return err
		}
	}
	if u.LastLift != nil {
		return r.finishLift(ctx, u)
	}
	return nil
}

// finishLift writes the history entries of the account's last lift where
// one is missing (a lift that stopped after its compare-and-set).
func (r *repair) finishLift(ctx context.Context, u domain.User) error {
	l := *u.LastLift
	var missing []string
	for _, e := range LiftEvents(l) {
		has, err := r.audit.HasEvent(ctx, e)
		if err != nil {
			return err
		}
		if !has {
			missing = append(missing, string(e.Kind)+" at "+e.At.Format(timeFormat))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	r.problem("user %s: the history of its last lift (%s at %s) lacks %s", u.ID, l.Kind, l.At.Format(timeFormat), strings.Join(missing, " and "))
	if !r.dryRun {
		r.fixed(r.m.suspensions.RecordLift(ctx, l, u.Version))
	}
	return nil
}

// timeFormat is how the repair's report writes times.
const timeFormat = "2006-01-02T15:04:05.000Z"

// finishSuspended gives a suspended account its records (its history
// entry among them) where some are missing or its list row names the
// user otherwise than the account (its sessions ended with its
// compare-and-set: a new password epoch), and lifts it if it has ended.
// Each record is read by its key; a failed read stops the run (it
// resumes from the last position).
func (r *repair) finishSuspended(ctx context.Context, u domain.User) error {
	id, s := u.ID, *u.Suspension
	l, err := r.m.suspensions.Lookup(ctx, id)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	hasLookup := err == nil && sameSuspension(l, s)
	listedAs, hasRow, err := r.audit.ListedAs(ctx, s)
	if err != nil {
		return err
	}
	// A list row naming the user otherwise than the account does is of a
	// suspension from before schema 040 renamed since (the row read it by
	// the username): written at an older version than the rename's, so
	// the records written again at the account's shadow it.
	misnamed := hasRow && listedAs != s.Username
	// A suspension with an end needs its expiry entry, or the sweeper
	// never lifts it.
	hasExpiry := s.Until.IsZero()
	if !hasExpiry {
		if hasExpiry, err = r.audit.HasExpiry(ctx, s); err != nil {
			return err
		}
	}
	hasEvent, err := r.audit.HasEvent(ctx, SuspendedEvent(s))
	if err != nil {
		return err
	}
	if hasLookup && hasRow && !misnamed && hasExpiry && hasEvent {
		return r.liftEnded(ctx, s)
	}
	named := ""
	if misnamed {
		named = fmt.Sprintf(" naming %q, not %q", listedAs, s.Username)
	}
	r.problem("user %s is suspended (since %s) but list row present=%v%s, reverse lookup current=%v, expiry entry present=%v, history entry present=%v",
		id, s.SuspendedAt.Format(timeFormat), hasRow, named, hasLookup, hasExpiry, hasEvent)
	if !r.dryRun {
		err := r.m.finishSuspension(ctx, s, u.Version)
		if err == nil {
			err = r.m.liftIfEnded(ctx, s)
		}
		if errors.Is(err, domain.ErrNotFound) {
			// Deleted meanwhile: finishSuspension erased what it wrote.
			err = nil
		}
		r.fixed(err)
	}
	return nil
}

// liftEnded lifts s, a suspension whose records are all in place, if it
// has ended by the node's clock, as the sweeper would: its expiry entry
// may lie behind the sweepers' start, where no pass reads it (written
// after the end by a release before liftIfEnded, or by a run of this
// repair whose lift failed, which the run again would otherwise find
// complete). The node's clock is read once a run: it only moves on, so a
// suspension ended by it has ended now (TestTheRepairLiftsAnEndedSuspensionNoSweeperReads).
func (r *repair) liftEnded(ctx context.Context, s domain.Suspension) error {
	if s.Until.IsZero() {
		return nil
	}
	if r.nodeNow.IsZero() {
		now, err := r.m.suspensions.NodeNow(ctx)
		if err != nil {
			return err
		}
		r.nodeNow = now.UTC()
	}
	if s.ActiveAt(r.nodeNow) {
		return nil
	}
	r.problem("user %s is suspended until %s, which has passed, and no sweeper lifted it", s.UserID, s.Until.Format(timeFormat))
	if !r.dryRun {
		err := r.m.liftIfEnded(ctx, s)
		if errors.Is(err, domain.ErrNotFound) {
			err = nil
		}
		r.fixed(err)
	}
	return nil
}

// eraseIfStale erases one record (kind says which) unless its account has
// that suspension. The account is read first as any read does; only when
// that does not back the record is it read again at SERIAL, the latest
// committed state, which alone decides an erasure (a suspension made
// since the record was read, or one whose compare-and-set is still
// finishing, is never undone on a guess).
func (r *repair) eraseIfStale(ctx context.Context, kind string, s domain.Suspension) {
	if u, err := r.m.users.Standing(ctx, s.UserID); err == nil && backs(u, s) {
		return
	}
	u, err := r.m.users.GetSerial(ctx, s.UserID)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		r.errs = append(r.errs, err)
		return
	}
	if backs(u.Standing(), s) {
		return
	}
	r.problem("%s of user %s (suspended at %s) is not backed by the account (%s)", kind, s.UserID, s.SuspendedAt.Format(timeFormat), u.Status)
	if r.dryRun {
		return
	}
	if u.Status == domain.StatusSuspended && u.Suspension != nil && kind != "list row" {
		// Suspended, but differently: the lookup row is rewritten by
		// finishSuspended at the version read (erasing it at that version
		// would delete it); the old list row goes in the list phase.
		return
	}
	if l := u.LastLift; l != nil {
		// The last lift's history entries first: a lift by nobody that
		// stopped after its compare-and-set is led back to by the
		// expiry entry alone, which forget erases, and this run's
		// accounts phase may have read the account before it
		// (TestARepairErasingAStoppedLiftsRecordsWritesItsHistory).
		if err := r.m.suspensions.RecordLift(ctx, *l, u.Version); err != nil {
			r.fixed(err)
			return
		}
	}
	r.fixed(r.m.forget(ctx, u, s))
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
