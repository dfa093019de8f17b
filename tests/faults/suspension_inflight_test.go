package faults

import (
	"context"
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
