package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
)

// TestAThiefCannotStarveTheOwnersReset: a thief with a session and the
// password changes the password, spends the address's hourly mails on
// reset requests (their links reach the owner's mailbox), and changes the
// password again, so the owner's own request within the hour is held
// back. Before, every link in her mailbox was stale (a reset link went
// stale with any change of the password) and the thief could repeat it
// every hour. Now a reset link goes stale only with a recovery (a reset,
// a revert), so any link in her mailbox resets the password, and the
// reset ends the thief's session.
func TestAThiefCannotStarveTheOwnersReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	limitMail(m, 3)
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	stolen := password
	for i, next := range []string{"the thief's first pass", "the thief's second pass"} {
		if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(stolen), next); err != nil {
			t.Fatalf("the thief's change %d: %v", i+1, err)
		}
		stolen = next
		if i == 0 {
			for range 3 {
				if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	links := m.box.sentTo("reset", annHome)
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	if m.box.sentTo("reset", annHome) != links {
		t.Fatalf("the owner's request went out past the spent limit; the test no longer shows the attack")
	}
	if links == 0 {
		t.Fatal("no reset link reached the owner's mailbox")
	}
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
		t.Fatalf("the owner's reset with a link in her mailbox: %v (the thief changed the password after it was mailed)", err)
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err == nil {
		t.Error("the thief's session outlives the owner's reset")
	}
	if _, err := m.svc.Login(ctx, "ann", stolen, accounts.Client{}); err == nil {
		t.Error("the thief's password still logs in after the owner's reset")
	}
	if _, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{}); err != nil {
		t.Errorf("the owner's new password: %v", err)
	}
	// Only a recovery makes a link stale: after her reset, the links the
	// thief's requests mailed are refused.
	for _, token := range m.box.tokens("reset")[:links-1] {
		if _, err := m.svc.ResetPassword(ctx, token, "yet another passphrase", accounts.Client{}); err == nil {
			t.Error("a reset link mailed before the owner's reset still works after it")
		}
	}
}
