package faults

import (
	"context"
	"slices"
	"testing"
	"time"

	"shelf/domain/library"
	"shelf/tests/memstore"
)

// marks lists the item's pending marks.
func marks(t *testing.T, l *libWorld, id string) []library.OutboxEntry {
	t.Helper()
	all, err := l.store.Contents().Outbox.Pending(context.Background(), l.store.Now().Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []library.OutboxEntry
	for _, e := range all {
		if e.ContentID == id {
			out = append(out, e)
		}
	}
	return out
}

// TestAFanoutThatKeepsFailingIsMovedForward: while an item's member
// libraries cannot be written, the worker keeps its mark; once the mark is
// older than library.RequeueAfter, the worker makes a fresh mark and
// deletes the old one (the outbox's reader starts at the oldest live mark,
// so an old one left in place would lengthen every read). When the writes
// work again, the fresh mark is finished like any other.
func TestAFanoutThatKeepsFailingIsMovedForward(t *testing.T) {
	l := newLibWorld(t)
	ctx := context.Background()
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "library_index.put" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	name := "renamed"
	if _, err := l.lib.Update(ctx, as(l.owner), l.item, library.Input{Name: &name}); err != nil {
		t.Fatalf("update: %v (the change is recorded; the fan-out is the outbox's)", err)
	}
	first := marks(t, l, l.item)
	if len(first) != 1 {
		t.Fatalf("marks after a failed fan-out: %+v, want one", first)
	}

	l.store.Advance(10 * time.Second)
	if _, err := l.lib.DrainOutbox(ctx, 5*time.Second, 100); err == nil {
		t.Fatal("the drain reported success while the libraries cannot be written")
	}
	if got := marks(t, l, l.item); !slices.Equal(got, first) {
		t.Fatalf("a young mark was moved: %+v, want %+v", got, first)
	}

	// A requeue whose delete of the old mark fails leaves both marks: the
	// fan-out is only done twice.
	l.store.Advance(library.RequeueAfter)
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "library_index.put" || name == "content_marks.done" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	if _, err := l.lib.DrainOutbox(ctx, 5*time.Second, 100); err == nil {
		t.Fatal("the drain reported success while the libraries cannot be written")
	}
	if both := marks(t, l, l.item); len(both) != 2 {
		t.Fatalf("after a requeue whose old mark's delete failed: %+v, want the old and a fresh mark", both)
	}
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "library_index.put" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	l.store.Advance(10 * time.Second) // past the grace: both marks are read
	if _, err := l.lib.DrainOutbox(ctx, 5*time.Second, 100); err == nil {
		t.Fatal("the drain reported success while the libraries cannot be written")
	}
	moved := marks(t, l, l.item)
	if len(moved) != 1 || moved[0].Marker == first[0].Marker || !moved[0].MarkedAt.Equal(l.store.Now()) {
		t.Fatalf("after %s of failures: %+v, want one fresh mark instead of %+v", library.RequeueAfter, moved, first)
	}

	l.store.FaultAt = nil
	l.store.Advance(10 * time.Second)
	if n, err := l.lib.DrainOutbox(ctx, 5*time.Second, 100); err != nil || n != 1 {
		t.Fatalf("drain once the writes work: %d items, %v", n, err)
	}
	if got := marks(t, l, l.item); len(got) != 0 {
		t.Fatalf("marks left: %+v", got)
	}
	if page, err := l.lib.Library(ctx, as(l.friend), l.friend.ID, library.NewestFirst, "", 20); err != nil || len(page.Items) != 1 || page.Items[0].Name != name {
		t.Fatalf("the friend's library after the outbox: %+v, %v", page, err)
	}
}
