package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
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

// TestAnAdminsCancelOfAPendingEmailChangeIsAudited: ann asked for a new
// address and its link is on its way. Root, an admin, sends ann's
// current address back: that cancels her change (her link goes stale),
// an admin's change of another's email, which is why another admin may
// not make it. It took effect, so it is in ann's audit once (S6), with
// the address ann asked for and the one she keeps; it was written
// nowhere, as if an admin had done nothing.
func TestAnAdminsCancelOfAPendingEmailChangeIsAudited(t *testing.T) {
	t.Parallel()
	m := emailChangeWorld(t, true)
	m.rewire(func(st *memstore.Store, c *accounts.Config) { c.Audit = st.AccountAudit() })
	ctx := context.Background()
	if err := m.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	root := domain.Principal{UserID: m.created[1].ID}
	home := annHome
	if _, err := m.svc.UpdateUser(ctx, root, m.ann.ID, accounts.UpdateInput{Email: &home}); err != nil {
		t.Fatal(err)
	}
	if got := m.account(t, "ann"); got.PendingEmail != "" {
		t.Fatalf("after root sent ann's address back her change pending is %q, want none", got.PendingEmail)
	}
	page, err := m.svc.Audit(ctx, root, m.ann.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var changed []domain.AuditEntry
	for _, e := range page.Items {
		if e.Action == domain.AuditEmailChanged {
			changed = append(changed, e)
		}
	}
	if len(changed) != 1 || changed[0].Actor != root.UserID || changed[0].Old != annNext || changed[0].New != annHome {
		t.Fatalf("ann's audit after root cancelled her change holds %+v, want one email_changed by root from %s to %s",
			changed, annNext, annHome)
	}
}
