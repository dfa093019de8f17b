package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
)

// countedIndex is the library rows, counting the rebuilds' counts of a
// library (one a rebuild run).
type countedIndex struct {
	library.EntryStore
	counts int
	// onCount, when set, is called at each count, once counted.
	onCount func()
}

func (c *countedIndex) CountIndex(ctx context.Context, principalID string) (int, error) {
	c.counts++
	if c.onCount != nil {
		c.onCount()
	}
	return c.EntryStore.CountIndex(ctx, principalID)
}

// TestRebuildsAskedBeforeOneBeganAreFinishedByIt (attackers are users
// too): an admin's session, a stolen one too, asking the rebuild of the
// largest library from many client addresses (each limited on its own)
// queued that many rebuilds, and each pass of the job worker ran every
// one of them, in full, before the deletions and closings begun
// meanwhile. A rebuild asked before another of the same library began,
// by any process's clock (domain.ClockSkew), is done when that one is:
// the worker finishes its job with that one's count and runs nothing.
// One asked later is run: the library may have changed since.
func TestRebuildsAskedBeforeOneBeganAreFinishedByIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, ann, root := annAndRoot(t)
	counted, grp, lib := countedLibrary(w)
	life := newLifecycle(w, grp, lib)
	public := string(library.VisibilityPublic)
	for i := range 3 {
		name := fmt.Sprintf("item %d", i)
		if _, err := lib.Create(ctx, as(ann), library.Input{Name: &name, Visibility: &public}); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(n int) []jobs.Job {
		t.Helper()
		var asked []jobs.Job
		for range n {
			j, err := life.RebuildLibrary(ctx, as(root), ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			asked = append(asked, j)
		}
		return asked
	}
	pass := func(what string, asked []jobs.Job, runs int) {
		t.Helper()
		counted.counts = 0
		if _, err := life.WorkJobs(ctx); err != nil {
			t.Fatalf("%s: the worker's pass: %v", what, err)
		}
		if counted.counts != runs {
			t.Errorf("%s: the pass ran %d rebuilds, want %d", what, counted.counts, runs)
		}
		for _, a := range asked {
			j, err := life.Job(ctx, a.ID)
			if err != nil || j.FinishedAt.IsZero() || j.Done != 3 || j.Total != 3 {
				t.Errorf("%s: job %s finished at %v with %d of %d (%v), want finished with 3 of 3", what, a.ID, j.FinishedAt, j.Done, j.Total, err)
			}
		}
	}

	many := ask(8)
	w.store.Advance(domain.ClockSkew + time.Second)
	pass("eight asked a while before the pass", many, 1)

	close := ask(1)
	w.store.Advance(time.Second)
	late := ask(1)
	pass("one asked more than the clocks' skew before the other began, one within it", append(close, late...), 2)
}

// annAndRoot is a world of two accounts: ann, and root, an admin.
func annAndRoot(t *testing.T) (w *world, ann, root domain.User) {
	t.Helper()
	w = newWorld()
	for _, n := range []string{"ann", "root"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	root, err := w.svc.SetAdmin(context.Background(), "root", true)
	if err != nil {
		t.Fatal(err)
	}
	return w, w.created[0], root
}

// countedLibrary is w's groups and library over library rows that count
// the rebuilds' counts (countedIndex).
func countedLibrary(w *world) (*countedIndex, *groups.Service, *library.Service) {
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	stores := w.store.Contents()
	counted := &countedIndex{EntryStore: stores.Library}
	stores.Library = counted
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce},
		w.svc, w.store.Users(), grp, stores, nopLog{})
	return counted, grp, lib
}
