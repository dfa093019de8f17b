package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestEndingSessionsCostsARequestTheSameWhateverTheSessions (work that
// grows with the data stays out of requests): a user's sessions have no
// cap but the TTL and a login rate limit per address, so a thief with the
// password and a few addresses can open thousands in a day. The owner's
// answers to that, signing out everywhere else and changing the password,
// end them all in one compare-and-set (a new password epoch) and cost the
// request the same store calls with 2 other sessions as with 60; the rows
// are deleted after the answer, only those the epoch stopped, and the
// caller's session goes on.
func TestEndingSessionsCostsARequestTheSameWhateverTheSessions(t *testing.T) {
	t.Parallel()
	ops := []struct {
		name string
		run  func(w *world, owner domain.Principal) error
	}{
		{"sign out everywhere else", func(w *world, owner domain.Principal) error {
			return w.svc.RevokeSessions(context.Background(), owner, owner.UserID, true)
		}},
		{"password change", func(w *world, owner domain.Principal) error {
			pw := password
			return w.svc.ChangePassword(context.Background(), owner, owner.UserID, accounts.Proof{CurrentPassword: &pw}, "a brand new passphrase 42")
		}},
	}
	for _, op := range ops {
		calls := map[int]int{}
		for _, n := range []int{2, 60} {
			w, later, tokens := samWithSessions(t, n+1)
			ctx := context.Background()
			owner, err := w.svc.Authenticate(ctx, tokens[0])
			if err != nil {
				t.Fatal(err)
			}
			before := w.store.Calls()
			if err := op.run(w, owner); err != nil {
				t.Fatalf("%s with %d other sessions: %v", op.name, n, err)
			}
			calls[n] = w.store.Calls() - before
			t.Logf("%s with %d other sessions: %d store calls", op.name, n, calls[n])
			for i, token := range tokens[1:] {
				if _, err := w.svc.Authenticate(ctx, token); err == nil {
					t.Errorf("%s with %d other sessions: session %d still works before the sweep", op.name, n, i+1)
				}
			}
			for _, job := range *later {
				job()
			}
			if _, err := w.svc.Authenticate(ctx, tokens[0]); err != nil {
				t.Errorf("%s with %d other sessions: the caller's session after the sweep: %v", op.name, n, err)
			}
			for i, token := range tokens[1:] {
				if _, err := w.store.Sessions().Get(ctx, accounts.HashToken(token)); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s with %d other sessions: session %d's row outlives the sweep: %v", op.name, n, i+1, err)
				}
			}
		}
		if calls[60] != calls[2] {
			t.Errorf("%s: %d store calls in the request with 60 other sessions, %d with 2", op.name, calls[60], calls[2])
		}
	}
}

// samWithSessions is a world whose background work waits in later
// (until the test runs it) and sam logged in n times, with the tokens.
func samWithSessions(t *testing.T, n int) (w *world, later *[]func(), tokens []string) {
	t.Helper()
	w, later = newWorld(), new([]func())
	w.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) { *later = append(*later, job) }
	})
	if err := w.signup("sam", "sam@example.org"); err != nil {
		t.Fatal(err)
	}
	for range n {
		r, err := w.svc.Login(context.Background(), "sam", password, accounts.Client{})
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, r.Token)
	}
	return w, later, tokens
}

// TestASweepSparesTheSessionsOpenedAfterTheEpoch: the sweep after a
// revocation deletes only the sessions the new epoch stopped; a login
// made between the answer and the sweep keeps working, and so does the
// session the revocation kept.
func TestASweepSparesTheSessionsOpenedAfterTheEpoch(t *testing.T) {
	t.Parallel()
	w, later, tokens := samWithSessions(t, 3)
	ctx := context.Background()
	owner, err := w.svc.Authenticate(ctx, tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := w.svc.RevokeSessions(ctx, owner, owner.UserID, true); err != nil {
		t.Fatal(err)
	}
	fresh, err := w.svc.Login(ctx, "sam", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range *later {
		job()
	}
	for _, token := range []string{tokens[0], fresh.Token} {
		if _, err := w.svc.Authenticate(ctx, token); err != nil {
			t.Errorf("a session the revocation did not end, after the sweep: %v", err)
		}
	}
	for _, token := range tokens[1:] {
		if _, err := w.svc.Authenticate(ctx, token); err == nil {
			t.Error("a session the revocation ended works")
		}
	}
	owner, err = w.svc.Authenticate(ctx, tokens[0]) // a new request
	if err != nil {
		t.Fatal(err)
	}
	page, err := w.svc.ListSessions(ctx, owner, owner.UserID, "", 10)
	if err != nil || len(page.Items) != 2 {
		t.Errorf("the list after the sweep: %d sessions, %v; want the kept one and the new one", len(page.Items), err)
	}
}

// TestASuspensionEndsSessionsInItsWrite: a suspension costs its request
// the same store calls whatever the member's sessions (2 or 60), stops
// every one of them in its compare-and-set (a new password epoch), and a
// lift brings none back: the member logs in again.
func TestASuspensionEndsSessionsInItsWrite(t *testing.T) {
	t.Parallel()
	calls := map[int]int{}
	for _, n := range []int{2, 60} {
		m := newModWorld(t)
		ctx := context.Background()
		var tokens []string
		for range n {
			r, err := m.svc.Login(ctx, "member", password, accounts.Client{})
			if err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, r.Token)
		}
		before := m.store.Calls()
		if err := m.suspend(0); err != nil {
			t.Fatalf("the suspension with %d sessions: %v", n, err)
		}
		calls[n] = m.store.Calls() - before
		if err := m.unsuspend(); err != nil {
			t.Fatal(err)
		}
		for i, token := range tokens {
			if _, err := m.svc.Authenticate(ctx, token); err == nil {
				t.Errorf("with %d sessions: session %d works again after the lift", n, i)
			}
		}
		if _, err := m.svc.Login(ctx, "member", password, accounts.Client{}); err != nil {
			t.Errorf("with %d sessions: the member's login after the lift: %v", n, err)
		}
		page, err := m.svc.ListSessions(ctx, m.admin, m.member.ID, "", 100)
		if err != nil || len(page.Items) != 1 {
			t.Errorf("with %d sessions: the member's list after the lift: %d sessions, %v; want the new login's", n, len(page.Items), err)
		}
	}
	if calls[60] != calls[2] {
		t.Errorf("a suspension: %d store calls with 60 sessions, %d with 2", calls[60], calls[2])
	}
}
