package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAnAdminCannotCancelAnotherAdminsEmailChange: admins act by role
// on other accounts, "never on another admin's username, email or
// deletion" (403 ErrOtherAdmin, docs/design/reauthentication.md). Ann,
// an admin, has asked for a new address and its link is on its way. Root,
// another admin (or whoever holds his token), sends ann's current
// address back: for ann herself that cancels her change, and it must not
// for another admin, whose change of ann's email it is: refused 403, and
// ann's change still pending, so her link still confirms it.
func TestAnAdminCannotCancelAnotherAdminsEmailChange(t *testing.T) {
	t.Parallel()
	m := emailChangeWorld(t, true)
	ctx := context.Background()
	if err := m.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	for _, login := range []string{"ann", "root"} {
		if _, err := m.svc.SetAdmin(ctx, login, true); err != nil {
			t.Fatal(err)
		}
	}
	root := domain.Principal{UserID: m.created[1].ID}
	home := annHome
	_, err := m.svc.UpdateUser(ctx, root, m.ann.ID, accounts.UpdateInput{Email: &home})
	if !errors.Is(err, accounts.ErrOtherAdmin) {
		t.Errorf("another admin sending ann's current address answered %v, want 403 (ErrOtherAdmin)", err)
	}
	if got := m.account(t, "ann"); got.PendingEmail != annNext {
		t.Fatalf("after another admin's request ann's change pending is %q, want %q", got.PendingEmail, annNext)
	}
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annNext)); err != nil {
		t.Fatalf("ann's link to her new address: %v", err)
	}
	if got := m.account(t, "ann"); got.Email != annNext {
		t.Fatalf("ann's email after her link: %q, want %q", got.Email, annNext)
	}
}
