//go:build integration

package repository_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// TestClearPendingUnderFaults: the compare-and-set that clears an item's
// pending share. Its answer lost (applied or not), it settles by reading
// the row: cleared. Held back and landing late (after the next change was
// recorded at a newer version), it changes nothing: the newer pending
// change stays for whoever finishes it.
func TestClearPendingUnderFaults(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	faults := faultinject.Install(db)
	store := repository.NewContents(db)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	c := library.Content{ID: domain.NewID(domain.ContentIDPrefix), Name: "n", Visibility: library.VisibilityPrivate,
		CreatedBy: "u_x", CreatedAt: now, LastModified: now, Members: 1, Managers: 1, Version: 1}
	if ok, err := store.Create(ctx, c); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	record := func(principal string) library.Content {
		t.Helper()
		c.Version++
		c.Members++
		c.Pending = &library.MemberChange{PrincipalID: principal, Role: library.RoleViewer}
		if ok, err := store.Update(ctx, c); err != nil || !ok {
			t.Fatalf("record the share of %s: %v %v", principal, ok, err)
		}
		return c
	}
	pendingOf := func() *library.MemberChange {
		t.Helper()
		got, err := store.GetSerial(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Pending
	}

	for _, fault := range []error{&gocql.RequestErrCASWriteUnknown{}, gocql.ErrTimeoutNoResponse} {
		at := record("u_a")
		faults.Set(func(name string, p faultinject.Point) error {
			if name == "content.clear" && p == faultinject.AfterLWT {
				return fault
			}
			return nil
		})
		ok, err := store.ClearPending(ctx, at)
		faults.Set(nil)
		if err != nil || !ok {
			t.Fatalf("%T: a clear whose answer was lost: %v %v", fault, ok, err)
		}
		if p := pendingOf(); p != nil {
			t.Fatalf("%T: still pending: %+v", fault, p)
		}
	}

	// The clear of the share at v lands after the share at v+1 is recorded.
	stale := record("u_b")
	if ok, err := store.ClearPending(ctx, stale); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	record("u_c")
	if ok, err := store.ClearPending(ctx, stale); err != nil || ok {
		t.Fatalf("a late clear of an older version: applied %v, %v", ok, err)
	}
	if p := pendingOf(); p == nil || p.PrincipalID != "u_c" {
		t.Fatalf("the newer pending share is gone: %+v", p)
	}
}

// TestCreateOfATakenIDIsNotApplied: the outbox worker's fence of a
// creation it found missing (a deleted row of version 1, inserted IF NOT
// EXISTS) applies, its lost answer settled by its tag; the creation's
// insert landing after it is not applied, and says so without an error
// (library.Service.fence).
func TestCreateOfATakenIDIsNotApplied(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	faults := faultinject.Install(db)
	store := repository.NewContents(db)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	id := domain.NewID(domain.ContentIDPrefix)
	faults.Set(func(name string, p faultinject.Point) error {
		if name == "content.create" && p == faultinject.AfterLWT {
			return gocql.ErrTimeoutNoResponse
		}
		return nil
	})
	ok, err := store.Create(ctx, library.Content{ID: id, CreatedAt: now, LastModified: now, Deleted: true, Version: 1})
	faults.Set(nil)
	if err != nil || !ok {
		t.Fatalf("the fence whose answer was lost: %v %v", ok, err)
	}
	item := library.Content{ID: id, Name: "late", Visibility: library.VisibilityPublic, CreatedBy: "u_x",
		CreatedAt: now, LastModified: now, Members: 1, Managers: 1, Version: 1}
	if ok, err := store.Create(ctx, item); err != nil || ok {
		t.Fatalf("the creation after the fence: applied %v, %v", ok, err)
	}
	got, err := store.GetSerial(ctx, id)
	if err != nil || !got.Deleted || got.Version != 1 || got.Name != "" || got.Members != 0 {
		t.Fatalf("the fenced row: %+v, %v", got, err)
	}
}

// TestStatesReadManyItemsAtOnce: one read of several items, by id with
// IN, answers each as it stands now (an update and a deletion seen, the
// deleted one kept with its flag) and leaves out ids without a row.
func TestStatesReadManyItemsAtOnce(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	store := repository.NewContents(db)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	var items []library.Content
	for i, v := range []library.Visibility{library.VisibilityPublic, library.VisibilityLoggedIn, library.VisibilityPrivate} {
		c := library.Content{ID: domain.NewID(domain.ContentIDPrefix), Name: fmt.Sprint("item ", i), Visibility: v,
			CreatedBy: "u_x", CreatedAt: now, LastModified: now.Add(time.Duration(i) * time.Millisecond), Members: 1, Managers: 1, Version: 1}
		if ok, err := store.Create(ctx, c); err != nil || !ok {
			t.Fatalf("create: %v %v", ok, err)
		}
		items = append(items, c)
	}
	renamed, deleted := items[0], items[1]
	renamed.Name, renamed.Visibility, renamed.LastModified, renamed.Version = "renamed", library.VisibilityPrivate, now.Add(time.Second), 2
	deleted.Deleted, deleted.Version = true, 2
	for _, c := range []library.Content{renamed, deleted} {
		if ok, err := store.Update(ctx, c); err != nil || !ok {
			t.Fatalf("update %s: %v %v", c.ID, ok, err)
		}
	}
	items[0], items[1] = renamed, deleted
	absent := domain.NewID(domain.ContentIDPrefix)
	got, err := store.States(ctx, []string{items[0].ID, absent, items[1].ID, items[2].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("read %d items, want 3 (the absent one left out): %+v", len(got), got)
	}
	for _, c := range items {
		want := library.ItemState{ID: c.ID, Name: c.Name, Visibility: c.Visibility, LastModified: c.LastModified, Deleted: c.Deleted}
		if got[c.ID] != want {
			t.Errorf("%s: read %+v, want %+v", c.ID, got[c.ID], want)
		}
	}
}
