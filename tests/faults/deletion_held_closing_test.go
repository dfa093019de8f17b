package faults

import (
	"context"
	"slices"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/lifecycle"
)

// TestADeletionFinishesOnlyOnceAClosingHeldElsewhereIsDone: ann closes
// her club, alone in it; another process's worker takes the closing's
// job and dies before its first step, its lease still running. Ann then
// deletes her account, and a worker's pass runs the deletion: it finds
// the club closing, whose job the dead worker holds. A group found
// closing is finished by the deletion (docs/design/deletion.md), so the
// deletion's job may not read finished while ann is still among the
// club's members: it waits for the closing (its run fails, or it is left
// unfinished) and finishes once the lease has run out and the closing is
// done.
func TestADeletionFinishesOnlyOnceAClosingHeldElsewhereIsDone(t *testing.T) {
	t.Parallel()
	l := newLifeWorld(t)
	ctx := context.Background()
	club := l.group(t, l.ann, "club")
	closing, err := l.life.CloseGroup(ctx, as(l.ann), club.ID, ownersProof())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Acquire(ctx, l.store.Jobs(), l.store.Now, lifecycle.DefaultJobLease, closing, "a worker that died"); err != nil {
		t.Fatal(err)
	}
	deletion, err := l.life.DeleteUser(ctx, as(l.ann), l.ann.ID, accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = l.life.WorkJobs(ctx)
	l.checkDeletionWaitedForTheClosing(t, deletion.ID, club)
}

// checkDeletionWaitedForTheClosing: the deletion's job (deletionID) did
// not read finished with ann still among the club's members (its closing
// held by a worker that died), and once that worker's lease has run out
// the next passes finish both.
func (l *lifeWorld) checkDeletionWaitedForTheClosing(t *testing.T, deletionID string, club groups.Group) {
	t.Helper()
	ctx := context.Background()
	j, err := l.life.Job(ctx, deletionID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State(l.life.Now()) == jobs.Finished {
		snap := l.store.GroupSnapshot()
		for _, m := range snap.Members[club.ID] {
			if m.UserID == l.ann.ID {
				t.Errorf("the deletion's job reads finished with ann still a member of the club (closing, its job held elsewhere)")
			}
		}
		if slices.Contains(snap.GroupsOf[l.ann.ID], club.ID) {
			t.Errorf("the deletion's job reads finished with the club still among ann's groups")
		}
	}
	for range 3 {
		l.store.Advance(lifecycle.DefaultJobLease)
		_, _ = l.life.WorkJobs(ctx)
	}
	if st := l.status(t, l.ann.ID); st != domain.StatusDeleted {
		t.Errorf("the account is %q, want deleted", st)
	}
	if j, err := l.life.Job(ctx, deletionID); err != nil || j.State(l.life.Now()) != jobs.Finished {
		t.Errorf("the deletion's job %+v (%v), want finished", j, err)
	}
	l.checkGroupClosed(t, club, l.bob)
}
