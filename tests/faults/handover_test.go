package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/moderation"
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
		if _, _, err := l.grp.SetMember(ctx, as(l.bob), club.ID, m.user.ID, m.role, nil); err != nil {
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

// TestADeletionNeverEndsWithItsUserStillInAGroup: ann's deletion finds her
// the last manager of the club, whose members are cat, dan and eve. Each
// time it reads the members (slowly), the first of them leaves meanwhile,
// so each hand-over is refused, three rounds running. The deletion may
// fail its run and go on in the next, but it must never finish with ann
// still in the club: a deleted account would be a group's one manager,
// its member rows left for good.
func TestADeletionNeverEndsWithItsUserStillInAGroup(t *testing.T) {
	t.Parallel()
	l, club, _ := handOverWorld(t)
	ctx := context.Background()
	for _, n := range []string{"dan", "eve"} {
		if err := l.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := l.grp.SetMember(ctx, as(l.ann), club.ID, l.created[len(l.created)-1].ID, groups.RoleMember, nil); err != nil {
			t.Fatal(err)
		}
	}
	leaves := 0
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "group_members.page" && leaves < 3 {
			return memstore.Slow
		}
		return memstore.None
	}
	inMeanwhile := false
	l.store.Meanwhile = func() {
		if inMeanwhile || leaves >= 3 {
			return
		}
		inMeanwhile = true
		defer func() { inMeanwhile = false }()
		for _, m := range l.store.GroupSnapshot().Members[club.ID] {
			if m.UserID != l.ann.ID {
				leaves++
				if err := l.grp.RemoveMember(ctx, domain.Principal{UserID: m.UserID}, club.ID, m.UserID); err != nil {
					t.Errorf("a member leaving: %v", err)
				}
				return
			}
		}
	}
	err := l.deleteSelf(l.ann)
	for range 5 { // a failed run, or a lease the slow reads cost: the next passes go on
		if err == nil {
			break
		}
		l.store.Advance(lease)
		_, err = l.life.WorkJobs(ctx)
	}
	if leaves != 3 {
		t.Fatalf("%d members left, want 3", leaves)
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Fatalf("the account is %q, want deleted (%v)", st, err)
	}
	if role, err := l.grp.MemberRole(ctx, club.ID, l.ann.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the deleted account is still the club's %s", role)
	}
	if gr, err := l.grp.GetSerial(ctx, club.ID); err != nil || gr.Status != domain.StatusClosed {
		t.Errorf("the club, left by everyone else, is %+v (%v), want closed", gr, err)
	}
}

// TestAHandOverLooksPastTheFirstPageForAnActiveMember: ann's deletion
// finds her the last manager of a club of 102 members; the first page of
// them (by id, 100) holds ann and 99 suspended members, the page after it
// one more suspended and one active. The club goes to the active one: a
// suspended member is chosen only when no visible member is active, on
// any page (before, the hand-over looked at the first page only and made
// a suspended member the club's one manager).
func TestAHandOverLooksPastTheFirstPageForAnActiveMember(t *testing.T) {
	t.Parallel()
	l, club, cat := handOverWorld(t)
	ctx := context.Background()
	root, err := l.svc.SetAdmin(ctx, "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: l.store.Now},
		l.svc, l.store.Users(), l.store.Suspensions())
	others := []string{cat.ID}
	for i := range 100 {
		name := fmt.Sprintf("m%03d", i)
		if err := l.signup(name, name+"@example.org"); err != nil {
			t.Fatal(err)
		}
		id := l.created[len(l.created)-1].ID
		if _, _, err := l.grp.SetMember(ctx, as(l.ann), club.ID, id, groups.RoleMember, nil); err != nil {
			t.Fatal(err)
		}
		others = append(others, id)
	}
	slices.Sort(others)
	active := others[len(others)-1]
	until := l.store.Now().Add(time.Hour)
	for _, id := range others[:len(others)-1] {
		if _, err := mod.Suspend(ctx, domain.Principal{UserID: root.ID}, id, moderation.SuspendInput{Reason: "spam", Until: &until}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.deleteSelf(l.ann); err != nil {
		t.Fatal(err)
	}
	role, err := l.grp.MemberRole(ctx, club.ID, active)
	if err != nil || role != groups.RoleManager {
		t.Errorf("the club's only active member (last by id, past the first page) is its %q (%v), want its manager", role, err)
	}
	for _, id := range others[:len(others)-1] {
		if role, _ := l.grp.MemberRole(ctx, club.ID, id); role == groups.RoleManager {
			t.Errorf("suspended member %s was made the club's manager while an active one was there", id)
		}
	}
}

// failingGet is an account table whose first read of one account fails.
type failingGet struct {
	accounts.UserStore
	id     string
	failed *bool
}

func (f failingGet) Get(ctx context.Context, id string) (domain.User, error) {
	if id == f.id && !*f.failed {
		*f.failed = true
		return domain.User{}, fmt.Errorf("reading %s: %w", id, domain.ErrUnavailable)
	}
	return f.UserStore.Get(ctx, id)
}

// TestAHandOverThatCannotReadAMemberDecidesAgain: ann's deletion hands
// over a club whose members are cat (active) and sus (suspended), and
// its read of cat's account fails once. A member it could not read may
// be the active one: the run fails and the next decides again, so the
// club goes to cat (before, the failed read counted as "not visible" and
// the suspended member became the club's one manager).
func TestAHandOverThatCannotReadAMemberDecidesAgain(t *testing.T) {
	t.Parallel()
	l, club, cat := handOverWorld(t)
	ctx := context.Background()
	if err := l.signup("sus", "sus@example.org"); err != nil {
		t.Fatal(err)
	}
	sus := l.created[len(l.created)-1]
	if _, _, err := l.grp.SetMember(ctx, as(l.ann), club.ID, sus.ID, groups.RoleMember, nil); err != nil {
		t.Fatal(err)
	}
	root, err := l.svc.SetAdmin(ctx, "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	until := l.store.Now().Add(time.Hour)
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: l.store.Now}, l.svc, l.store.Users(), l.store.Suspensions())
	if _, err := mod.Suspend(ctx, domain.Principal{UserID: root.ID}, sus.ID, moderation.SuspendInput{Reason: "spam", Until: &until}); err != nil {
		t.Fatal(err)
	}
	failed := false
	l.rows = failingGet{UserStore: l.rows, id: cat.ID, failed: &failed}
	l.rewire(func(*memstore.Store, *accounts.Config) {})
	l.grp, _ = wireDeletion(l.world)
	err = l.deleteSelf(l.ann)
	for range 3 {
		if err == nil {
			break
		}
		_, err = l.life.WorkJobs(ctx)
	}
	if !failed {
		t.Fatal("the hand-over never read cat's account")
	}
	if role, err := l.grp.MemberRole(ctx, club.ID, cat.ID); err != nil || role != groups.RoleManager {
		t.Errorf("cat, the club's active member, is its %q (%v), want its manager", role, err)
	}
	if role, _ := l.grp.MemberRole(ctx, club.ID, sus.ID); role == groups.RoleManager {
		t.Error("the suspended member was made the club's manager while the active one's account could not be read")
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Errorf("the account is %q, want deleted (%v)", st, err)
	}
}
