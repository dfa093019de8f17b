package faults

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/tests/memstore"
)

// twoWorkers is a job begun (ann's deletion: three items of her own, one
// shared with bob and one with the club, a group she co-manages with him;
// or the club's closing, by ann) and two job workers on one store, two
// processes' worth: a and b, each with its own name and its own view of
// the jobs' rows (recorded by jobLog).
type twoWorkers struct {
	*world
	a, b    *lifecycle.Service
	lib     *library.Service
	ann     string
	bob     string
	club    string
	items   []string
	job     jobs.Job
	log     *jobLog
	closing bool
}

func newTwoWorkers(t *testing.T, closing bool) *twoWorkers {
	t.Helper()
	ctx := context.Background()
	w := newWorld()
	for _, n := range []string{"ann", "bob"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	ann, bob := w.created[0], w.created[1]
	grp, lib := wireDeletion(w)
	tw := &twoWorkers{world: w, lib: lib, ann: ann.ID, bob: bob.ID, log: &jobLog{}, closing: closing}
	gr, err := grp.CreateGroup(ctx, as(ann), groups.CreateInput{Name: "club"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := grp.SetMember(ctx, as(ann), gr.ID, bob.ID, groups.RoleManager, nil); err != nil {
		t.Fatal(err)
	}
	public := string(library.VisibilityPublic)
	for _, name := range []string{"one", "two", "three"} {
		c, err := lib.Create(ctx, as(ann), library.Input{Name: &name, Visibility: &public})
		if err != nil {
			t.Fatal(err)
		}
		tw.items = append(tw.items, c.ID)
	}
	tw.club = gr.ID
	if _, err := lib.Share(ctx, as(ann), tw.items[0], bob.ID, library.RoleViewer); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Share(ctx, as(ann), tw.items[1], gr.ID, library.RoleViewer); err != nil {
		t.Fatal(err)
	}
	worker := func(name string) *lifecycle.Service {
		return lifecycle.New(lifecycle.Config{Now: w.store.Now, Worker: name}, w.svc, worldModeration(w), grp, lib, lifecycle.Stores{
			Jobs: recordedJobs{Store: w.store.Jobs(), worker: name, log: tw.log}, Deletions: w.store.Deletions(),
			Closings: w.store.Closings(),
		})
	}
	tw.a, tw.b = worker("a"), worker("b")
	if closing {
		tw.job, err = tw.a.CloseGroup(ctx, as(ann), gr.ID, ownersProof())
	} else {
		pw := password
		tw.job, err = tw.a.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(pw))
	}
	if err != nil {
		t.Fatal(err)
	}
	return tw
}

// jobLog records every write of a job's row that applied, by worker.
type jobLog struct {
	mu     sync.Mutex
	writes []jobWrite
}

type jobWrite struct {
	worker string
	job    jobs.Job
}

// recordedJobs is a worker's view of the jobs' rows: the store's, every
// write that applied recorded.
type recordedJobs struct {
	jobs.Store
	worker string
	log    *jobLog
}

func (r recordedJobs) Create(ctx context.Context, j jobs.Job) (bool, error) {
	created, err := r.Store.Create(ctx, j)
	r.record(created && err == nil, j)
	return created, err
}

func (r recordedJobs) Update(ctx context.Context, j jobs.Job) (bool, error) {
	applied, err := r.Store.Update(ctx, j)
	r.record(applied && err == nil, j)
	return applied, err
}

func (r recordedJobs) record(applied bool, j jobs.Job) {
	if !applied {
		return
	}
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.writes = append(r.log.writes, jobWrite{r.worker, j})
}

// fenceBreaches lists the writes of a worker that did not hold the lease:
// once another took it (a write that counted a new run under its name),
// a worker may write the row again only by taking the lease back itself.
// The request's own write (by no run) is nobody's lease.
func (l *jobLog) fenceBreaches() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	holder, runs := "", 0
	for _, w := range l.writes {
		switch {
		case w.job.Runs > runs:
			holder, runs = w.worker, w.job.Runs
		case w.job.Runs > 0 && w.worker != holder:
			out = append(out, w.worker+" wrote version "+strconv.Itoa(w.job.Version)+" while "+holder+" held the lease")
		}
	}
	return out
}

// TestExploreTwoWorkersOnOneJob: worker a runs a deletion's job, or a
// closing's, with a fault at each of its store calls; a Slow call lets
// the clock pass its lease while worker b, another process, runs a pass
// meanwhile and takes the job over. Held writes land after. Then both go
// on passing, the clock past every lease between passes, until the job
// reads finished, and the outbox worker finishes a fan-out a fault
// stopped. The operation is whole (the account deleted, its names free,
// its items gone from every library; or the group closed, its name free,
// no item shared with it, no member left), no entry left, the job's row
// finished, and no worker wrote the row while the other held the lease
// (fenced: a compare-and-set on the version the other moved on).
func TestExploreTwoWorkersOnOneJob(t *testing.T) {
	t.Parallel()
	for _, closing := range []bool{false, true} {
		exploreTwoWorkers(t, closing)
	}
}

func exploreTwoWorkers(t *testing.T, closing bool) {
	ctx := context.Background()
	what := map[bool]string{false: "two-workers-deletion", true: "two-workers-closing"}[closing]
	probe := newTwoWorkers(t, closing)
	calls := callsOf(t, probe.store, "a's pass", func() error { _, err := probe.a.WorkJobs(ctx); return err })
	takenOver := 0
	everySchedule(t, what, calls, []string{"none"}, func(name string, k int, fault memstore.Fault, _ int) {
		w := newTwoWorkers(t, closing)
		w.store.Meanwhile = func() {
			w.store.Advance(time.Minute)
			_, _ = w.b.WorkJobs(ctx)
		}
		faultOnce(w.store, k, fault)
		_, err := w.a.WorkJobs(ctx)
		recovered(w.store)
		w.store.Meanwhile = nil
		if err != nil && !expected(err) {
			t.Errorf("%s: a's pass answered %v", name, err)
		}
		w.store.Land()
		for range 4 {
			if j, err := w.store.Jobs().Get(ctx, w.job.ID); err == nil && j.State(w.store.Now()) == jobs.Finished && len(w.store.DeletionSnapshot())+len(w.store.ClosingSnapshot()) == 0 {
				break
			}
			w.store.Advance(time.Minute)
			_, _ = w.a.WorkJobs(ctx)
			_, _ = w.b.WorkJobs(ctx)
		}
		// A fan-out a fault stopped is the outbox worker's, as always.
		w.store.Advance(time.Minute)
		if _, err := w.lib.DrainOutbox(ctx, 30*time.Second, 100); err != nil {
			t.Errorf("%s: the outbox worker: %v", name, err)
		}
		w.check(t, name)
		if w.log.holders() > 1 {
			takenOver++
		}
	})
	t.Logf("%s: in %d schedules both workers held the job in turn", what, takenOver)
	if takenOver == 0 {
		t.Error("no schedule had the job taken over: the exploration misses what it is for")
	}
}

// holders counts the workers that took the lease.
func (l *jobLog) holders() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	runs := 0
	for _, w := range l.writes {
		if w.job.Runs > runs {
			seen[w.worker], runs = true, w.job.Runs
		}
	}
	return len(seen)
}

