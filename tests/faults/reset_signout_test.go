package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
)

// TestAThiefsSignOutEverywhereInFlightLeavesTheResetsSession: a thief
// holding ann's session signs out everywhere (keeping nothing), the
// request authenticated before ann's reset from her mailbox and slower
// than it; the session the reset handed ann, opened after the thief's
// was stopped, still works after it. The sign-out's compare-and-set
// moved the epoch on past the reset's on the authority of a session the
// reset had ended, so it ended the owner's new session: a request that
// no longer works must act no more than one sent after the reset.
func TestAThiefsSignOutEverywhereInFlightLeavesTheResetsSession(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, true)
	ctx := context.Background()
	thief, err := m.svc.Authenticate(ctx, m.sessions[1])
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{})
	if err != nil || res.Token == "" {
		t.Fatalf("reset: %+v, %v", res, err)
	}
	_ = m.svc.RevokeSessions(ctx, thief, m.ann.ID, false) // its answer does not matter: only what it left
	if _, err := m.svc.Authenticate(ctx, res.Token); err != nil {
		t.Errorf("ann's session from her reset no longer works: the thief's sign-out in flight, from a session the reset ended, ended it (%v)", err)
	}
}
