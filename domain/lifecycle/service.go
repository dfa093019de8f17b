// Package lifecycle is the workflows that span services: deleting an
// account (and repairing deletions a crash stopped), closing a group (and
// repairing closings), rebuilding a library, and the job worker that
// finishes them (WorkJobs). It sits on a floor above the services it
// calls (domain/accounts, domain/moderation, domain/groups,
// domain/library) and the jobs' rows (domain/jobs): each service exports
// the steps of its own records, and this package puts them in order,
// keeps the indexes of the operations in progress, and tells their
// refusals apart with errors.Is (groups.ErrLastManager,
// library.ErrLastManager). No service imports this package, so no
// service needs another after it was built (architecture_test.go checks
// the floor). docs/design/deletion.md, docs/design/closing.md and
// docs/design/jobs.md are the designs.
package lifecycle

import (
	"context"
	"fmt"
	"os"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/moderation"
)

// DeletionStore keeps the index of deletions in progress, one entry per
// attempt (UserID, At, Attempt).
type DeletionStore interface {
	// Begin records an attempt of a deletion; writing it again is harmless.
	Begin(ctx context.Context, d accounts.DeletionEntry) error
	// Get reads the entry of the attempt that began userID's deletion d
	// (ErrNotFound when there is none).
	Get(ctx context.Context, userID string, d domain.Deletion) (accounts.DeletionEntry, error)
	// End deletes this attempt's entry, never another's; a Begin of it
	// landing late never outlives it.
	End(ctx context.Context, d accounts.DeletionEntry) error
	// InProgress calls fn with every entry, from the index's start on, and
	// moves the start up to the oldest entry still open, never closer to
	// now than the index's horizon (docs/design/jobs.md#index-start); fn
	// gets the pass's clock too (domain.StaleIndex).
	InProgress(ctx context.Context, fn func(d accounts.DeletionEntry, now time.Time) error) error
}

// ClosingStore keeps the index of closings in progress, one entry per
// attempt (GroupID, At, Attempt).
type ClosingStore interface {
	groups.ClosingIndex
	// InProgress calls fn with every entry, from the index's start on, and
	// moves the start up as DeletionStore.InProgress does.
	InProgress(ctx context.Context, fn func(e groups.ClosingEntry, now time.Time) error) error
}

// Stores are the workflows' own records: every other record they reach
// through the service that keeps it.
type Stores struct {
	// Jobs are the jobs' rows (domain/jobs); Queue the jobs in progress
	// no operation's index finds (rebuilds; nil: none).
	Jobs      jobs.Store
	Queue     jobs.Queue
	Deletions DeletionStore
	Closings  ClosingStore
}

// Config holds the workflows' tunables.
type Config struct {
	// Now is the clock (a repair tells a stale entry by its age, a worker
	// a lease that ran out).
	Now func() time.Time
	// Worker names this process's worker in the jobs it holds (default:
	// the host, the process id and a random tag).
	Worker string
	// JobLease is how long a job's lease lasts without a report (default
	// DefaultJobLease): a worker that stopped holds its jobs that long.
	JobLease time.Duration
	// JobItemsAtOnce is how many items of a page a job changes at once
	// (0: one at a time, as the fault explorer wants its calls in order).
	JobItemsAtOnce int
	// ChangeGrace is how old the entry of a membership change must be
	// before the worker finishes it (0: staleChangeAge).
	ChangeGrace time.Duration
}

// DefaultJobLease: a worker reports every page of 100 items, a few
// seconds at most; a worker silent this long has stopped or hangs.
const DefaultJobLease = 30 * time.Second

// Hooks let tests stop a workflow after a step, as a crash would: the
// workflow returns the hook's error at once, without cleaning up.
type Hooks struct {
	// AfterDeletionStep is called after each step of a deletion: in the
	// request "entry" (the attempt recorded, its compare-and-set not
	// sent) and "begun" (the account deleting, the job's row not
	// written); in the job "suspension", "groups", "items", "library",
	// "deleted", "claims", "sessions".
	AfterDeletionStep func(step string) error
	// AfterClosingStep is called after each content step of a closing
	// ("items", "library"); the groups' own steps of it call
	// groups.Hooks.AfterStep.
	AfterClosingStep func(step string) error
}

// Service is deleting accounts and closing groups.
type Service struct {
	cfg        Config
	accounts   *accounts.Service
	moderation *moderation.Service
	groups     *groups.Service
	library    *library.Service
	st         Stores
	// wake tells the worker a job began (Wake).
	wake chan struct{}
	// Hooks are nil in production.
	Hooks Hooks
}

// New builds the workflows on the services whose steps they call.
func New(cfg Config, acc *accounts.Service, mod *moderation.Service, grp *groups.Service, lib *library.Service, st Stores) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Worker == "" {
		cfg.Worker = workerName()
	}
	if cfg.JobLease <= 0 {
		cfg.JobLease = DefaultJobLease
	}
	if st.Queue == nil {
		st.Queue = noQueue{}
	}
	return &Service{cfg: cfg, accounts: acc, moderation: mod, groups: grp, library: lib, st: st, wake: make(chan struct{}, 1)}
}

// workerName names this process's worker: the host, the process id and
// a random tag (a process started again is another worker).
func workerName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), domain.NewID("")[:8])
}

// page is how many entries (library items, group members) a workflow
// reads at a time.
const page = 100

// staleEntryAge is how old an entry of an operation that did not take
// effect (its account not deleting, its group not closing) must be before
// a repair removes it: younger, its compare-and-set may still be in
// flight.
const staleEntryAge = 10 * time.Minute

// staleChangeAge is how old the entry of a membership change must be
// before the worker finishes its change: past the deadline of every
// request (SHELF_REQUEST_TIMEOUT, 10 s by default), so it seldom fences a
// change still being made. Fencing one is safe, only slower: its
// compare-and-set loses and it decides again (its next round writes an
// entry of its own). A minute, not staleEntryAge: a change left pending
// counts an account being deleted, or keeps open a group whose creator is
// gone, until the worker comes (docs/design/groups.md#interrupted-changes).
const staleChangeAge = time.Minute

func (s *Service) deletionStep(step string) error {
	if s.Hooks.AfterDeletionStep == nil {
		return nil
	}
	return s.Hooks.AfterDeletionStep(step)
}

func (s *Service) closingStep(step string) error {
	if s.Hooks.AfterClosingStep == nil {
		return nil
	}
	return s.Hooks.AfterClosingStep(step)
}
