package faults

import (
	"context"
	"testing"

	"shelf/domain/library"
	"shelf/tests/memstore"
)

// TestAnUnshareAnsweredNeverLeavesThePrivateItemInTheFormerMembersPage:
// an item past its lean rows (its rows are checked by the page, not
// removed first) is private and shared with the friend. The owner
// unshares the friend; the unshare's removal from the friend's library
// fails at its first statement (library_index.delete, before it is
// sent), so the change answers 204 and leaves its finish to the next
// change or the outbox worker. Before the worker runs, the friend may no
// longer open the item (withPending), nor see it in the friend's own
// library page: the page's check (agrees) reads the removal the item
// records beside its name, visibility, last change and deletion. A lean
// item removes the friend's rows before the compare-and-set (narrow), so
// it shows nothing either.
func TestAnUnshareAnsweredNeverLeavesThePrivateItemInTheFormerMembersPage(t *testing.T) {
	for _, lean := range []int{0, 1} {
		name := map[int]string{0: "lean", 1: "not lean"}[lean]
		t.Run(name, func(t *testing.T) {
			l := newLibWorldOf(t, 1000, lean)
			ctx := context.Background()
			if err := l.update("secret plans", string(library.VisibilityPrivate)); err != nil {
				t.Fatal(err)
			}
			holdFirst(l.store, "library_index.delete", memstore.FailBefore)
			if err := l.unshare(l.owner, l.friend); err != nil {
				t.Fatalf("the unshare answered %v, want success", err)
			}
			l.store.FaultAt = nil
			if _, err := l.lib.Get(ctx, as(l.friend), l.item); err == nil {
				t.Fatalf("the friend still opens the item after the unshare answered")
			}
			page, err := l.lib.Library(ctx, as(l.friend), l.friend.ID, library.NewestFirst, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Items {
				if e.ContentID == l.item {
					t.Errorf("after the unshare answered, the friend's library still lists the private item %q it may not open (%+v)", e.Name, e)
				}
			}
		})
		t.Run(name+"/group", func(t *testing.T) {
			// The group variant: the club's members keep seeing it in the
			// club's library after the club's unshare answered.
			l := newLibWorldOf(t, 1000, lean)
			ctx := context.Background()
			if err := l.update("secret plans", string(library.VisibilityPrivate)); err != nil {
				t.Fatal(err)
			}
			holdFirst(l.store, "library_index.delete", memstore.FailBefore)
			if err := l.unshareGroup(); err != nil {
				t.Fatalf("the group's unshare answered %v", err)
			}
			l.store.FaultAt = nil
			if _, err := l.lib.Get(ctx, as(l.other), l.item); err == nil {
				t.Fatalf("the club's member still opens the item")
			}
			page, err := l.lib.Library(ctx, as(l.other), l.group, library.NewestFirst, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Items {
				if e.ContentID == l.item {
					t.Errorf("after the club's unshare answered, the club's library still lists the private item %q to its member", e.Name)
				}
			}
		})
	}
}
