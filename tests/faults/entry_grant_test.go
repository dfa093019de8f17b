package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestAnAttemptWhoseEntryIsAcknowledgedLateChangesNothing: a suspension
// whose attempt's entry is acknowledged past domain.EntryGrant (the write
// Slow: the clock moves past every grace before it answers) goes no
// further: 503, the account as it was, its entry ended (an index reader
// may have passed it: docs/design/jobs.md#index-start), and the admin's
// retry suspends. The same for a deletion, whose entry is written before
// its compare-and-set as well.
func TestAnAttemptWhoseEntryIsAcknowledgedLateChangesNothing(t *testing.T) {
	t.Parallel()
	slowAt := func(store *memstore.Store, call string) {
		store.FaultAt = func(_ int, name string) memstore.Fault {
			if name == call {
				store.FaultAt = nil
				return memstore.Slow
			}
			return memstore.None
		}
	}

	statusOf := func(m *modWorld) domain.Status {
		t.Helper()
		u, err := m.store.Users().Get(context.Background(), m.member.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u.Status
	}

	m := newModWorld(t)
	slowAt(m.store, "moderation_attempts.insert")
	if err := m.suspend(0); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("suspension with its entry acknowledged late: %v, want ErrUnavailable", err)
	}
	if got := statusOf(m); got != domain.StatusActive {
		t.Fatalf("the member reads %s after the refused suspension", got)
	}
	if left := m.store.ModerationAttemptSnapshot(); len(left) != 0 {
		t.Fatalf("entries left by the refused suspension: %+v", left)
	}
	if err := m.suspend(0); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if got := statusOf(m); got != domain.StatusSuspended {
		t.Fatalf("the member reads %s after the retry", got)
	}

	d := newModWorld(t).withDeletion()
	slowAt(d.store, "account_deletions.insert")
	if err := d.deleteMember(); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("deletion with its entry acknowledged late: %v, want ErrUnavailable", err)
	}
	if got := statusOf(d); got != domain.StatusActive {
		t.Fatalf("the member reads %s after the refused deletion", got)
	}
	if left := d.store.DeletionSnapshot(); len(left) != 0 {
		t.Fatalf("entries left by the refused deletion: %+v", left)
	}
	if err := d.deleteMember(); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if got := statusOf(d); got != domain.StatusDeleted {
		t.Fatalf("the member reads %s after the retry", got)
	}
}
