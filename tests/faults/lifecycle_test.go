package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
)

// The workflow floor (domain/lifecycle) on the in-memory stores, without
// faults: each test builds accounts, groups and content as the app does
// (wireDeletion) and drives a deletion through lifecycle alone.

// lifeWorld is two accounts, "ann" and "bob", with deletion wired.
type lifeWorld struct {
	*world
	grp      *groups.Service
	ann, bob domain.User
}

func newLifeWorld(t *testing.T) *lifeWorld {
	t.Helper()
	w := newWorld()
	for _, n := range []string{"ann", "bob"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	grp, _ := wireDeletion(w)
	return &lifeWorld{world: w, grp: grp, ann: w.created[0], bob: w.created[1]}
}

// deleteSelf is the user deleting their own account with their password.
func (l *lifeWorld) deleteSelf(u domain.User) error {
	pw := password
	return worked(l.life)(l.life.DeleteUser(context.Background(), as(u), u.ID, accounts.Password(pw)))
}

func (l *lifeWorld) group(t *testing.T, by domain.User, name string) groups.Group {
	t.Helper()
	gr, err := l.grp.CreateGroup(context.Background(), as(by), groups.CreateInput{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

func (l *lifeWorld) status(t *testing.T, id string) domain.Status {
	t.Helper()
	u, err := l.store.Users().GetSerial(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return u.Status
}

// checkGroupClosed: the group is closed, has no member row left, and its
// name is free (another user creates a group of that name).
func (l *lifeWorld) checkGroupClosed(t *testing.T, gr groups.Group, by domain.User) {
	t.Helper()
	snap := l.store.GroupSnapshot()
	for _, g := range snap.Groups {
		if g.ID == gr.ID && g.Status != domain.StatusClosed {
			t.Errorf("the group is %q, want closed", g.Status)
		}
	}
	if m := snap.Members[gr.ID]; len(m) != 0 {
		t.Errorf("the closed group still has member rows: %+v", m)
	}
	if _, err := l.grp.CreateGroup(context.Background(), as(by), groups.CreateInput{Name: gr.Name}); err != nil {
		t.Errorf("the closed group's name is not free: %v", err)
	}
}

// TestDeletionClosesTheGroupItsUserManagesAlone: a group whose only member
// (and so manager) is the user goes with the account (the deletion's own
// closing, lifecycle's onlyMember rule), its name freed, and the account
// is deleted with its names released and no index entry left.
func TestDeletionClosesTheGroupItsUserManagesAlone(t *testing.T) {
	t.Parallel()
	l := newLifeWorld(t)
	solo := l.group(t, l.ann, "solo")
	if err := l.deleteSelf(l.ann); err != nil {
		t.Fatalf("the deletion: %v", err)
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Errorf("the account is %q, want deleted", st)
	}
	l.checkGroupClosed(t, solo, l.bob)
	if e := l.store.DeletionSnapshot(); len(e) != 0 {
		t.Errorf("index entries left: %+v", e)
	}
	if e := l.store.ClosingSnapshot(); len(e) != 0 {
		t.Errorf("closing entries left: %+v", e)
	}
	if err := l.signup("ann", "ann@example.org"); err != nil {
		t.Errorf("the deleted account's names are not free: %v", err)
	}
}

// TestDeletionOfTheLastManagerIsRefused: the only manager of a group with
// another member is refused (409 last_manager, the group named in the
// field's message) before anything is written: the account stays active,
// the group and its members as they were, and no deletion is indexed.
func TestDeletionOfTheLastManagerIsRefused(t *testing.T) {
	t.Parallel()
	l := newLifeWorld(t)
	club := l.group(t, l.ann, "club")
	if _, _, err := l.grp.SetMember(context.Background(), as(l.ann), club.ID, l.bob.ID, groups.RoleMember); err != nil {
		t.Fatal(err)
	}
	err := l.deleteSelf(l.ann)
	var refusal *domain.Error
	if !errors.Is(err, domain.ErrConflict) || !errors.As(err, &refusal) || refusal.Code != "last_manager" {
		t.Fatalf("the deletion answered %v, want 409 last_manager", err)
	}
	if len(refusal.Fields) != 1 || refusal.Fields[0].Field != "groups" || !strings.HasPrefix(refusal.Fields[0].Message, club.ID) {
		t.Errorf("the refusal names %+v, want the group %s", refusal.Fields, club.ID)
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusActive {
		t.Errorf("the refused account is %q, want active", st)
	}
	if role, err := l.grp.MemberRole(context.Background(), club.ID, l.ann.ID); err != nil || role != groups.RoleManager {
		t.Errorf("the refused user's role is %q (%v), want manager", role, err)
	}
	if e := l.store.DeletionSnapshot(); len(e) != 0 {
		t.Errorf("a refused deletion left index entries: %+v", e)
	}
}

// TestRepairResumesAnInterruptedDeletion: a deletion stopped after it
// left its groups (as a crash would) leaves the account deleting and its
// entry in the index; the repair finds it there and finishes it (the
// account deleted, its names free, the group it was alone in closed, the
// entry ended), and a second repair finds nothing.
func TestRepairResumesAnInterruptedDeletion(t *testing.T) {
	t.Parallel()
	l := newLifeWorld(t)
	solo := l.group(t, l.ann, "solo")
	l.life.Hooks.AfterDeletionStep = func(step string) error {
		if step == "groups" {
			return errStopped
		}
		return nil
	}
	if err := l.deleteSelf(l.ann); !errors.Is(err, errStopped) {
		t.Fatalf("the interrupted deletion answered %v", err)
	}
	l.life.Hooks.AfterDeletionStep = nil
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleting {
		t.Fatalf("the interrupted account is %q, want deleting", st)
	}
	if e := l.store.DeletionSnapshot(); len(e) != 1 || e[0].UserID != l.ann.ID {
		t.Fatalf("the index holds %+v, want the interrupted deletion", e)
	}
	if err := l.signup("ann", "ann2@example.org"); err == nil {
		t.Errorf("a deleting account's username was taken")
	}
	rep, err := l.life.RepairDeletions(context.Background(), false)
	if err != nil || rep.Found != 1 || rep.Finished != 1 || rep.Stale != 0 {
		t.Fatalf("the repair: %+v %v", rep, err)
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Errorf("after the repair the account is %q, want deleted", st)
	}
	l.checkGroupClosed(t, solo, l.bob)
	if _, err := l.svc.Login(context.Background(), "ann", password, accounts.Client{}); err == nil {
		t.Errorf("the deleted account still logs in")
	}
	if err := l.signup("ann", "ann@example.org"); err != nil {
		t.Errorf("after the repair the names are not free: %v", err)
	}
	if rep, err := l.life.RepairDeletions(context.Background(), false); err != nil || rep.Found != 0 {
		t.Errorf("a second repair: %+v %v", rep, err)
	}
}
