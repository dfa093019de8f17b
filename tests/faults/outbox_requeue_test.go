package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"shelf/domain"
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

// stuckItem is an item table on which one item's compare-and-sets fail
// (its replicas short of a quorum): no fence of it stands.
type stuckItem struct {
	library.ContentStore
	id string
}

func (s stuckItem) Update(ctx context.Context, c library.Content) (bool, error) {
	if c.ID == s.id {
		return false, fmt.Errorf("item %s: %w", c.ID, domain.ErrUnavailable)
	}
	return s.ContentStore.Update(ctx, c)
}

// stuckWorker is an outbox worker for whom the world's item cannot be
// fenced.
func stuckWorker(l *libWorld) *library.Service {
	stores := l.store.Contents()
	stores.Content = stuckItem{ContentStore: stores.Content, id: l.item}
	return library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: l.store.Now, Background: atOnce},
		l.svc, l.store.Users(), noGroups{}, stores, nopLog{})
}

// TestAnItemThatCannotBeFencedHoldsNoOtherItemBack: two items were renamed
// while the friend's library could not be written, the world's first, so
// each keeps a mark; then the world's item cannot be fenced at all. The
// worker reads the oldest marks first, a pass's worth at a time (here
// one, for the 100 of a real pass): the other item's fan-out must still
// be done. The stuck item's mark is moved forward once it is older than
// library.RequeueAfter, fenced or not (before, only a fenced item's were,
// so a pass's worth of unfenceable items held every later fan-out back
// for as long as they stayed so).
func TestAnItemThatCannotBeFencedHoldsNoOtherItemBack(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	l.store.Advance(time.Second)
	name, public := "second", string(library.VisibilityPublic)
	second, err := l.lib.Create(ctx, as(l.owner), library.Input{Name: &name, Visibility: &public})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.lib.Share(ctx, as(l.owner), second.ID, l.friend.ID, library.RoleViewer); err != nil {
		t.Fatal(err)
	}
	l.stop = l.friend.ID
	if err := l.update("first renamed", ""); err != nil {
		t.Fatalf("update: %v (the change is recorded; the fan-out is the outbox's)", err)
	}
	l.store.Advance(time.Second)
	renamed := "second renamed"
	if _, err := l.lib.Update(ctx, as(l.owner), second.ID, library.Input{Name: &renamed}); err != nil {
		t.Fatalf("update: %v", err)
	}
	l.stop = ""
	stuck := marks(t, l, l.item)
	if len(stuck) != 1 || len(marks(t, l, second.ID)) != 1 {
		t.Fatalf("marks after two failed fan-outs: %+v and %+v, want one each", stuck, marks(t, l, second.ID))
	}

	worker := stuckWorker(l)
	for range 3 {
		l.store.Advance(time.Minute)
		_, _ = worker.DrainOutbox(ctx, 30*time.Second, 1)
	}
	if left := marks(t, l, second.ID); len(left) != 0 {
		t.Errorf("the second item's fan-out never ran (its mark %+v is still there): the worker kept reading the stuck item's", left)
	}
	page, err := l.lib.Library(ctx, as(l.friend), l.friend.ID, library.NewestFirst, "", 20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Items, func(e library.Entry) bool { return e.Name == renamed }) {
		t.Errorf("the friend's library does not show %q: %+v", renamed, page.Items)
	}
	moved := marks(t, l, l.item)
	if len(moved) != 1 || moved[0].Marker == stuck[0].Marker {
		t.Errorf("the stuck item's marks: %+v, want one fresh mark in place of %+v", moved, stuck)
	}
}

// TestAChangeWhoseMarkWasMovedForwardUnfencedIsCarriedOut: a share pauses
// after its mark, before its compare-and-set, for over
// library.RequeueAfter, while the item cannot be fenced: the worker
// moves its mark forward with no fence (a fresh mark, the share's
// deleted). The share then applies and its own fan-out fails; the fresh
// mark must bring it to the libraries. So too when the fresh mark's worker
// ran, fenced and carried it out before the share resumed: the share's
// compare-and-set fails against that fence, and it reads the fence's
// record and marks again.
func TestAChangeWhoseMarkWasMovedForwardUnfencedIsCarriedOut(t *testing.T) {
	t.Parallel()
	for _, fencedMeanwhile := range []bool{false, true} {
		t.Run(fmt.Sprintf("fenced meanwhile %v", fencedMeanwhile), func(t *testing.T) {
			t.Parallel()
			l := newLibWorld(t)
			ctx := context.Background()
			worker := stuckWorker(l)
			moved := false
			sharePausedAfterItsMark(t, l, "share moved forward", func() {
				shares := marks(t, l, l.item)
				for range 2 {
					l.store.Advance(time.Minute)
					_, _ = worker.DrainOutbox(ctx, 30*time.Second, 100)
				}
				now := marks(t, l, l.item)
				moved = len(shares) == 1 && len(now) == 1 && now[0].Marker != shares[0].Marker
				if fencedMeanwhile {
					if err := l.drain(); err != nil {
						t.Errorf("the fresh mark's worker: %v", err)
					}
				}
			})
			if !moved {
				t.Error("the share's mark was not moved forward unfenced in its pause")
			}
			if left := marks(t, l, l.item); len(left) != 0 {
				t.Errorf("marks left once the worker could fence again: %+v", left)
			}
		})
	}
}