// check asserts the operation is whole and the job finished, fenced.
func (w *twoWorkers) check(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	j, err := w.store.Jobs().Get(ctx, w.job.ID)
	if err != nil || j.State(w.store.Now()) != jobs.Finished || j.Left() != 0 {
		t.Errorf("%s: the job %+v (%v); want finished, none left", name, j, err)
	}
	for _, b := range w.log.fenceBreaches() {
		t.Errorf("%s: %s", name, b)
	}
	if w.closing {
		w.checkClosed(t, name)
		return
	}
	if j.Total != 3 {
		t.Errorf("%s: the job counted %d items; want 3", name, j.Total)
	}
	if u, err := w.store.Users().Get(ctx, w.ann); err != nil || u.Status != domain.StatusDeleted {
		t.Errorf("%s: ann is %q (%v); want deleted", name, u.Status, err)
	}
	if left := w.store.DeletionSnapshot(); len(left) != 0 {
		t.Errorf("%s: the deletion index still holds %+v", name, left)
	}
	for _, id := range w.items {
		if _, err := w.lib.Get(ctx, domain.Principal{UserID: w.bob}, id); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s: ann's item %s reads %v; want not found", name, id, err)
		}
	}
	snap := w.store.ContentSnapshot()
	for principal, entries := range snap.Index {
		for _, e := range entries {
			if slices.Contains(w.items, e.ContentID) || principal == w.ann {
				t.Errorf("%s: %s's library still indexes %s", name, principal, e.ContentID)
			}
		}
	}
	for principal, rows := range snap.Rows {
		if principal == w.ann && len(rows) > 0 {
			t.Errorf("%s: ann's library still has %d rows", name, len(rows))
		}
	}
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Errorf("%s: ann's names after the deletion: %v", name, err)
	}
}

// checkClosed asserts the club's closing is whole: closed, no member row
// and no share of it left, its library empty, no entry left, its name
// free for a new group.
func (w *twoWorkers) checkClosed(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if left := w.store.ClosingSnapshot(); len(left) != 0 {
		t.Errorf("%s: the closing index still holds %+v", name, left)
	}
	snap := w.store.GroupSnapshot()
	for _, gr := range snap.Groups {
		if gr.ID == w.club && gr.Status != domain.StatusClosed {
			t.Errorf("%s: the club is %q; want closed", name, gr.Status)
		}
	}
	if m := snap.Members[w.club]; len(m) != 0 {
		t.Errorf("%s: the club still has the member rows %+v", name, m)
	}
	for user, gs := range snap.GroupsOf {
		if slices.Contains(gs, w.club) {
			t.Errorf("%s: %s's groups still list the club", name, user)
		}
	}
	content := w.store.ContentSnapshot()
	for id, members := range content.Members {
		for _, m := range members {
			if m.PrincipalID == w.club {
				t.Errorf("%s: %s is still shared with the club", name, id)
			}
		}
	}
	if n := len(content.Index[w.club]) + len(content.Rows[w.club]); n != 0 {
		t.Errorf("%s: the club's library still has %d entries and rows", name, n)
	}
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	if _, err := grp.CreateGroup(ctx, domain.Principal{UserID: w.bob}, groups.CreateInput{Name: "club"}); err != nil {
		t.Errorf("%s: the club's name after the closing: %v", name, err)
	}
}
