package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// TestAnAdminsPasswordSessionCannotChangeOthersItemsWhereAFactorIsRequired:
// with SHELF_REQUIRE_ADMIN_FACTOR, RequireAdmin is the "gate of every
// admin power that acts" (docs/design/second-factors.md): a session
// whose login gave no second factor (a thief with the admin's password)
// gets no admin power, and only reading a library or an email is not
// gated. An admin's power over another's item (change it, share it,
// take it off someone, delete it) acts, so such a session must be
// refused it; it may still read the private item. The same admin from a
// session made with a code acts as before.
func TestAnAdminsPasswordSessionCannotChangeOthersItemsWhereAFactorIsRequired(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	if err := l.update("secret", string(library.VisibilityPrivate)); err != nil {
		t.Fatal(err)
	}
	l.rewire(func(_ *memstore.Store, c *accounts.Config) { c.RequireAdminFactor = true })
	grp := groups.New(groups.Config{ClaimLease: lease, Now: l.store.Now, Closings: l.store.Closings(), Changes: l.store.GroupChanges()}, l.svc, l.store.Users(),
		l.store.Claims(), groupRows(l.store), l.store.GroupMembers(), nopLog{})
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: l.store.Now}, l.svc, l.store.Users(),
		grp, l.store.Contents(), nopLog{})
	thief := l.admin // a session made with the password alone

	if _, err := lib.Get(ctx, thief, l.item); err != nil {
		t.Fatalf("reading the private item as an admin is not gated, but answered %v", err)
	}
	name := "the thief's"
	_, err := lib.Update(ctx, thief, l.item, library.Input{Name: &name})
	checkFactorRequired(t, "an update", err)
	_, err = lib.Share(ctx, thief, l.item, l.other.ID, library.RoleManager)
	checkFactorRequired(t, "a share", err)
	checkFactorRequired(t, "an unshare", lib.Unshare(ctx, thief, l.item, l.friend.ID))
	_, err = lib.MembersPage(ctx, thief, l.item, "", 10)
	checkFactorRequired(t, "the member list", err)
	checkFactorRequired(t, "a delete", lib.Delete(ctx, thief, l.item))
	if c, err := lib.Get(ctx, as(l.owner), l.item); err != nil || c.Name != "secret" {
		t.Fatalf("after the refusals the owner reads %+v, %v; want the item as it was", c, err)
	}
	if role := memberRole(l.store.ContentSnapshot(), l.item, l.other.ID); role != "" {
		t.Fatalf("the refused share left the other user the item's %s", role)
	}

	withCode := thief
	withCode.Session.MadeWith = []string{domain.MadePassword, domain.MadeTOTP}
	if _, err := lib.Update(ctx, withCode, l.item, library.Input{Name: &name}); err != nil {
		t.Fatalf("the admin's session made with a code: the update answered %v", err)
	}
}

func checkFactorRequired(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, accounts.ErrAdminFactorRequired) {
		t.Errorf("%s by an admin's session made without a second factor answered %v, want 403 admin_factor_required", what, err)
	}
}
