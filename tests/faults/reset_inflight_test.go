package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAThiefsSignOutElsewhereInFlightKeepsNoSessionPastAReset: a thief
// holding ann's session and password signs out everywhere else, the
// request slower than ann's reset from her mailbox (and than the reset's
// compare-and-set, not than the sweep of the sessions it stopped, which
// runs after its answer); the thief's session, from before the reset,
// works no more after it (U8).
func TestAThiefsSignOutElsewhereInFlightKeepsNoSessionPastAReset(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, true)
	later := new([]func())
	m.rewire(func(_ *memstore.Store, c *accounts.Config) {
		c.Background = func(job func()) { *later = append(*later, job) }
	})
	ctx := context.Background()
	thief, err := m.svc.Authenticate(ctx, m.sessions[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{}); err != nil {
		t.Fatal(err)
	}
	_ = m.svc.RevokeSessions(ctx, thief, m.ann.ID, true) // its answer does not matter: only what it left
	for _, job := range *later {
		job()
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[1]); err == nil {
		t.Error("the thief's session from before ann's reset works after it: the sign-out in flight named it for the epoch after the reset's")
	}
}
