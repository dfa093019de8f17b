// Package jobs keeps the record of work a request began and a worker
// finishes: an account's deletion, a group's closing, a library's rebuild.
// The request does the bounded, irreversible part (the compare-and-set
// that makes the account deleting, the group closing; for a rebuild, its
// entry in the queue), writes the job's row and answers 202 with it; a
// worker on any process finishes the rest (domain/lifecycle).
//
// A job's row is a compare-and-set row: every change of it moves its
// version on, so the row is its own fence. A worker takes the job's lease
// by a compare-and-set on the version it read (only when nobody holds the
// lease or it ran out), and writes every report of progress, and the end,
// by a compare-and-set on the version its last write gave the row: once
// another worker took the lease over, the version moved past it, so the
// earlier holder's writes to the row fail and it stops
// (docs/design/jobs.md). The work itself (the items deleted, the groups
// left) is done by steps that are each idempotent and versioned by the
// records they change, so a step an earlier holder still had in flight
// is the same write the next holder makes, or is shadowed by it.
package jobs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"shelf/domain"
)

// Kind is what a job does.
type Kind string

// The kinds of job (openapi.yaml's JobKind).
const (
	// KindDeletion finishes an account's deletion; its subject is the user.
	KindDeletion Kind = "account_deletion"
	// KindClosing finishes a group's closing; its subject is the group.
	KindClosing Kind = "group_closing"
)

// IDPrefix starts every job id.
const IDPrefix = "j_"

// IDOf is the id of the job that finishes the operation the attempt began
// (its tag, which the account's or group's row records): a repeat of the
// request finds the same job. The tag is 128 random bits, so the id is a
// capability, as a reset token is: who holds it may read the job's
// progress, which names only its subject's id and counts. An operation
// begun before attempts had tags (its tag empty) gets an id made from its
// subject.
func IDOf(attempt, subject string) string {
	if attempt != "" {
		return IDPrefix + attempt
	}
	sum := sha256.Sum256([]byte("job:" + subject))
	return IDPrefix + domain.EncodeID(sum[:16])
}

// Valid reports whether id looks like a job id (routes answer 404 for
// anything else without a read).
func Valid(id string) bool { return domain.ValidID(id, IDPrefix) }

// State is where a job stands, as its row and the clock say.
type State string

// The states (openapi.yaml's JobState).
const (
	// Queued: no worker holds it (none took it yet, or the last one's
	// lease ran out: it stopped, and the next takes it on).
	Queued State = "queued"
	// Running: a worker holds its lease.
	Running State = "running"
	// Finished: every step is done.
	Finished State = "finished"
)

// Job is a job's row.
type Job struct {
	ID      string
	Kind    Kind
	Subject string
	// By is who asked (a user id).
	By string
	// CreatedAt is when the operation began (its attempt's start).
	CreatedAt time.Time
	// Version moves on with every change of the row: each is a
	// compare-and-set on the version before it.
	Version int
	// Owner is the worker holding the lease ("" nobody), until LeaseUntil.
	Owner      string
	LeaseUntil time.Time
	// Phase is the step under way (or the last one reached).
	Phase string
	// Done counts the units the job has handled (an item deleted or left,
	// a share of the group's taken off, an item's rows rebuilt); Total how
	// many there were when it counted them (0: not counted yet).
	Done, Total int
	// Runs counts the leases taken: more than one means a worker stopped
	// or failed and another took it on.
	Runs int
	// LastError is the last failure a worker reported ("" none).
	LastError string
	// FinishedAt is when the last step was done (zero: not yet).
	FinishedAt time.Time
	UpdatedAt  time.Time
}

// State is the job's state at now.
func (j Job) State(now time.Time) State {
	switch {
	case !j.FinishedAt.IsZero():
		return Finished
	case j.Owner != "" && j.LeaseUntil.After(now):
		return Running
	}
	return Queued
}

// Retrying reports whether a run of the job failed and it is not
// finished: the next run of any worker goes on from where it stopped.
// Why it failed (LastError) is for operators, in the logs and the row,
// not in the API: it may name the store's nodes.
func (j Job) Retrying() bool { return j.LastError != "" && j.FinishedAt.IsZero() }

// Left is how many units are left, as far as the job knows (0 when it
// has not counted them yet, or handled them all).
func (j Job) Left() int { return max(j.Total-j.Done, 0) }

// Store keeps the jobs' rows.
type Store interface {
	// Create writes j's row (at version 1) unless it has one: created
	// false means a row was there already (a repeat of the request, or a
	// worker that made it first).
	Create(ctx context.Context, j Job) (created bool, err error)
	// Get reads a job (domain.ErrNotFound when there is none).
	Get(ctx context.Context, id string) (Job, error)
	// GetSerial reads a job at SERIAL (it settles any compare-and-set in
	// flight).
	GetSerial(ctx context.Context, id string) (Job, error)
	// Update writes j at j.Version by compare-and-set on j.Version-1.
	Update(ctx context.Context, j Job) (applied bool, err error)
}

// ErrHeld: another worker holds the job's lease.
var ErrHeld = errors.New("jobs: the lease is held by another worker")

// ErrLost: the worker's lease was taken over (or its last write's outcome
// is unknown): it must stop writing the job and leave it to the holder.
var ErrLost = errors.New("jobs: the lease was lost")

// Lease is a worker's hold on one job.
type Lease struct {
	store Store
	now   func() time.Time
	ttl   time.Duration
	job   Job
}

