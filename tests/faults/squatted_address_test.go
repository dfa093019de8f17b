package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAStrangersFactorNeverLocksAnAddressFromItsOwner: a stranger signs
// up with an address that is not theirs (here the account "ann" of
// newMailWorld, its address ann@example.org never verified: the link went
// to the address's owner, who ignored it), then adds an authenticator.
// Its notice goes to that address too, from an account its owner never
// made; she ignores it as well, and its link ends with the revert TTL.
// Later she signs up with her address: 409, the stranger's account has
// it. A reset link is mailed to her address, and its reset answers a
// challenge for the stranger's authenticator, never a session. The
// address is kept from its owner for good: she can neither sign up with
// it nor get into the account holding it (nor delete it, nor change its
// address), though whoever reads the address is trusted as the owner,
// verified or not (docs/design/account-security.md), and a defence the
// attacker sets against the owner is a hole.
func TestAStrangersFactorNeverLocksAnAddressFromItsOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // the stranger's account, at the owner's address, never verified
	totp := withFactors(t, m, nil)
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	e, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "stranger's", accounts.Password(password))
	if err != nil {
		return // no factor on an address its account never proved: the owner's reset gets her in
	}
	thiefConfirms(t, m, totp, p, e.Factor.ID)
	if m.box.tokenTo("revert-factor", annHome) == "" {
		t.Fatal("the factor's notice did not go to the address")
	}
	m.store.Advance(7*24*time.Hour + 2*time.Hour) // past the notice's link

	owner := newProbe(m.world)
	if err := owner.signup("realann", annHome); err == nil {
		return // the address is hers again
	}
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	r, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	switch {
	case err != nil:
		t.Errorf("the owner's reset: %v", err)
	case r.Token == "":
		t.Errorf("the owner of %s can neither sign up with it (409) nor get into the account holding it: her reset answers a challenge for the stranger's factor (%v)", annHome, r.Methods)
	}
}

// TestAnUnverifiedAccountEnrolsNoFactor: while ann's address is not
// verified, an authenticator's and a passkey's enrolment are refused, 403
// email_not_verified, and write nothing (no pending factor, no mail);
// once she follows her verification link, the same enrolments begin.
func TestAnUnverifiedAccountEnrolsNoFactor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false)
	withFactors(t, m, func(_ *memstore.Store, c *accounts.Config) { c.Passkeys = newPasskeys(t) })
	p := domain.Principal{UserID: m.ann.ID}
	enrolments := map[string]func() error{
		"authenticator": func() error {
			_, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "phone", accounts.Password(password))
			return err
		},
		"passkey": func() error {
			_, err := m.svc.EnrolPasskey(ctx, p, m.ann.ID, "laptop", accounts.Password(password))
			return err
		},
	}
	mails := m.box.count()
	for name, enrol := range enrolments {
		if err := enrol(); codeOf(err) != "email_not_verified" || !errors.Is(err, domain.ErrForbidden) {
			t.Errorf("the %s's enrolment on an address not verified answered %v; want 403 email_not_verified", name, err)
		}
	}
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil || len(factors) != 0 {
		t.Errorf("after the refusals the account has factors %+v (%v); want none", factors, err)
	}
	if n := m.box.count(); n != mails {
		t.Errorf("the refusals mailed %d times", n-mails)
	}
	m.verify(t)
	for name, enrol := range enrolments {
		if err := enrol(); err != nil {
			t.Errorf("the %s's enrolment once the address is verified: %v", name, err)
		}
	}
}
