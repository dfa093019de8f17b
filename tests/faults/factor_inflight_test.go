package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain/accounts"
	"shelf/internal/factor"
)

// TestAFactorConfirmedInFlightDoesNotSurviveAReset: a thief holding ann's
// session and password (she has no second factor) enrols an
// authenticator and confirms it, the confirmation authenticated before
// ann's reset from her mailbox (or her sign-out everywhere else) and its
// compare-and-set of the factor slower than it. That ended the thief's
// session; a factor the session confirms after it must not stand, or the
// thief's factor (and the recovery codes shown to the thief) stands
// between ann's password and a session: her next login answers a
// challenge she cannot meet, and she cannot remove the factor without a
// code of it (check again at the end: the confirmation relied on the
// caller's session).
func TestAFactorConfirmedInFlightDoesNotSurviveAReset(t *testing.T) {
	t.Parallel()
	for _, owner := range []struct {
		name     string
		password string
		act      func(m *mailWorld) error
	}{
		{"reset", newPassword, func(m *mailWorld) error {
			r, err := m.svc.ResetPassword(context.Background(), m.reset, newPassword, accounts.Client{})
			if err == nil && r.Token == "" {
				err = errors.New("no session")
			}
			return err
		}},
		{"sign-out-everywhere-else", password, func(m *mailWorld) error {
			p, err := m.svc.Authenticate(context.Background(), m.sessions[0])
			if err != nil {
				return err
			}
			return m.svc.RevokeSessions(context.Background(), p, m.ann.ID, true)
		}},
	} {
		t.Run(owner.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m := newMailWorld(t, true)
			totp := withFactors(t, m, nil)
			thief, err := m.svc.Authenticate(ctx, m.sessions[1])
			if err != nil {
				t.Fatal(err)
			}
			e, err := m.svc.EnrolTOTP(ctx, thief, m.ann.ID, "thief", accounts.Password(password))
			if err != nil {
				t.Fatalf("the thief's enrolment: %v", err)
			}
			factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
			if err != nil || len(factors) != 1 {
				t.Fatalf("the factors: %+v %v", factors, err)
			}
			code, err := totp.Code(factors[0].Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
			if err != nil {
				t.Fatal(err)
			}
			var ownerErr error
			ran := false
			slowOnce(m.store, "factors.confirm", 0, func() { ran, ownerErr = true, owner.act(m) })
			_, confirmErr := m.svc.ConfirmTOTP(ctx, thief, m.ann.ID, e.Factor.ID, code)
			calm(m.store)
			if !ran || ownerErr != nil {
				t.Fatalf("ann's %s inside the thief's confirmation: ran %v, answered %v", owner.name, ran, ownerErr)
			}
			t.Logf("the thief's confirmation answered %v", confirmErr)
			left, _, err := m.store.Factors().Read(ctx, m.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range left {
				if f.Confirmed() {
					t.Errorf("the factor %s, confirmed by a session ann's %s had ended, stands after it", f.ID, owner.name)
				}
			}
			r, err := m.svc.Login(ctx, "ann", owner.password, accounts.Client{})
			if err != nil || r.Token == "" {
				t.Errorf("ann's login answered %+v, %v; want a session, not the thief's factor's challenge", r, err)
			}
		})
	}
}
