package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
)

// withDeletion wires account deletion into the world's accounts service,
// so that an admin may delete the member while a suspension of it is
// under way.
func (m *modWorld) withDeletion() *modWorld {
	wireDeletion(m.world)
	return m
}

// wireDeletion builds account deletion for the world (w.life: groups,
// content and moderation's records on the world's store, as the app
// does), and returns the groups and content services it made.
func wireDeletion(w *world) (*groups.Service, *library.Service) {
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	contents := w.store.Contents()
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce},
		w.svc, w.store.Users(), grp, contents, nopLog{})
	w.life = newLifecycle(w, grp, lib)
	return grp, lib
}

// newLifecycle builds the workflows of deletion and closing on the
// world's services and store, as the app does.
func newLifecycle(w *world, grp *groups.Service, lib *library.Service) *lifecycle.Service {
	return lifecycleOn(w, grp, lib, w.store.Now)
}

// lifecycleOn is newLifecycle on the clock now (a process whose clock
// disagrees with the store's).
func lifecycleOn(w *world, grp *groups.Service, lib *library.Service, now func() time.Time) *lifecycle.Service {
	return lifecycle.New(lifecycle.Config{Now: now}, w.svc, worldModeration(w), grp, lib, lifecycle.Stores{
		Jobs: w.store.Jobs(), Queue: w.store.JobQueue(), Deletions: w.store.Deletions(), Closings: w.store.Closings(),
	})
}

// worldModeration is moderation on the world's store, as the app wires it
// (without the index of its attempts, which no deletion reads).
func worldModeration(w *world) *moderation.Service {
	return moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: w.store.Now},
		w.svc, w.store.Users(), w.store.Suspensions())
}

// deleteMember is another admin deleting the member: the request, then
// the job worker's pass that finishes it.
func (m *modWorld) deleteMember() error {
	return worked(m.life)(m.life.DeleteUser(context.Background(), m.admin, m.member.ID, accounts.Proof{}))
}

// worked returns what finishes a request that began a job, as the app
// does: the request's answer, then a pass of life's job worker (the one
// of the process that answered, woken by the request). Success is a pass
// without failure and the job read finished after it, as a client polling
// it sees; a pass that failed (the job may read finished with its index
// entry left, which the next pass ends) or a job left unfinished (the
// lease lost) is not, for the explorer's continuations to finish.
func worked(life *lifecycle.Service) func(jobs.Job, error) error {
	return func(j jobs.Job, err error) error {
		if err != nil {
			return err
		}
		ctx := context.Background()
		if _, err := life.WorkJobs(ctx); err != nil {
			return err
		}
		if got, err := life.Job(ctx, j.ID); err == nil && got.State(life.Now()) == jobs.Finished {
			return nil
		}
		return errUnfinished
	}
}

// errUnfinished: the job a request began is not finished after the
// worker's pass (the client polling it sees it queued or running).
var errUnfinished = fmt.Errorf("the job is not finished: %w", domain.ErrUnavailable)

// TestSuspensionRacingADeletionListsNobody (S2; docs/design/deletion.md): the
// suspension's compare-and-set applies; another admin deletes the account
// (its lookup finds no records yet); then the suspension writes its list
// row, lookup and expiry entry at the version it read. No record of the
// deleted account may survive, and the suspension answers 404: the
// account it would describe is gone.
func TestSuspensionRacingADeletionListsNobody(t *testing.T) {
	t.Parallel()
	m := newModWorld(t).withDeletion()
	m.mod.Hooks.AfterStep = func(op, step string) error {
		if op == "suspend" && step == "cas" {
			if err := m.deleteMember(); err != nil {
				t.Errorf("the deletion: %v", err)
			}
		}
		return nil
	}
	err := m.suspend(time.Hour)
	m.mod.Hooks.AfterStep = nil
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the suspension of an account deleted meanwhile answered %v, want not found", err)
	}
	checkNoRecordsOfDeleted(t, "after the suspension", m)
	checkHistory(t, "after the suspension", m)
}

// TestSuspensionChecksAgainAtItsEnd: the deletion racing the suspension
// stops right after its compare-and-set (before it erases anything), so
// only the suspension can see that the records it wrote are of a deleted
// account: it reads the account again after writing them, erases them and
// answers 404.
func TestSuspensionChecksAgainAtItsEnd(t *testing.T) {
	t.Parallel()
	m := newModWorld(t).withDeletion()
	m.life.Hooks.AfterDeletionStep = func(step string) error {
		if step == "begun" { // the request's compare-and-set, before its job erases anything
			return errors.New("crashed (test hook)")
		}
		return nil
	}
	m.mod.Hooks.AfterStep = func(op, step string) error {
		if op == "suspend" && step == "cas" {
			_ = m.deleteMember()
		}
		return nil
	}
	err := m.suspend(time.Hour)
	m.mod.Hooks.AfterStep, m.life.Hooks.AfterDeletionStep = nil, nil
	if !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the suspension of an account being deleted answered %v, want not found", err)
	}
	checkNoRecordsOfDeleted(t, "after the suspension", m)
}

