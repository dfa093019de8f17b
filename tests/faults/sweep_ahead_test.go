package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/lifecycle"
)

// readOnReach reads an index of attempts in progress as the repository
// does: the held entries, then each day's partition, each read when the
// pass reaches it, so an entry written while the pass works on an earlier
// one is read by the same pass (memstore reads the index at once). Every
// entry gets the pass's clock, read before any entry.
func readOnReach[E any](ctx context.Context, inProgress func(context.Context, func(E, time.Time) error) error, key func(E) string, fn func(E, time.Time) error) error {
	seen := map[string]bool{}
	var pass time.Time
	if err := inProgress(ctx, func(e E, now time.Time) error {
		seen[key(e)], pass = true, now
		return fn(e, now)
	}); err != nil {
		return err
	}
	var later []E
	if err := inProgress(ctx, func(e E, _ time.Time) error {
		if !seen[key(e)] {
			later = append(later, e)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, e := range later {
		if err := fn(e, pass); err != nil {
			return err
		}
	}
	return nil
}

// closingsOnReach is the index of closings, read on reach.
type closingsOnReach struct{ lifecycle.ClosingStore }

func (c closingsOnReach) InProgress(ctx context.Context, fn func(groups.ClosingEntry, time.Time) error) error {
	return readOnReach(ctx, c.ClosingStore.InProgress, func(e groups.ClosingEntry) string { return e.GroupID + "|" + e.Attempt }, fn)
}

// queueOnReach is the queue of jobs, read on reach.
type queueOnReach struct{ jobs.Queue }

func (q queueOnReach) InProgress(ctx context.Context, fn func(jobs.Entry, time.Time) error) error {
	return readOnReach(ctx, q.Queue.InProgress, func(e jobs.Entry) string { return e.JobID }, fn)
}

// TestAWorkerAheadEndsNoRepeatAskedAfterItsSweepBegan (decision 76): a
// worker whose clock runs two minutes ahead of the node's and the
// others' sweeps a finished closing for a repeat, and while it sweeps the
// closer asks again; the pass reads that repeat's entry too (a partition
// read after the sweep). Judged by the worker's clock alone, the sweep
// began more than domain.ClockSkew after the repeat was asked, so its
// entry was ended as done, and no sweep ever began after it: a share
// landing late that the repeat was asked for stayed. So with a rebuild
// asked while another of the same library runs. A pass judges when a
// sweep or a rebuild began by the earlier of its clock and the node's.
func TestAWorkerAheadEndsNoRepeatAskedAfterItsSweepBegan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("the closing of a group", func(t *testing.T) {
		c := newCloseWorld(t)
		lib := c.lib
		repeat := func() {
			t.Helper()
			if _, err := c.life.CloseGroup(ctx, as(c.admin), c.group, accounts.Proof{}); err != nil {
				t.Fatal(err)
			}
		}
		repeat()
		if _, err := c.life.WorkJobs(ctx); err != nil {
			t.Fatal(err)
		}
		ahead := lifecycle.New(lifecycle.Config{Now: func() time.Time { return c.store.Now().Add(2 * time.Minute) }},
			c.svc, worldModeration(c.world), c.grp, lib, lifecycle.Stores{
				Jobs: c.store.Jobs(), Queue: c.store.JobQueue(), Deletions: c.store.Deletions(),
				Closings: closingsOnReach{c.store.Closings()},
			})
		repeat()
		c.store.Advance(domain.ClockSkew + time.Second)
		// swept counts the sweeps that began after the second repeat was
		// asked (each reads the group's library, then says "items").
		asked, swept := false, 0
		ahead.Hooks.AfterClosingStep = func(step string) error {
			switch {
			case step != "items":
			case !asked:
				asked = true
				repeat()
			default:
				swept++
			}
			return nil
		}
		if _, err := ahead.RepairClosings(ctx, false); err != nil {
			t.Fatal(err)
		}
		if !asked {
			t.Fatal("no sweep ran for the first repeat")
		}
		if n := countEntries(t, c.store.Closings().InProgress); n == 0 && swept == 0 {
			t.Errorf("the repeat asked while the sweep ran was ended, and no sweep read the group's library after it was asked")
		}
	})
	t.Run("the rebuild of a library", func(t *testing.T) {
		w, ann, root := annAndRoot(t)
		counted, grp, lib := countedLibrary(w)
		life := newLifecycle(w, grp, lib)
		ahead := lifecycle.New(lifecycle.Config{Now: func() time.Time { return w.store.Now().Add(2 * time.Minute) }},
			w.svc, worldModeration(w), grp, lib, lifecycle.Stores{
				Jobs: w.store.Jobs(), Queue: queueOnReach{w.store.JobQueue()}, Deletions: w.store.Deletions(), Closings: w.store.Closings(),
			})
		ask := func() jobs.Job {
			t.Helper()
			j, err := life.RebuildLibrary(ctx, as(root), ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		ask()
		w.store.Advance(domain.ClockSkew + time.Second)
		var late jobs.Job
		counted.onCount = func() {
			counted.onCount = nil
			late = ask()
			counted.counts = 0
		}
		if _, err := ahead.WorkJobs(ctx); err != nil {
			t.Fatal(err)
		}
		if late.ID == "" {
			t.Fatal("no rebuild ran for the first job")
		}
		j, err := life.Job(ctx, late.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !j.FinishedAt.IsZero() && counted.counts == 0 {
			t.Errorf("the rebuild asked while another ran was finished, and no rebuild of the library began after it was asked")
		}
	})
}
