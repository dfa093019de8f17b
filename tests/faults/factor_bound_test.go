package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestEnrolmentsAtOnceKeepTheAccountsBoundOnFactors: a thief with a
// session and the password of an account without a factor sends 12
// enrolments at once (a few addresses pass the per-address limit). Each
// write of a pending factor is slow, and the next enrolment reads the
// factors meanwhile: every one counted the factors before any other's
// write landed. The account keeps at most 10 factors, pending ones
// included (maxFactors), whatever the schedule: every login reads them
// all, checks a code against each and lists each passkey, and the list
// shows each. Before, each enrolment counted before its write and never
// again: all 12 answered success, and as many at once as the thief sends
// pass the bound.
func TestEnrolmentsAtOnceKeepTheAccountsBoundOnFactors(t *testing.T) {
	t.Parallel()
	const atOnce, bound = 12, 10
	m := newMailWorld(t, false)
	m.verify(t)
	withFactors(t, m, nil)
	ctx := context.Background()
	thief := domain.Principal{UserID: m.ann.ID}
	var answers []error
	enrol := func() {
		_, err := m.svc.EnrolTOTP(ctx, thief, m.ann.ID, "thief", accounts.Password(password))
		answers = append(answers, err)
	}
	sent := 1
	m.store.Meanwhile = func() {
		if sent < atOnce {
			sent++
			enrol()
		}
	}
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "factors.begin" {
			return memstore.Slow
		}
		return memstore.None
	}
	enrol()
	m.store.FaultAt, m.store.Meanwhile = nil, nil
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, err := range answers {
		var de *domain.Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &de) && de.Code == "too_many_factors":
		default:
			t.Errorf("an enrolment answered %v, want success or too_many_factors", err)
		}
	}
	t.Logf("%d enrolments at once: %d answered success; the account holds %d factors", len(answers), ok, len(factors))
	if len(factors) > bound {
		t.Errorf("the account holds %d factors after %d enrolments at once, past its bound of %d", len(factors), atOnce, bound)
	}
	if ok > bound {
		t.Errorf("%d enrolments answered success, past the bound of %d", ok, bound)
	}
}

// TestAThiefsPendingEnrolmentsEndWithHisSessions: a thief with ann's
// password and a session of hers, the account without a factor, begins
// ten authenticators and confirms none: each waits ten minutes for its
// first code, and the ten fill the account's bound (pending ones
// included). Ann's own enrolment was refused 409 too_many_factors for as
// long as he began them again, and the refusal told her to remove one
// (she sees no pending enrolment to remove) or to wait. An enrolment is
// proven by a session: ending the other sessions ends the enrolments
// waiting for a first code, and the refusal says so.
func TestAThiefsPendingEnrolmentsEndWithHisSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	for range 10 {
		thiefEnrols(t, m, 0)
	}
	ann, err := m.svc.Authenticate(ctx, m.sessions[1])
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.svc.EnrolTOTP(ctx, ann, m.ann.ID, "mine", accounts.Password(password))
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "too_many_factors" || !strings.Contains(de.Message, "sign out everywhere else") {
		t.Fatalf("her enrolment beside his ten: %v, want too_many_factors telling her to sign out everywhere else", err)
	}
	if err := m.svc.RevokeSessions(ctx, ann, m.ann.ID, true); err != nil {
		t.Fatal(err)
	}
	e, err := m.svc.EnrolTOTP(ctx, ann, m.ann.ID, "mine", accounts.Password(password))
	if err != nil {
		t.Fatalf("her enrolment once she signed out everywhere else: %v", err)
	}
	thiefConfirms(t, m, totp, ann, e.Factor.ID)
}

// TestAnEnrolmentConfirmedAsTheSessionsEndStands: ann begins an
// authenticator, then signs out everywhere else; the removal of the
// enrolments pending, after the answer, read hers pending and is slow,
// and she confirms it meanwhile (her session was kept). An unconditioned
// removal landing after deleted the factor her confirmation had just
// answered for: she believed herself protected by a second factor the
// account no longer asked for. The removal is conditioned on the
// enrolment still pending.
func TestAnEnrolmentConfirmedAsTheSessionsEndStands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	ann, e := thiefEnrols(t, m, 1)
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "factors.remove_pending" {
			return memstore.Slow
		}
		return memstore.None
	}
	m.store.Meanwhile = func() {
		m.store.Meanwhile = nil
		thiefConfirms(t, m, totp, ann, e.Factor.ID)
	}
	if err := m.svc.RevokeSessions(ctx, ann, m.ann.ID, true); err != nil {
		t.Fatal(err)
	}
	m.store.FaultAt, m.store.Meanwhile = nil, nil
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil || len(factors) != 1 || !factors[0].Confirmed() {
		t.Errorf("her factor confirmed while the pending ones were removed: %+v %v, want it standing", factors, err)
	}
}
