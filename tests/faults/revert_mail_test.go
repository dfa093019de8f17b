package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestARevertWhoseDoneMarkWasLostStillMailsItsResetLink: a stranger
// spends the owner's address's mails for the hour on reset requests; the
// thief moves the email. The owner's revert applies, and its token's done
// mark applies too, but its answer is lost (or the process dies right
// after it): the revert answers 503, and its retry finds the token done
// and answers used. The reset link the revert mails after its done mark
// never went out; every older link is stale (a revert is a recovery), the
// password opens nothing, and her own request for a link is held back by
// the limit the stranger spent: she is out for the hour. "Done" must
// mean the reset link was mailed.
func TestARevertWhoseDoneMarkWasLostStillMailsItsResetLink(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.LoseAnswer, memstore.Crash} {
		ctx := context.Background()
		m := emailChangeWorld(t, false)
		limitMail(m, 5)
		for range 6 { // a stranger spends the address's mails (their links go stale with the revert)
			if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
				t.Fatal(err)
			}
		}
		thiefTakes(t, m)
		m.store.FaultAt = func(_ int, name string) memstore.Fault {
			if name == "tokens.done" {
				return fault
			}
			return memstore.None
		}
		revert := m.box.tokenTo("revert-email", annHome)
		err := m.svc.RevertEmailChange(ctx, revert)
		m.store.FaultAt = nil
		m.store.Recover()
		if err != nil {
			// The client retries.
			if err := m.svc.RevertEmailChange(ctx, revert); err != nil && !errors.Is(err, accounts.ErrTokenUsed) {
				t.Fatalf("%s: the revert's retry: %v", fault, err)
			}
		}
		if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err == nil {
			continue
		}
		// Every link in her mailbox is stale: she asks for a new one.
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatal(err)
		}
		if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
			t.Errorf("%s at the revert's done mark: no reset link works (%v): the revert's was never mailed, its retry answered used, the older links are stale and her request is held back by the limit the stranger spent; she is out for the hour", fault, err)
		}
	}
}

// TestAFactorsRevertWhoseDoneMarkWasLostStillMailsItsResetLink: the same
// for the revert of a factor the thief added (with a session and the
// password, the account having none): its link's done mark lost, the
// retry answers used, and the reset link must have gone out.
func TestAFactorsRevertWhoseDoneMarkWasLostStillMailsItsResetLink(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.LoseAnswer, memstore.Crash} {
		ctx := context.Background()
		m := emailChangeWorld(t, false)
		totp := withFactors(t, m, nil)
		limitMail(m, 5)
		for range 6 { // a stranger spends the address's mails (their links go stale with the revert)
			if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
				t.Fatal(err)
			}
		}
		p, err := m.svc.Authenticate(ctx, m.sessions[0])
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "thief", accounts.Password(password))
		if err != nil {
			t.Fatalf("the thief's enrolment: %v", err)
		}
		thiefConfirms(t, m, totp, p, e.Factor.ID)
		m.store.FaultAt = func(_ int, name string) memstore.Fault {
			if name == "tokens.done" {
				return fault
			}
			return memstore.None
		}
		revert := m.box.tokenTo("revert-factor", annHome)
		err = m.svc.RevertFactor(ctx, revert)
		m.store.FaultAt = nil
		m.store.Recover()
		if err != nil {
			if err := m.svc.RevertFactor(ctx, revert); err != nil && !errors.Is(err, accounts.ErrTokenUsed) {
				t.Fatalf("%s: the revert's retry: %v", fault, err)
			}
		}
		if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err == nil {
			continue
		}
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatal(err)
		}
		if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
			t.Errorf("%s at the factor revert's done mark: no reset link works (%v): she is out for the hour", fault, err)
		}
	}
}
