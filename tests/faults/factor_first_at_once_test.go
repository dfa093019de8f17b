package faults

import (
	"context"
	"slices"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// TestTwoFirstFactorsConfirmedAtOnceNeverStandTogether: ann has no
// factor; she begins an authenticator, and a thief holding her password
// and a session begins his, each proven by the password alone. They
// confirm at once: the outer confirmation reads the factors (none
// confirmed: a first factor), mails its notice, writes its recovery set,
// and is slow at its factor's compare-and-set; meanwhile the inner one
// reads the factors (the outer's still pending: a first factor too),
// writes its set and confirms its factor, and its process dies right
// after that write, or its check at the end cannot read the factors (any
// process may die between two statements, any call may fail), so it
// never removes the outer's enrolment. The outer's write then lands on its
// row, still pending, and it answered success: both factors stand, the
// thief's beside ann's, though each confirmation relied on the account
// having no factor (the password alone proved it). Once ann signs every
// other session out, his code and her password log in. A first factor's
// confirmation must check again at the end that it stands alone, and
// one that answered success keeps its factor: at most one of the two
// stands, and never one whose answer was not a success beside it.
func TestTwoFirstFactorsConfirmedAtOnceNeverStandTogether(t *testing.T) {
	t.Parallel()
	for _, schedule := range []struct {
		name string
		// herFirst: ann's confirmation is the outer one.
		herFirst bool
		// call is the inner confirmation's call that fails, the nth of its
		// name counted from the outer's start.
		call  string
		nth   int
		fault memstore.Fault
	}{
		{"his process dies after his factor's write", true, "factors.confirm", 1, memstore.Crash},
		{"his check at the end cannot read the factors", true, "factors.read", 2, memstore.FailBefore},
		{"her process dies after her factor's write", false, "factors.confirm", 1, memstore.Crash},
	} {
		t.Run(schedule.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m := newMailWorld(t, false)
			m.verify(t)
			totp := withFactors(t, m, nil)
			thief, theirs := thiefEnrols(t, m, 1)
			owner, err := m.svc.Authenticate(ctx, m.sessions[0])
			if err != nil {
				t.Fatal(err)
			}
			hers, err := m.svc.EnrolTOTP(ctx, owner, m.ann.ID, "phone", accounts.Password(password))
			if err != nil {
				t.Fatalf("ann's enrolment: %v", err)
			}
			sealed := map[string]string{}
			factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range factors {
				sealed[f.ID] = f.Sealed
			}
			type confirmation struct {
				who string
				p   domain.Principal
				id  string
				err error
			}
			her := &confirmation{who: "ann's", p: owner, id: hers.Factor.ID}
			his := &confirmation{who: "the thief's", p: thief, id: theirs.Factor.ID}
			outer, inner := her, his
			if !schedule.herFirst {
				outer, inner = his, her
			}
			confirm := func(c *confirmation) {
				code, err := totp.Code(sealed[c.id], m.ann.ID, m.store.Now().Unix()/factor.Period)
				if err != nil {
					t.Error(err)
					return
				}
				_, c.err = m.svc.ConfirmTOTP(ctx, c.p, m.ann.ID, c.id, code)
			}
			seen := map[string]int{}
			m.store.FaultAt = func(_ int, name string) memstore.Fault {
				seen[name]++
				switch {
				case name == "factors.confirm" && seen[name] == 1:
					return memstore.Slow
				case name == schedule.call && seen[name] == schedule.nth+1:
					return schedule.fault
				}
				return memstore.None
			}
			ran := false
			m.store.Meanwhile = func() {
				if ran {
					return
				}
				ran = true
				confirm(inner)
				m.store.Recover() // the outer confirmation runs on another process
			}
			confirm(outer)
			calm(m.store)
			if !ran {
				t.Fatal("the inner confirmation did not run inside the outer's")
			}
			t.Logf("%s confirmation answered %v, %s (inner) %v", outer.who, outer.err, inner.who, inner.err)
			after, _, err := m.store.Factors().Read(ctx, m.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			standing := map[string]bool{}
			for _, f := range after {
				if f.Confirmed() {
					standing[f.ID] = true
				}
			}
			if len(standing) > 1 {
				t.Errorf("%d factors stand, each confirmed as the account's first by the password alone: the thief's beside ann's", len(standing))
			}
			for _, c := range []*confirmation{her, his} {
				if c.err == nil && !standing[c.id] {
					t.Errorf("%s confirmation answered success, and its factor is gone", c.who)
				}
			}
		})
	}
}

// TestTheFirstFactorsCheckLeavesAFactorConfirmedSinceItsRead: ann (no
// factor yet) confirms her phone, the account's first factor. Its
// compare-and-set applied, its check of the session at the end is slow:
// meanwhile ann begins a tablet, proven by her password and a code of
// her phone. Then the phone's confirmation reads the factors (the tablet
// pending) and removes the enrolments it found pending, that removal
// slow too: meanwhile ann confirms the tablet, which answers success. The
// removal then lands on the tablet's row, confirmed since the read, and
// deletes it: ann was told her tablet was added, and it is gone. (Two
// first factors proven by the password alone and confirmed at once meet
// the same removal: the later, answered success with its recovery codes,
// loses its factor to the earlier's.) What a confirmation answered
// success for must stand: a first factor removes only what is still
// pending when its removal lands.
func TestTheFirstFactorsCheckLeavesAFactorConfirmedSinceItsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	owner, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	phone, err := m.svc.EnrolTOTP(ctx, owner, m.ann.ID, "phone", accounts.Password(password))
	if err != nil {
		t.Fatalf("ann's phone: %v", err)
	}
	codeOf := func(id string) string {
		t.Helper()
		factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		return codeIn(t, m, totp, factors, id)
	}
	phoneCode := codeOf(phone.Factor.ID)
	confirmed, checking, removing := false, false, false
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		switch {
		case name == "factors.confirm" && !confirmed:
			confirmed = true
		case name == "users.get" && confirmed && !checking:
			checking = true
			return memstore.Slow
		case (name == "factors.remove" || name == "factors.remove_pending") && checking && !removing: // conditioned or not
			removing = true
			return memstore.Slow
		}
		return memstore.None
	}
	var tablet accounts.Enrolment
	var enrolErr, tabletErr error
	meanwhile := 0
	m.store.Meanwhile = func() {
		meanwhile++
		switch meanwhile {
		case 1:
			current := password
			tablet, enrolErr = m.svc.EnrolTOTP(ctx, owner, m.ann.ID, "tablet",
				accounts.Proof{CurrentPassword: &current, Code: codeOf(phone.Factor.ID)})
		case 2:
			if enrolErr == nil {
				_, tabletErr = m.svc.ConfirmTOTP(ctx, owner, m.ann.ID, tablet.Factor.ID, codeOf(tablet.Factor.ID))
			}
		}
	}
	_, phoneErr := m.svc.ConfirmTOTP(ctx, owner, m.ann.ID, phone.Factor.ID, phoneCode)
	calm(m.store)
	if enrolErr != nil || meanwhile != 2 || tabletErr != nil {
		t.Fatalf("the tablet inside the phone's confirmation: begun %v, confirmed %v (%d slow calls): the schedule is not the one meant",
			enrolErr, tabletErr, meanwhile)
	}
	after, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	stands := func(id string) bool {
		return slices.ContainsFunc(after, func(f accounts.Factor) bool { return f.ID == id && f.Confirmed() })
	}
	t.Logf("the phone's confirmation answered %v", phoneErr)
	if !stands(tablet.Factor.ID) {
		t.Error("the tablet's confirmation answered success, and the phone's removal of the enrolments it read pending took the tablet away")
	}
	if phoneErr == nil && !stands(phone.Factor.ID) {
		t.Error("the phone's confirmation answered success, and the phone is gone")
	}
}
