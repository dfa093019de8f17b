package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/lifecycle"
	"shelf/tests/memstore"
)

// TestADeletionWhoseGroupBeginsClosingMidStepWaitsForTheClosing: ann and
// bob manage the club. Ann deletes her account; the job's pass reads a
// role in the club slowly (the read of her groups, then her removal), and
// meanwhile bob closes the club and another process's worker takes the
// closing's job and dies before its first step, its lease still running.
// The deletion then finds the club gone (404). A group found closing is
// finished by the deletion, and its job may not read finished while ann
// is still among the club's members (docs/design/deletion.md, as
// TestADeletionFinishesOnlyOnceAClosingHeldElsewhereIsDone): a closing
// that began after the groups were read is one all the same.
func TestADeletionWhoseGroupBeginsClosingMidStepWaitsForTheClosing(t *testing.T) {
	t.Parallel()
	for _, slow := range []struct {
		name string
		k    int // which read of a role is slow, 0 first
	}{{"groups-read", 0}, {"removal", 1}} {
		t.Run(slow.name, func(t *testing.T) {
			l := newLifeWorld(t)
			ctx := context.Background()
			club := l.group(t, l.ann, "club")
			if _, _, err := l.grp.SetMember(ctx, as(l.ann), club.ID, l.bob.ID, groups.RoleManager, nil); err != nil {
				t.Fatal(err)
			}
			deletion, err := l.life.DeleteUser(ctx, as(l.ann), l.ann.ID, accounts.Password(password))
			if err != nil {
				t.Fatal(err)
			}
			seen, fired := 0, false
			l.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name != "group_members.role" || fired {
					return memstore.None
				}
				seen++
				if seen-1 == slow.k {
					fired = true
					return memstore.Slow
				}
				return memstore.None
			}
			l.store.Meanwhile = func() {
				l.store.Meanwhile = nil
				closing, err := l.life.CloseGroup(ctx, as(l.bob), club.ID, ownersProof())
				if err != nil {
					t.Errorf("bob's closing: %v", err)
					return
				}
				if _, err := jobs.Acquire(ctx, l.store.Jobs(), l.store.Now, lifecycle.DefaultJobLease, closing, "a worker that died"); err != nil {
					t.Errorf("the dying worker's lease: %v", err)
				}
			}
			_, _ = l.life.WorkJobs(ctx)
			l.store.FaultAt = nil
			if !fired {
				t.Fatal("the deletion read no such role")
			}
			l.checkDeletionWaitedForTheClosing(t, deletion.ID, club)
		})
	}
}
