package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/moderation"
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

// TestAUserCannotHoldHisSuspensionBackWithHisRevertLinks (attackers are
// users too): a member gathers revert links of his own (each change of
// address he asks mails one to the address he keeps; none goes stale by
// another recovery) and follows one just before each of the admin's
// compare-and-sets of his suspension lands. A recovery by a mailed link
// did not give way to the admin's hold, so each revert moved the
// account's version, and the suspension lost all its eight rounds and
// answered 409 concurrent_change, for as long as his links lasted. A
// recovery gives way to an admin's hold (only a recovery's own kind of
// hold does not stop it), and its own hold never takes an admin's place:
// the suspension lands in its second round, and his links after the
// first are refused 409, to be followed again once it has landed.
func TestAUserCannotHoldHisSuspensionBackWithHisRevertLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	if err := m.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	root, err := m.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // more than the suspension's eight rounds
		if err := changeEmailFrom(m, fmt.Sprintf("ann%d@example.net", i)); err != nil {
			t.Fatal(err)
		}
	}
	links := m.box.tokens("revert-email")
	went, refused := 0, 0
	revert := func() {
		if len(links) == 0 {
			return
		}
		err := m.svc.RevertEmailChange(ctx, links[0])
		links = links[1:]
		var de *domain.Error
		switch {
		case err == nil:
			went++
		case errors.As(err, &de) && de.Code == "concurrent_change" && strings.Contains(de.Message, "admin") && de.RetryAfter > 0:
			refused++
		default:
			t.Errorf("ann's revert link: %v", err)
		}
	}
	owner := revert
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: m.store.Now, Attempts: m.store.ModerationAttempts()},
		m.svc, churning{Users: m.store.Users(), owner: func() { owner() }}, m.store.Suspensions())
	_, err = mod.Suspend(ctx, domain.Principal{UserID: root.ID}, m.ann.ID, moderation.SuspendInput{Reason: "spam"})
	owner = func() {}
	if err != nil {
		t.Fatalf("the suspension while ann follows a revert link of hers before each round: %v (%d went, %d refused)", err, went, refused)
	}
	if went != 1 || refused < 1 {
		t.Errorf("ann's revert links: %d went, %d refused; want the first to go and those after it to give way", went, refused)
	}
	if u, err := m.store.Users().GetSerial(ctx, m.ann.ID); err != nil || u.Status != domain.StatusSuspended {
		t.Fatalf("ann after the suspension: %v %v, want suspended", u.Status, err)
	}
}
