package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// strangerSpendsTheHour sends the hour's password resets for annHome, as
// anyone may (an address is all a reset request takes), from m's
// service: the address's budget that anyone's requests spend is used
// up.
func strangerSpendsTheHour(t *testing.T, m *mailWorld, perHour int) {
	t.Helper()
	before := m.box.sentTo("reset", annHome)
	for range perHour + 1 {
		if err := m.svc.RequestPasswordReset(context.Background(), annHome); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.box.sentTo("reset", annHome) - before; got != perHour {
		t.Fatalf("the stranger's %d resets mailed %d links, want the hour's %d", perHour+1, got, perHour)
	}
}

// TestAStrangersResetsDoNotHoldBackTheOwnersNotices: annHome is not
// verified. A stranger sends the hour's five password resets for it,
// from anywhere, then ann (her session and her password) asks for
// another address and changes her password. Before, every mail to the
// address spent one budget: the change's notice was held back and the
// change refused 429 too_many_mails, and the password change's notice
// held back, for as long as the stranger kept asking each hour. The
// notices her own authenticated actions cause now spend a budget of
// their own, which no request naming the address alone can spend.
func TestAStrangersResetsDoNotHoldBackTheOwnersNotices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome not verified
	limitMail(m, 5)
	strangerSpendsTheHour(t, m, 5)
	if err := changeEmail(m, annNext); err != nil {
		t.Fatalf("ann's change of address after a stranger's resets: %v", err)
	}
	if got := m.box.sentTo("revert-email", annHome); got != 1 {
		t.Errorf("%d notices of ann's change reached her address, want 1", got)
	}
	if u := m.account(t, "after the change"); u.PendingEmailKey != annNext {
		t.Errorf("ann's change is not pending: %+v", u)
	}
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	before := m.box.sentTo("reset", annHome)
	if err := m.svc.ChangePassword(ctx, p, m.ann.ID, accounts.Password(password), "ann's next passphrase"); err != nil {
		t.Fatal(err)
	}
	if m.box.sentTo("reset", annHome) != before+1 {
		t.Error("the notice of ann's password change was held back by the stranger's resets")
	}
}

// TestTheOwnersOwnMailsAreBounded: the budget of the account's own
// mails is itself the hour's limit. With anyone's budget spent by a
// stranger's resets, ann asks for an address and cancels, over and
// over: past five notices her change is refused (429 too_many_mails,
// nothing written), as it was with one budget; an hour later it goes
// through.
func TestTheOwnersOwnMailsAreBounded(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false) // annHome not verified
	limitMail(m, 5)
	strangerSpendsTheHour(t, m, 5)
	refused := false
	for i := range 10 {
		if err := changeEmail(m, annNext); err != nil {
			if codeOf(err) != "too_many_mails" {
				t.Fatalf("change %d: %v", i, err)
			}
			refused = true
			break
		}
		if err := changeEmail(m, annHome); err != nil { // cancels
			t.Fatal(err)
		}
	}
	if !refused {
		t.Fatal("ann's changes were never refused: her own mails have no bound")
	}
	if got := m.box.sentTo("revert-email", annHome); got != 5 {
		t.Errorf("%d notices to the unverified address in the hour, want its 5", got)
	}
	if u := m.account(t, "after the refusal"); u.PendingEmailKey != "" || u.EmailKey != annHome {
		t.Errorf("a refused change wrote: %+v", u)
	}
	m.store.Advance(time.Hour)
	if err := changeEmailFrom(m, annNext); err != nil {
		t.Errorf("an hour later: %v", err)
	}
}
