package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAThiefsSignOutsCannotHoldTheOwnersRecoveryBack (attackers are users
// too): a thief holds a session of ann's (and, for the revert, used her
// password to move her address). Once he signed out everywhere else from
// it, his session is the one the account names, so it goes on working;
// he signs out everywhere else again just before each of the
// compare-and-sets of ann's recovery lands (no rate limit: it must work
// for an owner facing a thief). Each sign-out moves the account's
// version: her reset, or her revert of his change, lost all its eight
// rounds and answered 409 concurrent_change, his session still working,
// for as long as he kept at it, and her links are her only way back. A
// recovery's round that follows a lost one now holds the account's own
// changes back, as an admin's does: it lands in its second round, and
// the thief's session ends.
func TestAThiefsSignOutsCannotHoldTheOwnersRecoveryBack(t *testing.T) {
	t.Parallel()
	recoveries := []struct {
		name  string
		setup func(t *testing.T, m *mailWorld)
		run   func(m *mailWorld) error
	}{
		{"a reset", func(t *testing.T, m *mailWorld) {
			if err := m.svc.RequestPasswordReset(context.Background(), annHome); err != nil {
				t.Fatal(err)
			}
		}, func(m *mailWorld) error {
			_, err := m.svc.ResetPassword(context.Background(), m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
			return err
		}},
		{"a revert of an email change", func(t *testing.T, m *mailWorld) { thiefTakes(t, m) }, func(m *mailWorld) error {
			return m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome))
		}},
	}
	for _, r := range recoveries {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m := emailChangeWorld(t, false)
			r.setup(t, m)
			rows := &ownerFirst{UserStore: m.rows}
			m.rows = rows
			m.rewire(func(*memstore.Store, *accounts.Config) {})
			thief, err := m.svc.Authenticate(ctx, m.sessions[0])
			if err != nil {
				t.Fatal(err)
			}
			went := 0
			rows.owner = func() {
				err := m.svc.RevokeSessions(ctx, thief, m.ann.ID, true)
				switch {
				case err == nil:
					went++
				case codeOf(err) == "concurrent_change", errors.Is(err, domain.ErrNoSession):
					// Given way to the recovery, or ended by it.
				default:
					t.Errorf("the thief's sign-out everywhere else: %v", err)
				}
			}
			err = r.run(m)
			rows.owner = nil
			if err != nil {
				t.Fatalf("%s while the thief signs out everywhere else before each round: %v (%d of his sign-outs went)", r.name, err, went)
			}
			if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err == nil {
				t.Errorf("the thief's session still works after %s", r.name)
			}
		})
	}
}
