package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/lifecycle"
)

// TestAStolenSessionAloneCannotMakeAManager (attackers are users too):
// whoever held a manager's session, and not her password, made another
// account (his own) a manager of her group, and that account, with its
// own password, removed her and closed the group: the closing's proof
// stopped the stolen session, not the manager it made. A change that
// makes someone a manager, an add as manager or a promotion, now asks
// the caller's proof as a closing does; without it, or with a wrong one,
// nothing changes. Adding a plain member, a demotion and a repeat of a
// grant that landed ask for nothing.
func TestAStolenSessionAloneCannotMakeAManager(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCloseWorld(t)
	wrong := "not her password"
	roleOf := func(u domain.User) string {
		t.Helper()
		role, err := c.grp.MemberRole(ctx, c.group, u.ID)
		if errors.Is(err, domain.ErrNotFound) {
			return "none"
		}
		if err != nil {
			t.Fatal(err)
		}
		return role
	}
	for _, try := range []struct {
		name  string
		proof accounts.Proof
		want  error
	}{
		{"no password", accounts.Proof{}, lifecycle.ErrGrantProofRequired},
		{"a wrong password", accounts.Proof{CurrentPassword: &wrong}, accounts.ErrWrongCurrentPassword},
	} {
		if _, _, err := c.life.SetMember(ctx, as(c.owner), c.group, c.friend.ID, groups.RoleManager, try.proof); !errors.Is(err, try.want) {
			t.Errorf("promoting a member with %s: %v, want %v", try.name, err, try.want)
		}
		if _, _, err := c.life.SetMember(ctx, as(c.owner), c.group, c.other.ID, groups.RoleManager, try.proof); !errors.Is(err, try.want) {
			t.Errorf("adding a manager with %s: %v, want %v", try.name, err, try.want)
		}
		if got := roleOf(c.friend) + " " + roleOf(c.other); got != "member none" {
			t.Fatalf("after the grants with %s the member and the stranger are %q, want \"member none\"", try.name, got)
		}
	}
	if gr, err := c.grp.GetSerial(ctx, c.group); err != nil || gr.MemberCount != 2 || gr.ManagerCount != 1 || gr.Pending != nil {
		t.Fatalf("after the refused grants the group counts %d members, %d managers, pending %+v (%v), want 2, 1, none",
			gr.MemberCount, gr.ManagerCount, gr.Pending, err)
	}

	if _, added, err := c.life.SetMember(ctx, as(c.owner), c.group, c.other.ID, groups.RoleMember, accounts.Proof{}); err != nil || !added {
		t.Fatalf("adding a plain member without a proof: added %v, %v", added, err)
	}
	if _, _, err := c.life.SetMember(ctx, as(c.owner), c.group, c.friend.ID, groups.RoleManager, ownersProof()); err != nil {
		t.Fatalf("promoting a member with her password: %v", err)
	}
	if _, _, err := c.life.SetMember(ctx, as(c.owner), c.group, c.friend.ID, groups.RoleManager, accounts.Proof{}); err != nil {
		t.Errorf("a repeat of the promotion that landed, without a proof: %v, want nothing asked", err)
	}
	if _, _, err := c.life.SetMember(ctx, as(c.owner), c.group, c.friend.ID, groups.RoleMember, accounts.Proof{}); err != nil {
		t.Errorf("a demotion without a proof: %v", err)
	}
	if got := roleOf(c.friend) + " " + roleOf(c.other); got != "member member" {
		t.Errorf("at the end the two are %q, want \"member member\"", got)
	}
}

// TestAGrantAsksItsProofOnceWhateverRoundsItLoses: a grant whose
// compare-and-set loses to another change decides again on the group as
// it then is, and must not ask the proof again: a second ask would count
// a second try against the password's throttle, and refuse a code from
// an authenticator app, used by the first (invalid_code), so an owner
// with a second factor could not make a manager of a busy group.
func TestAGrantAsksItsProofOnceWhateverRoundsItLoses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCloseWorld(t)
	asked := 0
	proof := func(context.Context) error { asked++; return nil }
	var meanwhile error
	slowOnce(c.store, "groups.update", 0, func() {
		meanwhile = c.set(c.owner, c.other, groups.RoleMember)
	})
	_, _, err := c.grp.SetMember(ctx, as(c.owner), c.group, c.friend.ID, groups.RoleManager, proof)
	calm(c.store)
	if meanwhile != nil || err != nil {
		t.Fatalf("the grant: %v, with another add inside its compare-and-set: %v", err, meanwhile)
	}
	gr, err := c.grp.GetSerial(ctx, c.group)
	if err != nil || gr.MemberCount != 3 || gr.ManagerCount != 2 || gr.Pending != nil {
		t.Fatalf("the group counts %d members, %d managers, pending %+v (%v), want 3, 2, none", gr.MemberCount, gr.ManagerCount, gr.Pending, err)
	}
	if asked != 1 {
		t.Errorf("the proof was asked %d times, want once", asked)
	}
}
