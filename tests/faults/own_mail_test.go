package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
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

// TestTheOwnersVerificationWithHerSessionIsNotHeldBack: annHome is not
// verified, and a stranger sends the hour's five resets for it. Ann,
// signed in, asks for a new verification link with her session. Before,
// her request spent the budget the stranger had used up and was held
// back, every hour he kept asking, so she could never verify. A
// verification asked with a session of the account that has the address
// now spends the account's own budget; it takes all but the last of it,
// as verifications do of anyone's. The same holds for the address a
// change of hers asks for, whose budget anyone may spend by asking for
// its verification.
func TestTheOwnersVerificationWithHerSessionIsNotHeldBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome not verified
	limitMail(m, 5)
	strangerSpendsTheHour(t, m, 5)
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	before := m.box.sentTo("verify", annHome)
	for range 5 {
		if err := m.svc.RequestVerification(ctx, p, annHome); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.box.sentTo("verify", annHome) - before; got != 4 {
		t.Fatalf("ann's five requests with her session mailed %d links after a stranger's resets, want 4 (all but the last of her own budget)", got)
	}
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annHome)); err != nil {
		t.Fatalf("the link her session asked for: %v", err)
	}

	// The address a change asks for: a stranger's requests for its
	// verification spend anyone's budget of it; ann's, with her session,
	// her own.
	c := emailChangeWorld(t, false)
	limitMail(c, 5)
	if err := changeEmail(c, annNext); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := c.svc.RequestVerification(ctx, domain.Principal{}, annNext); err != nil {
			t.Fatal(err)
		}
	}
	spent := c.box.sentTo("verify", annNext)
	q, err := c.svc.Authenticate(ctx, c.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.svc.RequestVerification(ctx, q, annNext); err != nil {
		t.Fatal(err)
	}
	if c.box.sentTo("verify", annNext) != spent+1 {
		t.Errorf("ann's request with her session for the address she asks for was held back by a stranger's requests (%d links sent before)", spent)
	}
}

// TestAVerificationWithoutTheOwnersSessionIsHeldBack: with anyone's
// budget of annHome spent by a stranger's resets, a request for its
// verification link without a session, or with another account's
// session, spends that budget as before and is held back; both answer
// as ann's own does, so the answer tells nothing of whose the address
// is.
func TestAVerificationWithoutTheOwnersSessionIsHeldBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome not verified
	if err := m.signup("bob", "bob@example.org"); err != nil {
		t.Fatal(err)
	}
	r, err := m.svc.Login(ctx, "bob", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := m.svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	limitMail(m, 5)
	strangerSpendsTheHour(t, m, 5)
	before := m.box.sentTo("verify", annHome)
	for _, caller := range []domain.Principal{{}, bob} {
		if err := m.svc.RequestVerification(ctx, caller, annHome); err != nil {
			t.Fatalf("a request as %q: %v", caller.UserID, err)
		}
	}
	if got := m.box.sentTo("verify", annHome) - before; got != 0 {
		t.Errorf("%d links went out past anyone's spent budget to requests without ann's session", got)
	}
}
