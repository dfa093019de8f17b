package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// A request of the member's, let through before a suspension and slower
// than it (its principal authenticated, its compare-and-set not yet
// made), lands after the suspension answered. The suspension's new
// password epoch ends every session for good, after its lift too (S3,
// decision 0078): the request must not name its session for the epoch
// after the suspension's, which never admitted it.

// TestAnOwnersRequestInFlightKeepsNoSessionPastASuspension: the member
// signs out everywhere else, or asks for a new address (which ends the
// other sessions too), the request slower than an admin's suspension;
// after the lift, the session from before the suspension works no more
// than the others.
func TestAnOwnersRequestInFlightKeepsNoSessionPastASuspension(t *testing.T) {
	t.Parallel()
	requests := map[string]func(m *modWorld, p domain.Principal) error{
		"sign out elsewhere": func(m *modWorld, p domain.Principal) error {
			return m.svc.RevokeSessions(context.Background(), p, m.member.ID, true)
		},
		"password change": func(m *modWorld, p domain.Principal) error {
			current := password
			return m.svc.ChangePassword(context.Background(), p, m.member.ID, accounts.Proof{CurrentPassword: &current}, "a brand new passphrase 42")
		},
		"new address": func(m *modWorld, p domain.Principal) error {
			email, current := "member@example.net", password
			_, err := m.svc.UpdateUser(context.Background(), p, m.member.ID,
				accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: &current}})
			return err
		},
	}
	for name, request := range requests {
		m := newModWorld(t)
		m.rewire(func(st *memstore.Store, c *accounts.Config) {
			c.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: &recorder{}, PublicURL: "https://shelf.example.org",
				VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour}
		})
		ctx := context.Background()
		r, err := m.svc.Login(ctx, "member", password, accounts.Client{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.svc.Authenticate(ctx, r.Token)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.suspend(0); err != nil {
			t.Fatal(err)
		}
		_ = request(m, p) // its answer does not matter: only what it left
		if err := m.unsuspend(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.svc.Authenticate(ctx, r.Token); err == nil {
			t.Errorf("%s: a session from before the suspension works again after its lift (the request in flight named it for the epoch after the suspension's)", name)
		}
	}
}

// TestAPasswordChangeInFlightNamesNoSessionASignOutStopped: a thief's
// session asks for a new password; before the change reads the account,
// the owner signs out everywhere else from hers. The change must not name
// the thief's stopped session for the new epoch (before, it did: the
// thief's session worked again with a password the thief chose, and the
// owner's stopped).
func TestAPasswordChangeInFlightNamesNoSessionASignOutStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	var later []func()
	m.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) { later = append(later, job) }
	})
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	owner, err := m.svc.Authenticate(ctx, m.sessions[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := m.svc.RevokeSessions(ctx, owner, m.ann.ID, true); err != nil {
		t.Fatal(err)
	}
	current := password
	err = m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Proof{CurrentPassword: &current}, otherPassword)
	if !errors.Is(err, domain.ErrNoSession) {
		t.Errorf("the stopped session's change answered %v, want ErrNoSession", err)
	}
	for _, job := range later {
		job()
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err == nil {
		t.Error("the thief's session, stopped by the owner's sign-out everywhere, works again")
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[1]); err != nil {
		t.Errorf("the owner's kept session stopped: %v", err)
	}
}
