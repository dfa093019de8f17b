package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// TestAnExpiredChangeShowsInNoAnswer: a change of email pending past its
// link's life reads as none, "not shown" (docs/design/email-change.md),
// in every answer that shows the account, not only GET /v1/me. Ann asks
// for annNext; 24 hours and the grace pass. Her login's answer (the
// Session's user, as a second step's and a reset's) showed annNext as
// pending: openSession answered the row as read, which still holds it
// until a write drops it. The answer to her next change drops it
// (holds.live) and stays checked here.
func TestAnExpiredChangeShowsInNoAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, true) // ann asks for annNext
	m.store.Advance(24*time.Hour + accounts.TokenGrace)
	r, err := m.svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if r.User.PendingEmail != "" {
		t.Errorf("the login's answer shows the expired change: pendingEmail %q", r.User.PendingEmail)
	}
	p, err := m.svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.svc.Me(ctx, p); err != nil || got.PendingEmail != "" {
		t.Fatalf("GET /v1/me shows the expired change: %q %v", got.PendingEmail, err)
	}
	name := "Ann"
	v, err := m.svc.UpdateUser(ctx, p, m.ann.ID, accounts.UpdateInput{DisplayName: &name})
	if err != nil {
		t.Fatal(err)
	}
	if v.User.PendingEmail != "" {
		t.Errorf("the change's answer shows the expired change: pendingEmail %q", v.User.PendingEmail)
	}
}