// TestLateSuspensionRecordsAfterADeletionAreShadowed: the suspension's
// list row is held back (503); the deletion runs to its end and finds no
// records; then the list row lands. The deletion erased the suspension's
// records by their keys at its own version, so the late row, written at
// the suspension's older version, is shadowed.
func TestLateSuspensionRecordsAfterADeletionAreShadowed(t *testing.T) {
	t.Parallel()
	m := newModWorld(t).withDeletion()
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "users_by_status.insert" {
			return memstore.LandLate
		}
		return memstore.None
	}
	if err := m.suspend(time.Hour); err == nil {
		t.Fatal("the suspension answered success though its list row is held back")
	}
	recovered(m.store)
	if err := m.deleteMember(); err != nil {
		t.Fatal(err)
	}
	m.store.Land()
	checkNoRecordsOfDeleted(t, "after the late list row", m)
	checkHistory(t, "after the late list row", m)
}

// TestSweeperAndRepairEraseTheRecordsOfADeletedAccount: records of a
// suspension its account, since deleted, no longer has (as a deletion that
// cleared the suspension from its row before erasing left them, when the
// suspension's writes landed after its lookup) are erased by the sweeper
// as well as by the repair, at the account's version: the account read at
// SERIAL proves they can never be of a suspension in force. The sweeper
// erases all three, not the expiry entry alone: the list row and the
// lookup would stay.
func TestSweeperAndRepairEraseTheRecordsOfADeletedAccount(t *testing.T) {
	t.Parallel()
	for _, finisher := range []struct {
		name string
		run  func(m *modWorld) error
	}{
		{"sweeper", func(m *modWorld) error { m.store.Advance(2 * time.Hour); return m.sweep() }},
		{"repair", func(m *modWorld) error { return m.repair() }},
	} {
		t.Run(finisher.name, func(t *testing.T) {
			t.Parallel()
			m := newModWorld(t)
			ctx := context.Background()
			if err := m.suspend(time.Hour); err != nil {
				t.Fatal(err)
			}
			u, err := m.store.Users().Get(ctx, m.member.ID)
			if err != nil {
				t.Fatal(err)
			}
			s := *u.Suspension
			// The row as a deletion left it before the deletion erased its
			// records at its own version: deleted,
			// its suspension gone from the row, the records still there.
			gone := u
			gone.Status, gone.Suspension, gone.Deletion = domain.StatusDeleted, nil, &domain.Deletion{At: m.store.Now(), By: m.admin.UserID}
			gone.Username, gone.UsernameKey, gone.Email, gone.EmailKey = "", "", "", ""
			gone.Version++
			if ok, err := m.store.Users().Update(ctx, gone); !ok || err != nil {
				t.Fatalf("deleting the row: %v %v", ok, err)
			}
			if err := m.store.Suspensions().Record(ctx, s, u.Version); err != nil {
				t.Fatal(err)
			}
			if err := finisher.run(m); err != nil {
				t.Errorf("the %s: %v", finisher.name, err)
			}
			checkNoRecordsOfDeleted(t, "after the "+finisher.name, m)
			checkHistory(t, "after the "+finisher.name, m)
		})
	}
}

// TestDeletionRecordsTheHistoryAFailedWriteLeft (S5;
// docs/design/moderation-history.md):
// a suspension (or a lift) applies, its history write fails (503), and
// the account is deleted before anyone retries. The deletion writes the
// entries (S5): a deletion is no lift, and nothing after it would.
func TestDeletionRecordsTheHistoryAFailedWriteLeft(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		before func(m *modWorld) error
		run    func(m *modWorld) error
	}{
		{name: "suspension", run: func(m *modWorld) error { return m.suspend(time.Hour) }},
		{name: "lift", before: func(m *modWorld) error { return m.suspend(time.Hour) }, run: func(m *modWorld) error { return m.unsuspend() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := newModWorld(t).withDeletion()
			if c.before != nil {
				if err := c.before(m); err != nil {
					t.Fatal(err)
				}
			}
			m.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "moderation_history.insert" {
					return memstore.FailBefore
				}
				return memstore.None
			}
			if err := c.run(m); err == nil {
				t.Fatalf("the %s answered success though its history write failed", c.name)
			}
			recovered(m.store)
			if err := m.deleteMember(); err != nil {
				t.Fatal(err)
			}
			checkHistory(t, "deleted after a "+c.name+" whose history write failed", m)
			checkNoRecordsOfDeleted(t, "after the deletion", m)
		})
	}
}

