package faults

import (
	"context"
	"errors"
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
