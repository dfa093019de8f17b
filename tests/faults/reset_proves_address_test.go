package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAResetProvesTheAddressSoAStrangersResetsCannotKeepTheOwnerOut:
// under SHELF_REQUIRE_VERIFIED_EMAIL ann signs up and has not verified
// her address yet. A stranger asks for the address's resets until the
// hour's mails anyone may cause are spent, so her own request for a
// verification link (she has no session to ask with) is held back. She
// follows one of the stranger's reset links: it was mailed to her
// address, and following it proves she reads it as a verification link
// would. Before, the reset set her password and answered 204 with no
// session (the login refuses an address not verified), and her account
// stayed unverified, every login refused email_not_verified, for as
// long as the stranger kept asking each hour. The reset now marks the
// address it was mailed to verified in its compare-and-set, and answers
// with a session.
func TestAResetProvesTheAddressSoAStrangersResetsCannotKeepTheOwnerOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, b, _ := newMailService(t, true, func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts()}
		c.Mail.PerAddress = 5
	})
	ann := signupMailed(t, svc, "ann") // one mail of the hour: her verification link
	for range 5 {
		if err := svc.RequestPasswordReset(ctx, "ann@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	resets := b.tokens("reset")
	if len(resets) != 4 {
		t.Fatalf("the stranger's resets mailed %d links, want the hour's last 4", len(resets))
	}
	before := b.count()
	if err := svc.RequestVerification(ctx, domain.Principal{}, "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	if b.count() != before {
		t.Fatal("the verification ann asked for without a session was sent past the hour's limit")
	}
	res, err := svc.ResetPassword(ctx, resets[0], "ann's own new passphrase", accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Token == "" {
		t.Error("the reset from ann's own mailbox answered no session: her address still reads as not verified")
	}
	got, err := st.Users().Get(ctx, ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.EmailVerifiedAt.IsZero() {
		t.Error("a reset followed from the account's address left the address not verified")
	}
	st.Advance(time.Minute)
	if _, err := svc.Login(ctx, "ann", "ann's own new passphrase", accounts.Client{}); err != nil {
		t.Errorf("ann's login after her reset: %v", err)
	}
}
