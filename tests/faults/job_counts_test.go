package faults

import (
	"context"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
)

// pagedAfter is a library's entries where before runs once, just before
// the first page of principal's index is read.
type pagedAfter struct {
	library.EntryStore
	principal string
	before    func()
}

func (p *pagedAfter) IndexPage(ctx context.Context, principalID, after string, limit int) ([]library.Entry, error) {
	if principalID == p.principal && p.before != nil {
		before := p.before
		p.before = nil
		before()
	}
	return p.EntryStore.IndexPage(ctx, principalID, after, limit)
}

// TestAFinishedJobHasNothingLeft: ann holds three items, two of her own
// and one bob shares with her; her account's deletion (by her) or her
// library's rebuild (by root, an admin) begins. The job's worker counts
// her library (3), then, before it reads the first page, bob takes her
// off his item, so the pages hold two. Every item is handled (for the
// deletion, hers deleted and bob's left by bob himself) and the job
// finishes; a client following it (GET /v1/jobs/{id}) must not read it
// finished with an item left (left 1 of total 3): an item gone from the
// library while a job runs is done, as a job taken on again counts it
// (done is what is no longer there).
func TestAFinishedJobHasNothingLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, begin := range []struct {
		what string
		job  func(life *lifecycle.Service, w *world, ann domain.User) (jobs.Job, error)
	}{
		{"ann's deletion", func(life *lifecycle.Service, _ *world, ann domain.User) (jobs.Job, error) {
			return life.DeleteUser(ctx, as(ann), ann.ID, accounts.Password(password))
		}},
		{"the rebuild of ann's library", func(life *lifecycle.Service, w *world, ann domain.User) (jobs.Job, error) {
			if err := w.signup("root", "root@example.org"); err != nil {
				return jobs.Job{}, err
			}
			root, err := w.svc.SetAdmin(ctx, "root", true)
			if err != nil {
				return jobs.Job{}, err
			}
			return life.RebuildLibrary(ctx, as(root), ann.ID)
		}},
	} {
		w := newWorld()
		for _, n := range []string{"ann", "bob"} {
			if err := w.signup(n, n+"@example.org"); err != nil {
				t.Fatal(err)
			}
		}
		ann, bob := w.created[0], w.created[1]
		grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
			w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
		stores := w.store.Contents()
		paged := &pagedAfter{EntryStore: stores.Library, principal: ann.ID}
		stores.Library = paged
		lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce},
			w.svc, w.store.Users(), grp, stores, nopLog{})
		life := lifecycle.New(lifecycle.Config{Now: w.store.Now}, w.svc, worldModeration(w), grp, lib, lifecycle.Stores{
			Jobs: w.store.Jobs(), Queue: w.store.JobQueue(), Deletions: w.store.Deletions(), Closings: w.store.Closings(),
		})
		public := string(library.VisibilityPublic)
		for _, name := range []string{"one", "two"} {
			if _, err := lib.Create(ctx, as(ann), library.Input{Name: &name, Visibility: &public}); err != nil {
				t.Fatal(err)
			}
		}
		name := "bob's"
		shared, err := lib.Create(ctx, as(bob), library.Input{Name: &name, Visibility: &public})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lib.Share(ctx, as(bob), shared.ID, ann.ID, library.RoleViewer); err != nil {
			t.Fatal(err)
		}
		job, err := begin.job(life, w, ann)
		if err != nil {
			t.Fatalf("%s: %v", begin.what, err)
		}
		paged.before = func() {
			if err := lib.Unshare(ctx, as(bob), shared.ID, ann.ID); err != nil {
				t.Errorf("%s: bob taking ann off his item: %v", begin.what, err)
			}
		}
		if _, err := life.WorkJobs(ctx); err != nil {
			t.Fatalf("%s: the worker's pass: %v", begin.what, err)
		}
		if paged.before != nil {
			t.Fatalf("%s: the job read no page of ann's library", begin.what)
		}
		got, err := life.Job(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State(life.Now()) != jobs.Finished {
			t.Fatalf("%s: the job is %s (%+v), want finished", begin.what, got.State(life.Now()), got)
		}
		if got.Left() != 0 || got.Done != got.Total {
			t.Errorf("%s: the finished job reads %d of %d items done, %d left; want nothing left", begin.what, got.Done, got.Total, got.Left())
		}
	}
}
