package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// handOverWorld is bob's club with cat a member and ann, made its manager
// by bob, its last manager once bob left: ann's deletion must hand it over.
func handOverWorld(t *testing.T) (l *lifeWorld, club groups.Group, cat domain.User) {
	t.Helper()
	l = newLifeWorld(t)
	ctx := context.Background()
	if err := l.signup("cat", "cat@example.org"); err != nil {
		t.Fatal(err)
	}
	cat = l.created[2]
	club = l.group(t, l.bob, "club")
	for _, m := range []struct {
		user domain.User
		role string
	}{{cat, groups.RoleMember}, {l.ann, groups.RoleManager}} {
		if _, _, err := l.grp.SetMember(ctx, as(l.bob), club.ID, m.user.ID, m.role); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.grp.RemoveMember(ctx, as(l.bob), club.ID, l.bob.ID); err != nil {
		t.Fatal(err)
	}
	return l, club, cat
}

// TestAHandOverNeverBringsBackAMemberWhoLeft: ann's deletion finds her the
// last manager of the club and reads its members (cat); the read is slow,
// and meanwhile cat leaves the club. The hand-over must not put cat back
// as the club's manager: a user who left a group is in it again only if
// she joins again. With nobody left but ann, the club is closed.
func TestAHandOverNeverBringsBackAMemberWhoLeft(t *testing.T) {
	t.Parallel()
	l, club, cat := handOverWorld(t)
	ctx := context.Background()
	armed, left := true, false
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if armed && name == "group_members.page" {
			armed = false
			return memstore.Slow
		}
		return memstore.None
	}
	l.store.Meanwhile = func() {
		if !left {
			left = true
			if err := l.grp.RemoveMember(ctx, as(cat), club.ID, cat.ID); err != nil {
				t.Errorf("cat leaving: %v", err)
			}
		}
	}
	err := l.deleteSelf(l.ann)
	for range 3 { // the slow read may have cost the job its lease: the next passes go on
		if err == nil {
			break
		}
		l.store.Advance(lease)
		_, err = l.life.WorkJobs(ctx)
	}
	if !left {
		t.Fatal("the hand-over read no members")
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Errorf("the account is %q, want deleted (%v)", st, err)
	}
	if role, err := l.grp.MemberRole(ctx, club.ID, cat.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("cat, who left the club, is in it again as its %s: the hand-over added her back", role)
	}
}
