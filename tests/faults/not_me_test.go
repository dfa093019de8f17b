package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// The "not me" link of an email change (docs/design/email-change.md): the
// reader of an address an account asks for ends the change, frees the
// address at once, and bars the account from asking for it again.

const thiefsAddress = "thief@example.com"

// refuseAddress follows the "not me" link of the last mail to address.
func refuseAddress(m *mailWorld, address string) error {
	return m.svc.RefuseEmailChange(context.Background(), m.box.tokenTo("refuse-email", address))
}

// checkAddressRefused: asking for address as ann answers ErrAddressRefused
// (409 naming email), mails nothing and writes nothing.
func checkAddressRefused(t *testing.T, name string, m *mailWorld, ask func(*mailWorld, string) error, address string) {
	t.Helper()
	before, mails := m.account(t, name), m.box.count()
	err := ask(m, address)
	var de *domain.Error
	if !errors.Is(err, accounts.ErrAddressRefused) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "email" {
		t.Fatalf("%s: asking again for %s answered %v, want 409 address_refused naming email", name, address, err)
	}
	if after := m.account(t, name); after.Version != before.Version || m.box.count() != mails {
		t.Fatalf("%s: the refused change wrote (version %d -> %d) or mailed (%d -> %d)", name, before.Version, after.Version, mails, m.box.count())
	}
}

// TestNotMeEndsTheChangeAndFreesTheAddressAtOnce: ann asks for annNext,
// which is a stranger's. Until now the mail to annNext carried only the
// verification link: its reader could free the address only by taking it
// (confirming) and then recovering ann's account, and ann could keep it
// from everyone by asking again each day. The mail now carries a "not
// me" link: following it ends the change (its verification link stale),
// gives annNext back at once (the stranger signs up with it without
// waiting for the hold's end), ends no session of ann's, and works once.
func TestNotMeEndsTheChangeAndFreesTheAddressAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, true)
	verify, refuse := m.box.tokenTo("verify", annNext), m.box.tokenTo("refuse-email", annNext)
	if refuse == "" {
		t.Fatal("the verification mail to the address asked for carries no \"not me\" link")
	}
	if err := m.svc.RefuseEmailChange(ctx, refuse); err != nil {
		t.Fatalf("the not-me link: %v", err)
	}
	if u := m.account(t, "after the not-me link"); u.PendingEmailKey != "" || u.EmailKey != annHome {
		t.Fatalf("after the not-me link ann's account is at %s asking for %q", u.Email, u.PendingEmail)
	}
	if err := m.svc.ConfirmEmail(ctx, verify); !errors.Is(err, accounts.ErrTokenStale) {
		t.Errorf("the refused change's verification link answered %v, want stale", err)
	}
	if err := m.svc.RefuseEmailChange(ctx, refuse); !errors.Is(err, accounts.ErrTokenUsed) {
		t.Errorf("the not-me link again answered %v, want used", err)
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err != nil {
		t.Errorf("the not-me link ended the session that asked: %v", err)
	}
	if err := m.signup("bob", annNext); err != nil {
		t.Fatalf("the refused address is not free at once: %v", err)
	}
	checkHeld(t, "after the not-me link", m.world)
}

// TestAnAddressRefusedCannotBeAskedForAgain: once annNext's reader said
// "not me", ann may not ask for it again, neither at once nor by way of
// another address and back (which used to start its hold anew), nor may
// an admin ask for it on her behalf: 409 naming email, with no notice
// mailed and nothing written. Other addresses she may still ask for.
func TestAnAddressRefusedCannotBeAskedForAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, true)
	if err := refuseAddress(m, annNext); err != nil {
		t.Fatal(err)
	}
	checkAddressRefused(t, "at once", m, changeEmail, annNext)
	if err := changeEmail(m, annOther); err != nil {
		t.Fatalf("another address after a refusal: %v", err)
	}
	checkAddressRefused(t, "by way of another address", m, changeEmail, annNext)
	if err := m.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	root := domain.Principal{UserID: m.created[1].ID}
	byAdmin := func(m *mailWorld, email string) error {
		_, err := m.svc.UpdateUser(ctx, root, m.ann.ID, accounts.UpdateInput{Email: &email})
		return err
	}
	checkAddressRefused(t, "by an admin", m, byAdmin, annNext)
	if u := m.account(t, "at the end"); u.PendingEmailKey != annOther {
		t.Errorf("the refused requests touched ann's change to %s: %q pending", annOther, u.PendingEmail)
	}
}

// TestAThiefsNotMeBarsOnlyHisOwnAddress: a thief holding ann's session
// and password asks for his own address, then follows its "not me" link,
// hoping to turn the bar against ann. It bars her account from his
// address alone: ann's revert link still recovers the account, and she
// may still ask for an address of her own and confirm it.
func TestAThiefsNotMeBarsOnlyHisOwnAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	if err := changeEmail(m, thiefsAddress); err != nil {
		t.Fatal(err)
	}
	if err := refuseAddress(m, thiefsAddress); err != nil {
		t.Fatal(err)
	}
	if u := m.account(t, "after the thief's not-me"); len(u.RefusedEmailKeys) != 1 || u.RefusedEmailKeys[0] != thiefsAddress {
		t.Fatalf("the thief's not-me barred %v, want only his address", u.RefusedEmailKeys)
	}
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatalf("ann's revert link after the thief's not-me: %v", err)
	}
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
		t.Fatalf("the revert's reset link: %v", err)
	}
	r, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	email, current := annNext, newPassword
	p, err := m.svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.UpdateUser(ctx, p, m.ann.ID, accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
		t.Fatalf("ann asking for an address of her own after the thief's not-me: %v", err)
	}
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annNext)); err != nil {
		t.Fatalf("ann confirming it: %v", err)
	}
}

// TestANotMeLinkEndsWithItsChange: the link works as long as the change
// it refuses could (its verification link's TTL from the request), not
// for the TTL from its own mailing: a link mailed again late in the
// change's life ends with the change.
func TestANotMeLinkEndsWithItsChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, true)
	m.store.Advance(23 * time.Hour)
	if err := m.svc.RequestVerification(ctx, domain.Principal{}, annNext); err != nil {
		t.Fatal(err)
	}
	late := m.box.tokenTo("refuse-email", annNext)
	m.store.Advance(time.Hour)
	if err := m.svc.RefuseEmailChange(ctx, late); !errors.Is(err, accounts.ErrTokenExpired) {
		t.Fatalf("a not-me link past its change's end answered %v, want expired", err)
	}
}

// TestADeletionErasesTheRefusedAddresses: the addresses whose readers
// refused an account are theirs, not the account's: its deletion erases
// them with the rest of its personal data, or its tombstone would keep
// strangers' addresses for good.
func TestADeletionErasesTheRefusedAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLifeWorld(t)
	u, err := l.store.Users().Get(ctx, l.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	// As a "not me" link leaves it.
	u.RefusedEmailKeys, u.Version = []string{thiefsAddress}, u.Version+1
	if ok, err := l.store.Users().Update(ctx, u); err != nil || !ok {
		t.Fatalf("writing ann's refusal: %v %v", ok, err)
	}
	if err := l.deleteSelf(l.ann); err != nil {
		t.Fatal(err)
	}
	u, err = l.store.Users().Get(ctx, l.ann.ID)
	if err != nil || u.Status != domain.StatusDeleted || len(u.RefusedEmailKeys) != 0 {
		t.Fatalf("ann's deleted row: %s, refused %v (%v), want deleted with no address", u.Status, u.RefusedEmailKeys, err)
	}
}
