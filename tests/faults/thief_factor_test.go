package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
	"shelf/internal/factor"
)

// TestARevertUndoesAFactorAddedAtTheThiefsAddress: a thief with a
// session and the password (the account has no factor) moves the email to
// their address and confirms it there, then adds an authenticator, whose
// notice (and revert link) goes to the account's address of the moment:
// the thief's. The owner's revert of the email change gives her address
// back, asks for a reset, and removes the factors enrolled since the
// change, so her reset opens a session (before, the thief's factor stayed:
// her reset answered a challenge she could not meet, the recovery codes
// shown to the thief, the factor's own revert link mailed to the thief).
func TestARevertUndoesAFactorAddedAtTheThiefsAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	totp := withFactors(t, m, nil)
	thiefTakes(t, m) // email now annNext, the thief's; annHome held for the revert
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatalf("the thief's session after the change: %v", err)
	}
	e, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "thief", accounts.Password(password))
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
	if _, err := m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, code); err != nil {
		t.Fatalf("the thief's confirmation: %v", err)
	}
	if n := m.box.sentTo("revert-factor", annHome); n != 0 {
		t.Logf("factor notices to the owner's address: %d", n)
	}
	// The owner follows the email change's revert link, then its reset.
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatal(err)
	}
	r, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if err != nil {
		t.Fatalf("the owner's reset: %v", err)
	}
	if r.Token == "" {
		t.Errorf("after her revert and reset, the owner gets a challenge for the thief's factor (%q), no session: locked out", r.Challenge)
	}
	left, _, _ := m.store.Factors().Read(ctx, m.ann.ID)
	for _, f := range left {
		if f.Confirmed() {
			t.Errorf("the thief's factor %s outlives the owner's revert", f.ID)
		}
	}
}
