package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAFactorConfirmedLateDoesNotSurviveAReset: as
// TestAFactorConfirmedWithItsAnswerLostDoesNotSurviveAReset, but the
// thief's compare-and-set of the factor is held at a node (its answer
// lost) and lands only after ann's reset from her mailbox. The
// confirmation reads the account again before the reset, finds the
// thief's session working and answers 503, leaving the factor pending;
// the held write then confirms it after the reset ended that session, and
// ann's next login with her new password answers the thief's challenge.
// Any attempt of a write may land at any later time: the confirmation
// must not leave behind a write that makes a stopped session's factor
// work.
func TestAFactorConfirmedLateDoesNotSurviveAReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, thief, e, code := thiefAboutToConfirm(t)
	faultNamed(m.store, "factors.confirm", 0, memstore.LandLate)
	_, confirmErr := m.svc.ConfirmTOTP(ctx, thief, m.ann.ID, e.Factor.ID, code)
	calm(m.store)
	if confirmErr == nil {
		t.Fatal("the thief's confirmation answered success with its write held, want a refusal")
	}
	if _, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{}); err != nil {
		t.Fatalf("ann's reset: %v", err)
	}
	m.store.Land()
	checkNoFactorOfAStoppedSession(t, m, "confirmed (its write landing late: "+confirmErr.Error()+")", "reset", newPassword)
}
