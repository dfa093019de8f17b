package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestExploreSignupsRacingADeletionsRelease: ann deletes her account
// (alice, alice@example.org) while a stranger signs up for both names;
// the deletion's job stops before its marks (the names held by a
// deleting account) or after it (the claims naming a deleted account,
// not yet given back), the signup meets every fault at every store call,
// the deletion's job runs again inside a slow call and after the answer,
// held writes land, the leases run out, and the stranger tries again.
// No name is two accounts' (U1), and none stays blocked (U4).
func TestExploreSignupsRacingADeletionsRelease(t *testing.T) {
	t.Parallel()
	op := operation{name: "signup-over-deletion", username: "alice", email: "alice@example.org"}
	for _, stopAt := range []string{"begun", "deleted"} {
		calls := 0
		{
			w := signupOverDeletion(t, stopAt)
			before := w.store.Calls()
			_ = w.signup("alice", "alice@example.org")
			calls = w.store.Calls() - before
		}
		t.Logf("%s: %d store calls", stopAt, calls)
		for k := 0; k < calls; k++ {
			for _, fault := range memstore.Faults {
				name := fmt.Sprintf("%s/%s/call%d/%s", op.name, stopAt, k, fault)
				w := signupOverDeletion(t, stopAt)
				ctx := context.Background()
				start := w.store.Calls()
				w.store.FaultAt = func(n int, _ string) memstore.Fault {
					if n-start == k {
						return fault
					}
					return memstore.None
				}
				w.store.Meanwhile = func() { _, _ = w.life.WorkJobs(ctx) }
				err := w.signup("alice", "alice@example.org")
				w.store.FaultAt, w.store.Meanwhile = nil, nil
				w.store.Recover()
				if err != nil && !expected(err) {
					t.Errorf("%s: the signup answered %v", name, err)
				}
				_, _ = w.life.WorkJobs(ctx)
				w.store.Land()
				w.store.Advance(lease + time.Second)
				_, _ = w.life.WorkJobs(ctx)
				if err != nil {
					_ = w.signup("alice", "alice@example.org")
				}
				check(t, name, w, op)
			}
		}
	}
}

// signupOverDeletion is a world where ann signed up as alice and asked
// for her deletion, whose job ran up to stopAt.
func signupOverDeletion(t *testing.T, stopAt string) *world {
	t.Helper()
	w := newWorld()
	if err := w.signup("alice", "alice@example.org"); err != nil {
		t.Fatal(err)
	}
	ann := w.created[0]
	w.created = nil // deleted: no longer an account whose signup stands
	wireDeletion(w)
	ctx := context.Background()
	if _, err := w.life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password)); err != nil {
		t.Fatal(err)
	}
	if stopAt != "begun" {
		stop := errors.New("stopped (test hook)")
		w.life.Hooks.AfterDeletionStep = func(step string) error {
			if step == stopAt {
				return stop
			}
			return nil
		}
		_, _ = w.life.WorkJobs(ctx)
		w.life.Hooks.AfterDeletionStep = nil
	}
	return w
}
