package faults

import (
	"context"
	"testing"
)

// TestAGrantByAnAddressNeedsItVerified (attackers are users too;
// docs/design/account-security.md, whoever reads the address is trusted
// as its owner): a stranger expects ann@example.org to be made an admin
// and signs up with it first (as "ann"), the verification link going to
// the address's owner, who ignores it. The operator runs `api admin grant
// ann@example.org`, meaning whoever reads that address. The account
// holding it never proved it reads it, so the grant is refused, saying
// why, and the account stays a user (an admin's login is let through even
// under SHELF_REQUIRE_VERIFIED_EMAIL: the grant would also have opened a
// login the setting refused). Named by its username, the operator names
// the account itself and the grant goes on; a revoke by the address is
// never refused; once the address is verified, a grant by it goes on.
func TestAGrantByAnAddressNeedsItVerified(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false) // ann's address never verified
	ctx := context.Background()
	admin := func() bool {
		t.Helper()
		u, err := m.store.Users().GetSerial(ctx, m.ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u.IsAdmin()
	}
	if u, err := m.svc.SetAdmin(ctx, "ann@example.org", true); err == nil {
		t.Errorf("the grant by an address never verified answered %s (%s) is now an admin, want a refusal", u.Username, u.ID)
	}
	if admin() {
		t.Fatal("the account holding an address never verified was made an admin by the address")
	}
	if _, err := m.svc.SetAdmin(ctx, "ann", true); err != nil || !admin() {
		t.Fatalf("the grant by username: admin=%v (%v)", admin(), err)
	}
	if _, err := m.svc.SetAdmin(ctx, "ann@example.org", false); err != nil || admin() {
		t.Fatalf("the revoke by the address: admin=%v (%v)", admin(), err)
	}
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", "ann@example.org")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.SetAdmin(ctx, "ann@example.org", true); err != nil || !admin() {
		t.Fatalf("the grant by a verified address: admin=%v (%v)", admin(), err)
	}
}
