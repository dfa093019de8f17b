package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestASuspendedMembersChangeInFlightDoesNotLand: the member's rename,
// or his change of display name, is let through before an admin's
// suspension (its principal authenticated) and reads the account after
// it. The suspension ended his session in its write (S3): the change,
// written over the suspended row, must be refused as his next request
// would be, not land on the account of a user who can no longer act.
func TestASuspendedMembersChangeInFlightDoesNotLand(t *testing.T) {
	t.Parallel()
	username, displayName, current := "member2", "Someone Else", password
	changes := map[string]accounts.UpdateInput{
		"rename":              {Username: &username, Proof: accounts.Proof{CurrentPassword: &current}},
		"display name change": {DisplayName: &displayName},
	}
	for name, change := range changes {
		m := newModWorld(t)
		ctx := context.Background()
		p := m.signedIn(t, "member")
		if err := m.suspend(0); err != nil {
			t.Fatal(err)
		}
		_, err := m.svc.UpdateUser(ctx, p, m.member.ID, change)
		if !errors.Is(err, domain.ErrNoSession) {
			t.Errorf("%s: the suspended member's change in flight answered %v, want ErrNoSession", name, err)
		}
		u, err := m.store.Users().GetSerial(ctx, m.member.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Username != "member" || u.DisplayName != m.member.DisplayName {
			t.Errorf("%s: the suspended member's change in flight landed: username %q, display name %q", name, u.Username, u.DisplayName)
		}
	}
}

// TestASuspendedMembersDeletionInFlightDoesNotLand: the member's own
// deletion, let through before an admin's suspension, reads the account
// after it. His session ended in the suspension's write: the deletion
// must not begin (it would erase the suspension an admin just decided,
// and the items it was about), as his next request would not.
func TestASuspendedMembersDeletionInFlightDoesNotLand(t *testing.T) {
	t.Parallel()
	m := newModWorld(t).withDeletion()
	ctx := context.Background()
	p := m.signedIn(t, "member")
	if err := m.suspend(0); err != nil {
		t.Fatal(err)
	}
	current := password
	_, err := m.life.DeleteUser(ctx, p, m.member.ID, accounts.Proof{CurrentPassword: &current})
	if !errors.Is(err, domain.ErrNoSession) {
		t.Errorf("the suspended member's deletion in flight answered %v, want ErrNoSession", err)
	}
	u, err := m.store.Users().GetSerial(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status != domain.StatusSuspended {
		t.Errorf("the suspended member's deletion in flight landed: the account is %s", u.Status)
	}
}
