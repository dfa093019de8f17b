package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/tests/memstore"
)

// ownersProof is the proof of owning an account of these worlds: the
// password every signup of theirs chose (none has a second factor).
func ownersProof() accounts.Proof {
	current := password
	return accounts.Proof{CurrentPassword: &current}
}

// TestAStolenSessionAloneCannotCloseTheGroup (attackers are users too):
// whoever holds the owner's session, and not her password, closed her
// group: every membership ended, every item the group was the last
// manager of went, and its name was free for him to take. A manager's
// closing now proves owning the account as a deletion of it does (the
// current password, and a factor's proof where it has one); without it
// nothing changes, and with a wrong one it is refused 401. An admin
// closes by role, and a repeat of a closing under way asks for nothing.
func TestAStolenSessionAloneCannotCloseTheGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCloseWorld(t)
	wrong := "not her password"
	for _, try := range []struct {
		name  string
		proof accounts.Proof
		want  error
	}{
		{"no password", accounts.Proof{}, lifecycle.ErrClosingProofRequired},
		{"a wrong password", accounts.Proof{CurrentPassword: &wrong}, accounts.ErrWrongCurrentPassword},
	} {
		if _, err := c.life.CloseGroup(ctx, as(c.owner), c.group, try.proof); !errors.Is(err, try.want) {
			t.Errorf("the owner's session closing with %s: %v, want %v", try.name, err, try.want)
		}
		if gr, err := c.grp.GetSerial(ctx, c.group); err != nil || gr.Status != domain.StatusActive {
			t.Fatalf("after a closing with %s the group is %q (%v), want active", try.name, gr.Status, err)
		}
	}
	job, err := c.life.CloseGroup(ctx, as(c.owner), c.group, ownersProof())
	if err != nil {
		t.Fatalf("the owner's closing with her password: %v", err)
	}
	again, err := c.life.CloseGroup(ctx, as(c.owner), c.group, accounts.Proof{})
	if err != nil || again.ID != job.ID {
		t.Errorf("a repeat of her closing under way without a proof: %+v %v, want its job %s", again, err, job.ID)
	}

	other := newCloseWorld(t)
	if _, err := other.life.CloseGroup(ctx, as(other.admin), other.group, accounts.Proof{}); err != nil {
		t.Errorf("an admin's closing by role: %v", err)
	}
	if gr, err := other.grp.GetSerial(ctx, other.group); err != nil || !gr.ClosingOrClosed() {
		t.Errorf("after the admin's closing the group is %q (%v)", gr.Status, err)
	}
}

// TestAnAdminWhoManagesTheGroupClosesItWithHerPassword: with
// SHELF_REQUIRE_ADMIN_FACTOR, an admin whose session was made with the
// password alone has no admin power, but she still manages her own
// group: its closing was refused 403 admin_factor_required whatever
// proof she gave, since the admin's check answered before the manager's
// proof was asked. The gate of the admin's power refuses the role, not
// the manager: she closes as any manager does, with her password.
func TestAnAdminWhoManagesTheGroupClosesItWithHerPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCloseWorld(t)
	if err := c.set(c.owner, c.admin, groups.RoleManager); err != nil {
		t.Fatal(err)
	}
	c.rewire(func(_ *memstore.Store, cfg *accounts.Config) { cfg.RequireAdminFactor = true })
	grp := groups.New(groups.Config{ClaimLease: lease, Now: c.store.Now, Closings: c.store.Closings(), Changes: c.store.GroupChanges()}, c.svc, c.store.Users(),
		c.store.Claims(), groupRows(c.store), c.store.GroupMembers(), nopLog{})
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: c.store.Now, Background: atOnce},
		c.svc, c.store.Users(), grp, c.store.Contents(), nopLog{})
	life := newLifecycle(c.world, grp, lib)

	if _, err := life.CloseGroup(ctx, as(c.admin), c.group, accounts.Proof{}); !errors.Is(err, lifecycle.ErrClosingProofRequired) {
		t.Errorf("the admin's password session closing her group without a proof: %v, want %v", err, lifecycle.ErrClosingProofRequired)
	}
	if _, err := life.CloseGroup(ctx, as(c.admin), c.group, ownersProof()); err != nil {
		t.Fatalf("the admin's password session closing her group with her password: %v", err)
	}
	if gr, err := grp.GetSerial(ctx, c.group); err != nil || !gr.ClosingOrClosed() {
		t.Errorf("after her closing the group is %q (%v)", gr.Status, err)
	}
}
