package faults

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
	"shelf/tests/memstore"
)

// heldDeletions is the index of deletions as repository.Deletions keeps
// an entry open past holdAfter (docs/design/jobs.md#index-start): a copy
// of it in the held partition, read by every pass, while Get reads the
// entry's own row only. End deletes the own row, then the held copy;
// while failHeld is set that second delete fails, leaving the copy for
// the passes to read.
type heldDeletions struct {
	*memstore.Deletions
	mu       sync.Mutex
	now      func() time.Time
	held     map[string]accounts.DeletionEntry
	failHeld bool
}

func heldKey(d accounts.DeletionEntry) string { return d.UserID + "|" + d.Attempt }

// hold copies every entry open now into the held partition, as a pass
// five minutes on would.
func (h *heldDeletions) hold(t *testing.T) {
	t.Helper()
	if err := h.Deletions.InProgress(context.Background(), func(d accounts.DeletionEntry, _ time.Time) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.held[heldKey(d)] = d
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func (h *heldDeletions) End(ctx context.Context, d accounts.DeletionEntry) error {
	if err := h.Deletions.End(ctx, d); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failHeld {
		return errors.New("the delete of the held copy failed (test)")
	}
	delete(h.held, heldKey(d))
	return nil
}

// InProgress reads the held copies first, then the entries not held.
func (h *heldDeletions) InProgress(ctx context.Context, fn func(accounts.DeletionEntry, time.Time) error) error {
	var own []accounts.DeletionEntry
	if err := h.Deletions.InProgress(ctx, func(d accounts.DeletionEntry, _ time.Time) error {
		own = append(own, d)
		return nil
	}); err != nil {
		return err
	}
	h.mu.Lock()
	var read []accounts.DeletionEntry
	for _, d := range h.held {
		read = append(read, d)
	}
	for _, d := range own {
		if _, isHeld := h.held[heldKey(d)]; !isHeld {
			read = append(read, d)
		}
	}
	h.mu.Unlock()
	now := h.now()
	for _, d := range read {
		if err := fn(d, now); err != nil {
			return err
		}
	}
	return nil
}

// left lists the entries a pass would read, the held copies included.
func (h *heldDeletions) left(t *testing.T) []accounts.DeletionEntry {
	t.Helper()
	var out []accounts.DeletionEntry
	if err := h.InProgress(context.Background(), func(d accounts.DeletionEntry, _ time.Time) error {
		out = append(out, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestADeletionWhoseEndFailedAtItsHeldCopyIsEndedByTheNextPass: ann
// deletes her account; its job runs past holdAfter, so a pass copies its
// entry into the held partition. The job finishes: the account deleted,
// the job finished, and the entry's end deletes its own row but fails at
// the held copy. The design says the entry is read again and ended
// again (docs/design/jobs.md, "Held entries"): the next pass reads the
// held copy, finds the account deleted and the entry the row's, but the
// entry's own row is gone, so a finish that ends only an entry it can
// read back leaves the held copy for good, every pass of every process
// running the whole deletion again and the index reporting an attempt
// stuck open.
func TestADeletionWhoseEndFailedAtItsHeldCopyIsEndedByTheNextPass(t *testing.T) {
	t.Parallel()
	w := newWorld()
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	ann := w.created[0]
	grp, lib := wireDeletion(w)
	idx := &heldDeletions{Deletions: w.store.Deletions(), now: w.store.Now, held: map[string]accounts.DeletionEntry{}}
	life := lifecycle.New(lifecycle.Config{Now: w.store.Now}, w.svc, worldModeration(w), grp, lib, lifecycle.Stores{
		Jobs: w.store.Jobs(), Queue: w.store.JobQueue(), Deletions: idx, Closings: w.store.Closings(),
	})
	ctx := context.Background()
	if _, err := life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password)); err != nil {
		t.Fatal(err)
	}
	idx.hold(t)
	idx.failHeld = true
	if _, err := life.WorkJobs(ctx); err == nil {
		t.Fatal("the end of the entry failed at its held copy, yet the pass answered nil")
	}
	idx.failHeld = false
	if u, err := w.store.Users().GetSerial(ctx, ann.ID); err != nil || u.Status != domain.StatusDeleted {
		t.Fatalf("after the first pass the account is %+v (%v), want deleted", u, err)
	}
	for range 2 {
		_, _ = life.WorkJobs(ctx)
	}
	if left := idx.left(t); len(left) != 0 {
		t.Errorf("the deletion is finished, yet the passes still read its entry: %+v", left)
	}
}
