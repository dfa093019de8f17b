package faults

import (
	"context"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// TestTheFirstFactorsCodesStandAgainstAnotherFirstConfirmation: ann (no
// factor yet) begins two authenticators, phone and tablet, each proven by
// her password alone, and confirms both at once. Phone's confirmation
// writes its recovery set, then is slow at its compare-and-set of the
// factor; meanwhile tablet's confirmation reads the factors (none
// confirmed: a first factor too) and phone's set, and writes its own set
// in place of it, that write held at a node with its answer lost (503).
// Phone's confirmation then applies, removes tablet's enrolment pending,
// and answers success with its ten codes. Tablet's held write lands last:
// it replaces the set phone showed, so the codes ann keeps open nothing,
// and the set that stands was shown to no one. A confirmation that
// answered success must have shown the codes of the set that stands.
func TestTheFirstFactorsCodesStandAgainstAnotherFirstConfirmation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	p := domain.Principal{UserID: m.ann.ID}
	phone, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "phone", accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	tablet, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "tablet", accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil || len(factors) != 2 {
		t.Fatalf("the enrolments: %+v %v", factors, err)
	}
	codeOf := func(id string) string { return codeIn(t, m, totp, factors, id) }
	phoneCode := codeOf(phone.Factor.ID)
	seen := map[string]int{}
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		seen[name]++
		switch {
		case name == "factors.confirm" && seen[name] == 1:
			return memstore.Slow
		case name == "factors.set_recovery" && seen[name] == 2:
			return memstore.LandLate
		}
		return memstore.None
	}
	ran := false
	var tabletErr error
	m.store.Meanwhile = func() {
		if !ran {
			ran = true
			_, tabletErr = m.svc.ConfirmTOTP(ctx, p, m.ann.ID, tablet.Factor.ID, codeOf(tablet.Factor.ID))
		}
	}
	c, err := m.svc.ConfirmTOTP(ctx, p, m.ann.ID, phone.Factor.ID, phoneCode)
	calm(m.store)
	m.store.Land()
	if !ran {
		t.Fatal("tablet's confirmation did not run inside phone's")
	}
	t.Logf("tablet's confirmation answered %v", tabletErr)
	if err != nil {
		t.Fatalf("phone's confirmation: %v", err)
	}
	_, set, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.RecoveryCodes) != 10 || !shownStand(m.ann.ID, c.RecoveryCodes, set) {
		t.Errorf("phone's confirmation answered success with %d codes, not the set that stands (%d codes, generation %s)",
			len(c.RecoveryCodes), len(set.Codes), set.Generation)
	}
}

// codeIn is the current code of enrolment id among factors (as read
// from m's store), by the app of totp.
func codeIn(t *testing.T, m *mailWorld, totp *factor.TOTP, factors []accounts.Factor, id string) string {
	t.Helper()
	for _, f := range factors {
		if f.ID == id {
			c, err := totp.Code(f.Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatalf("no enrolment %s", id)
	return ""
}
