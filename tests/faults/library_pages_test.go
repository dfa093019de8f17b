package faults

import (
	"context"
	"testing"

	"shelf/domain/library"
	"shelf/tests/memstore"
)

// TestAFanOutThatKeepsAnItemsPlaceNeverDropsItFromAPage: the world's
// item, past its lean rows, sits in the friend's library below a newer
// item. The friend reads his first page (one item: the newer one). The
// owner shares the item with the third user; the share's mark is left
// (its delete fails), so past the grace the outbox worker fences the
// item (its version moves on, its name, visibility and last change stay)
// and writes every member's library again: the index entry, then the
// rows at the same place. Each row write is slow, and meanwhile the
// friend reads his next page. The item never left his library nor moved
// in it, so the page must list it (L2's paging run: an item that stays
// put is listed once); a page that takes the row, older than its index
// entry only by the fence, for a stale copy drops it, and the run ends
// without it.
func TestAFanOutThatKeepsAnItemsPlaceNeverDropsItFromAPage(t *testing.T) {
	t.Parallel()
	l := newLibWorldOf(t, 1000, 1)
	withNewer(t, l)
	ctx := context.Background()
	first, err := l.lib.Library(ctx, as(l.friend), l.friend.ID, library.NewestFirst, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 1 || first.Items[0].ContentID == l.item || first.Next == "" {
		t.Fatalf("the friend's first page is %+v, want the newer item and a cursor", first)
	}
	holdFirst(l.store, "content_marks.done", memstore.FailBefore)
	if err := l.share(l.other, library.RoleViewer); err != nil {
		t.Fatal(err)
	}
	var pages, missing int
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "library.batch" {
			return memstore.Slow
		}
		return memstore.None
	}
	l.store.Meanwhile = func() {
		page, err := l.lib.Library(ctx, as(l.friend), l.friend.ID, library.NewestFirst, first.Next, 1)
		if err != nil {
			t.Errorf("the friend's next page during the fan-out: %v", err)
			return
		}
		pages++
		if len(page.Items) != 1 || page.Items[0].ContentID != l.item {
			missing++
			t.Errorf("during the worker's fan-out, the friend's next page is %+v (next %q): the item, never moved, is skipped", page.Items, page.Next)
		}
	}
	if err := l.drain(); err != nil {
		t.Fatal(err)
	}
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if pages == 0 {
		t.Fatal("the worker wrote no library row: nothing was fenced")
	}
	t.Logf("%d of %d pages read during the fan-out skipped the item", missing, pages)
}