// checkNoRecordsOfDeleted asserts that the member, deleting or deleted,
// has no list row, lookup or expiry entry, and is not in the suspended
// list (S2).
func checkNoRecordsOfDeleted(t *testing.T, name string, m *modWorld) {
	t.Helper()
	u, err := m.store.Users().Get(context.Background(), m.member.ID)
	if err != nil {
		t.Fatalf("%s: the member: %v", name, err)
	}
	if u.Status != domain.StatusDeleting && u.Status != domain.StatusDeleted {
		t.Fatalf("%s: the member is %s, not being deleted", name, u.Status)
	}
	list, lookup, expiry := m.store.Records(u.ID)
	if len(list)+len(lookup)+len(expiry) != 0 {
		t.Errorf("%s: S2: the %s account keeps list rows %+v, lookup %+v, expiry entries %+v", name, u.Status, list, lookup, expiry)
	}
	page, err := m.mod.ListSuspended(context.Background(), m.admin, "", 10)
	if err != nil {
		t.Fatalf("%s: the suspended list: %v", name, err)
	}
	for _, s := range page.Items {
		if s.UserID == u.ID {
			t.Errorf("%s: S2: the suspended list shows the %s account: %+v", name, u.Status, s)
		}
	}
}

// TestRepairKeepsTheExpiryEntryOfASuspensionEndingWhenAnOldOneDid: the
// list holds a row of an old suspension of an account suspended again,
// with the same end (a disagreement the repair meets; its origin does not
// matter). The repair erases the old row, but not the expiry entry: its
// key (the end and the user) is the current suspension's too, and
// deleting it at the account's version would leave the current suspension
// unlifted for good (a rewrite at that version loses the tie).
func TestRepairKeepsTheExpiryEntryOfASuspensionEndingWhenAnOldOneDid(t *testing.T) {
	t.Parallel()
	m := newModWorld(t)
	ctx := context.Background()
	end := m.store.Now().Add(time.Hour)
	in := moderation.SuspendInput{Reason: "spam", Until: &end}
	old, err := m.mod.Suspend(ctx, m.admin, m.member.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.unsuspend(); err != nil {
		t.Fatal(err)
	}
	m.store.Advance(time.Minute)
	if _, err := m.mod.Suspend(ctx, m.admin, m.member.ID, in); err != nil {
		t.Fatal(err)
	}
	now, _ := m.store.Users().Get(ctx, m.member.ID)
	// The old suspension's list row, at the account's version (its lookup
	// and expiry entry tie with the current ones and do not replace them).
	if err := m.store.Suspensions().Record(ctx, old, now.Version); err != nil {
		t.Fatal(err)
	}
	if err := m.repair(); err != nil {
		t.Fatal(err)
	}
	checkModeration(t, "after the repair", m)
}

// TestALiftsListRowTheLookupNeverNamedIsErased: a suspension's reverse
// lookup write fails while its list row lands (the suspension answers
// 503), and the unsuspension's delete of that list row fails too. What
// comes next erases the row by the last lift's own keys, whatever the
// lookup says: the lift's retry, a new suspension (listed once), or the
// account's deletion (before, each found the old suspension through the
// lookup only, and the list showed an active, a twice-listed or a deleted
// account for good).
func TestALiftsListRowTheLookupNeverNamedIsErased(t *testing.T) {
	t.Parallel()
	for _, next := range []struct {
		name   string
		then   func(m *modWorld) error
		listed int
	}{
		{"the lift's retry", func(m *modWorld) error { return m.unsuspend() }, 0},
		{"a new suspension", func(m *modWorld) error { return m.suspend(0) }, 1},
		{"the deletion", func(m *modWorld) error { return m.deleteMember() }, 0},
	} {
		t.Run(next.name, func(t *testing.T) {
			t.Parallel()
			m := newModWorld(t).withDeletion()
			holdFirst(m.store, "suspended_users.insert", memstore.FailBefore)
			if err := m.suspend(0); err == nil {
				t.Fatal("the suspension whose lookup write failed answered success")
			}
			holdFirst(m.store, "users_by_status.delete", memstore.FailBefore)
			if err := m.unsuspend(); err == nil {
				t.Fatal("the lift whose list delete failed answered success")
			}
			m.store.FaultAt = nil
			_ = next.then(m) // the lift's retry answers "not suspended"
			m.store.Advance(2 * time.Hour)
			m.workers()
			page, err := m.mod.ListSuspended(context.Background(), m.admin, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != next.listed {
				t.Errorf("after %s the suspended list shows %d rows, want %d: %+v", next.name, len(page.Items), next.listed, page.Items)
			}
		})
	}
}