// Job is the row as this lease last wrote it.
func (l *Lease) Job() Job { return l.job }

// Acquire takes the lease of the job j names (its id, kind, subject, by
// and start) for owner, for ttl: when nobody holds it, its lease ran out,
// or owner holds it already (a pass of the same worker before). The row
// is made if it has none. ErrHeld when another worker holds it.
func Acquire(ctx context.Context, st Store, now func() time.Time, ttl time.Duration, j Job, owner string) (*Lease, error) {
	cur, err := st.GetSerial(ctx, j.ID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		cur = j
		cur.Version = 0
	case err != nil:
		return nil, err
	case cur.Owner != "" && cur.Owner != owner && cur.LeaseUntil.After(now()):
		return nil, fmt.Errorf("%w: %s until %s", ErrHeld, cur.Owner, cur.LeaseUntil.UTC().Format(time.RFC3339))
	}
	next := cur
	next.Version++
	next.Owner, next.LeaseUntil, next.Runs = owner, now().Add(ttl), cur.Runs+1
	next.UpdatedAt = now()
	var applied bool
	if cur.Version == 0 {
		applied, err = st.Create(ctx, next)
	} else {
		applied, err = st.Update(ctx, next)
	}
	if err != nil {
		return nil, err
	}
	if !applied {
		return nil, fmt.Errorf("%w: another worker took it first", ErrHeld)
	}
	return &Lease{store: st, now: now, ttl: ttl, job: next}, nil
}

// Report records progress and renews the lease: a compare-and-set on the
// version this lease last wrote. ErrLost when another worker took the job
// over since (or the outcome of the write is unknown: this worker can no
// longer tell which version is its own, and stops).
func (l *Lease) Report(ctx context.Context, phase string, done, total int) error {
	next := l.job
	next.Phase, next.Done, next.Total = phase, done, total
	next.LeaseUntil = l.now().Add(l.ttl)
	return l.write(ctx, next)
}

// Finish records the job as finished and lets its lease go.
func (l *Lease) Finish(ctx context.Context) error {
	next := l.job
	next.Phase, next.FinishedAt, next.LastError = "finished", l.now(), ""
	next.Owner, next.LeaseUntil = "", time.Time{}
	return l.write(ctx, next)
}

// Release lets the lease go after a failure, recording it, so the next
// pass of any worker takes the job on at once.
func (l *Lease) Release(ctx context.Context, cause error) error {
	next := l.job
	next.Owner, next.LeaseUntil = "", time.Time{}
	if cause != nil {
		next.LastError = cause.Error()
		if len(next.LastError) > maxErrorText {
			next.LastError = next.LastError[:maxErrorText]
		}
	}
	return l.write(ctx, next)
}

// sameRow reports whether a row read back is the one written (times as
// the store keeps them: milliseconds).
func sameRow(a, b Job) bool {
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	return a.Version == b.Version && a.Owner == b.Owner && a.Runs == b.Runs && a.Phase == b.Phase &&
		a.Done == b.Done && a.Total == b.Total && ms(a.FinishedAt) == ms(b.FinishedAt) && ms(a.LeaseUntil) == ms(b.LeaseUntil)
}

// maxErrorText bounds the failure a job's row keeps.
const maxErrorText = 500

// write changes the row by compare-and-set on the version this lease last
// wrote. An outcome left unknown is settled by reading the row at SERIAL:
// the row as written means applied (no other worker writes this version
// with this owner and these runs); anything else is a lease lost.
func (l *Lease) write(ctx context.Context, next Job) error {
	next.Version = l.job.Version + 1
	next.UpdatedAt = l.now()
	applied, err := l.store.Update(ctx, next)
	if errors.Is(err, domain.ErrOutcomeUnknown) {
		got, rerr := l.store.GetSerial(context.WithoutCancel(ctx), next.ID)
		if rerr != nil || !sameRow(got, next) {
			return fmt.Errorf("%w: %w", ErrLost, err)
		}
		applied, err = true, nil
	}
	switch {
	case err != nil:
		return err
	case !applied:
		return ErrLost
	}
	l.job = next
	return nil
}

// KindRebuild rebuilds a principal's library from its membership index
// (an admin's repair); its subject is the user or group.
const KindRebuild Kind = "library_rebuild"

// Entry is a job in the queue of jobs in progress: the jobs no other
// index finds (a rebuild; a deletion or a closing is found through the
// index of its operation's attempts). Written before the job's row, ended
// once the job is finished.
type Entry struct {
	JobID   string
	Kind    Kind
	Subject string
	By      string
	At      time.Time
}

// Job is the job e begins, as the worker takes it on.
func (e Entry) Job() Job {
	return Job{ID: e.JobID, Kind: e.Kind, Subject: e.Subject, By: e.By, CreatedAt: e.At, Phase: "queued", UpdatedAt: e.At}
}

// Queue keeps the entries of jobs in progress.
type Queue interface {
	// Begin records a job at its start; writing it again is harmless.
	Begin(ctx context.Context, e Entry) error
	// End deletes the job's entry; a Begin of it landing late never
	// outlives it.
	End(ctx context.Context, e Entry) error
	// InProgress calls fn with every entry, from the queue's start on, and
	// the pass's clock (domain.StaleIndex).
	InProgress(ctx context.Context, fn func(e Entry, now time.Time) error) error
}
