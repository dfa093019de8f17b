package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAResetHandsOutNoSessionWhatLandedMeanwhileEnds: the owner's reset
// has set the password and is writing the session it answers with (one
// of the two writes slow) when something that ends sessions lands: a
// second reset (with a link mailed once the first had set the password),
// or a suspension. Their revocation listed the sessions before this one
// existed. The reset checks again at the end, as a login does: after a
// second reset it answers stale and hands out no token; after a
// suspension it answers success without a session (the password is set);
// either way the session it wrote is deleted, and the second reset's
// session is the only one left.
func TestAResetHandsOutNoSessionWhatLandedMeanwhileEnds(t *testing.T) {
	t.Parallel()
	for _, slowCall := range []string{"sessions_by_user.insert", "sessions.insert"} {
		for _, meanwhile := range []string{"reset", "suspension"} {
			name := meanwhile + " during the reset's " + slowCall
			m := newMailWorld(t, true)
			ctx := context.Background()
			var second accounts.LoginResult
			var secondErr error
			ran := false
			slowOnce(m.store, slowCall, 0, func() {
				ran = true
				if meanwhile == "reset" {
					secondErr = m.svc.RequestPasswordReset(ctx, "ann@example.org")
					if secondErr == nil {
						second, secondErr = m.svc.ResetPassword(ctx, m.box.tokens("reset")[1], otherPassword, accounts.Client{UserAgent: "second"})
					}
					return
				}
				secondErr = suspendNow(ctx, m)
			})
			r, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{UserAgent: "first"})
			calm(m.store)
			if !ran || secondErr != nil {
				t.Fatalf("%s: the second request ran %v, answered %v", name, ran, secondErr)
			}
			switch {
			case meanwhile == "reset" && !errors.Is(err, accounts.ErrTokenStale):
				t.Errorf("%s: the first reset answered %v, want stale", name, err)
			case meanwhile == "suspension" && err != nil:
				t.Errorf("%s: the reset answered %v, want success without a session", name, err)
			case r.Token != "":
				t.Errorf("%s: the first reset handed out a session", name)
			}
			entries, err := m.store.Sessions().Entries(ctx, m.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				s, err := m.store.Sessions().Get(ctx, e.TokenHash)
				if err == nil && s.UserAgent != "second" {
					t.Errorf("%s: a session the first reset wrote is left: %+v", name, s)
				}
			}
			if meanwhile == "reset" {
				if _, err := m.svc.Authenticate(ctx, second.Token); err != nil {
					t.Errorf("%s: the second reset's session does not work: %v", name, err)
				}
			}
		}
	}
}

// suspendNow suspends ann until lifted, as a moderator's compare-and-set
// does (a new password epoch in the same write: S3), and ends her
// sessions after it.
func suspendNow(ctx context.Context, m *mailWorld) error {
	u, err := m.store.Users().Get(ctx, m.ann.ID)
	if err != nil {
		return err
	}
	now := m.store.Now()
	u.Status = domain.StatusSuspended
	u.Suspension = &domain.Suspension{UserID: u.ID, Username: u.Username, Reason: "spam", SuspendedAt: now}
	u.PasswordEpoch, u.PasswordSession = u.PasswordEpoch+1, ""
	u.Version++
	u.UpdatedAt = now
	if applied, err := m.store.Users().Update(ctx, u); err != nil || !applied {
		return errors.Join(err, errors.New("the suspension's compare-and-set did not apply"))
	}
	return m.store.Sessions().DeleteAll(ctx, u.ID, "")
}

// TestASuspendedAccountsResetOpensNoSession: a suspended account's reset
// sets the password and marks its token done, and answers success with
// no session (the handler's 204): the login would refuse the account.
func TestASuspendedAccountsResetOpensNoSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, true)
	if err := suspendNow(ctx, m); err != nil {
		t.Fatal(err)
	}
	r, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{})
	if err != nil || r.Token != "" {
		t.Fatalf("the suspended account's reset answered %v with a session %v, want success and none", err, r.Token != "")
	}
	u, err := m.store.Users().Get(ctx, m.ann.ID)
	if err != nil || u.PasswordHash != "plain:"+newPassword {
		t.Fatalf("the password after the reset: %q (%v)", u.PasswordHash, err)
	}
	if entries, _ := m.store.Sessions().Entries(ctx, m.ann.ID); len(entries) != 0 {
		t.Errorf("the suspended account has %d sessions after its reset", len(entries))
	}
	if _, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{}); !errors.Is(err, accounts.ErrTokenUsed) {
		t.Errorf("the token after the reset: %v, want used", err)
	}
}
