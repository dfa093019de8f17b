package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestANoticeGoesToTheAddressTheChangeIsWrittenOver: ann moved from
// annHome to annNext last week (annHome still held for that change's
// revert link) and now asks for annOther. A thief holding the password
// asks for his own address from a new login; his request mails its
// notice to annNext and then its compare-and-set is slow, and meanwhile
// ann confirms annOther: annNext is replaced and, the older annHome
// being held still, no longer held. The thief's next round writes his
// change over annOther, and mailed no notice there: "noticed" was
// carried from the round that read annNext. Ann's only notice is at an
// address the account neither has nor holds, its link stale, and
// nothing ever reached annOther: a change written with no notice to
// the address it is written over. A round whose account has another
// address than the one its notice went to mails a notice there.
func TestANoticeGoesToTheAddressTheChangeIsWrittenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	moveAnn(t, m, annNext)
	if err := changeEmailFrom(m, annOther); err != nil {
		t.Fatal(err)
	}
	thief, err := newSession(m)
	if err != nil {
		t.Fatal(err)
	}
	slowed := false
	m.store.FaultAt = func(_ int, call string) memstore.Fault {
		if call == "users.update" && !slowed {
			slowed = true
			return memstore.Slow
		}
		return memstore.None
	}
	confirmed := errors.New("did not run")
	m.store.Meanwhile = func() {
		m.store.Meanwhile = nil
		confirmed = m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annOther))
	}
	email, current := thiefsAddress, password
	_, err = m.svc.UpdateUser(ctx, thief, m.ann.ID, accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: &current}})
	m.store.FaultAt, m.store.Meanwhile = nil, nil
	if err != nil || !slowed || confirmed != nil {
		t.Fatalf("the thief's change: %v (slowed %v); ann's confirmation meanwhile: %v", err, slowed, confirmed)
	}
	if u := m.account(t, "after the thief's change"); u.EmailKey != annOther || u.PendingEmailKey != thiefsAddress {
		t.Fatalf("after the thief's change the account is at %q asking for %q", u.Email, u.PendingEmail)
	}
	link := m.box.tokenTo("revert-email", annOther)
	if link == "" {
		t.Fatalf("the thief's change was written over %s with no notice mailed there", annOther)
	}
	if err := m.svc.RevertEmailChange(ctx, link); err != nil {
		t.Fatalf("the notice's link at %s: %v", annOther, err)
	}
	if u := m.account(t, "after ann's revert"); u.EmailKey != annOther || u.PendingEmailKey != "" {
		t.Errorf("after ann's revert the account is at %q asking for %q", u.Email, u.PendingEmail)
	}
}
