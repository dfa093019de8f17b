package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestALoginRacingASuspensionIsToldOfIt: the member's login has checked
// the password and is writing its session (one of the session's writes
// slow) when an admin's suspension lands. The suspension's
// compare-and-set moves the password epoch on (S3: every session ends in
// its write), so the login's check again at the end found the epoch it
// read gone and answered 401 invalid_credentials: the member, whose
// password was right, was told it was wrong, and never learnt of the
// suspension (docs/design/sessions.md, step 8: suspended meanwhile, 403
// suspended with its reason, as step 5 answers). Either way no session
// is handed out or left working.
func TestALoginRacingASuspensionIsToldOfIt(t *testing.T) {
	t.Parallel()
	for _, slowCall := range []string{"sessions_by_user.insert", "sessions.insert"} {
		name := "a suspension during the login's " + slowCall
		m := newModWorld(t)
		ctx := context.Background()
		var suspendErr error
		ran := false
		slowOnce(m.store, slowCall, 0, func() { ran, suspendErr = true, m.suspend(0) })
		r, err := m.svc.Login(ctx, "member", password, accounts.Client{})
		calm(m.store)
		if !ran || suspendErr != nil {
			t.Fatalf("%s: the suspension ran %v, answered %v", name, ran, suspendErr)
		}
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != "suspended" || de.Details["reason"] != "spam" {
			t.Errorf("%s: the login answered %v, want 403 suspended with the reason", name, err)
		}
		if r.Token != "" {
			if _, aerr := m.svc.Authenticate(ctx, r.Token); aerr == nil {
				t.Errorf("%s: the login handed out a session that works", name)
			}
		}
	}
}

// TestASecondStepAfterASuspensionIsToldOfIt: ann's password was right and
// her login answered a challenge; an admin suspends her before she types
// the app's code. The suspension's compare-and-set moves the password
// epoch on (S3), and the challenge, bound to the epoch it was made at,
// was refused as if her password had changed (401 invalid_challenge:
// "log in again", whose login then says suspended), where openapi.yaml
// answers the second step 403 suspended: "the account was suspended
// since the password was checked". No session either way.
func TestASecondStepAfterASuspensionIsToldOfIt(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	if err := suspendNow(context.Background(), f.mailWorld); err != nil {
		t.Fatal(err)
	}
	err := f.secondStep(accounts.Proof{Code: f.code(t, 0)})
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "suspended" {
		t.Errorf("the second step after a suspension answered %v, want 403 suspended", err)
	}
	if n := f.working(t); n != 0 {
		t.Errorf("the second step after a suspension left %d sessions working", n)
	}
}
