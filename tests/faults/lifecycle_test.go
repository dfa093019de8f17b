package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/tests/memstore"
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

// TestNobodyCanHoldADeletionByMakingTheUserALastManager: anyone who
// manages a group may make any user its manager and leave (here bob, with
// cat as a member). The user's deletion is not refused for it (decision
// 79): it is accepted, and its job hands the group to the other member,
// so the group keeps a manager and the account is deleted.
func TestNobodyCanHoldADeletionByMakingTheUserALastManager(t *testing.T) {
	t.Parallel()
	l, club, cat := handOverWorld(t)
	ctx := context.Background()
	if err := l.deleteSelf(l.ann); err != nil {
		t.Fatalf("the deletion of the group's last manager answered %v, want it done", err)
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Errorf("the account is %q, want deleted", st)
	}
	if role, err := l.grp.MemberRole(ctx, club.ID, cat.ID); err != nil || role != groups.RoleManager {
		t.Errorf("the other member's role is %q (%v), want manager: the group was not handed over", role, err)
	}
	if _, err := l.grp.MemberRole(ctx, club.ID, l.ann.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the deleted account is still in the group (%v)", err)
	}
	gr, err := l.grp.GetGroup(ctx, club.ID)
	if err != nil || gr.MemberCount != 1 || gr.ManagerCount != 1 {
		t.Errorf("the group is %+v (%v), want active with one member, its manager", gr, err)
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

// TestAJobWhoseRowsWriteFailedAppearsOnceItsWorkerRuns: ann deletes her
// account and the request's write of the job's row fails. The deletion is
// under way all the same (its compare-and-set applied), so the request
// answers the job; a client following it at once finds no row yet and is
// told to ask again shortly, and once the worker the request woke has run
// the job is there, finished.
func TestAJobWhoseRowsWriteFailedAppearsOnceItsWorkerRuns(t *testing.T) {
	t.Parallel()
	l := newLifeWorld(t)
	ctx := context.Background()
	holdFirst(l.store, "jobs.create", memstore.FailBefore)
	pw := password
	j, err := l.life.DeleteUser(ctx, as(l.ann), l.ann.ID, accounts.Password(pw))
	l.store.FaultAt = nil
	if err != nil {
		t.Fatalf("the deletion answered %v, want its job: the deletion is under way", err)
	}
	_, err = l.life.Job(ctx, j.ID)
	var refusal *domain.Error
	if !errors.As(err, &refusal) || refusal.Kind != domain.ErrNotFound || !strings.Contains(refusal.Message, "ask again shortly") {
		t.Fatalf("the job before its worker ran: %v, want not found saying to ask again shortly", err)
	}
	if _, err := l.life.WorkJobs(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := l.life.Job(ctx, j.ID)
	if err != nil || got.State(l.life.Now()) != jobs.Finished || got.Subject != l.ann.ID {
		t.Errorf("the job after its worker ran: %+v %v, want ann's deletion, finished", got, err)
	}
}
