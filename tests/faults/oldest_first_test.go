package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shelf/domain/library"
	"shelf/tests/memstore"
)

// TestOldestFirstRunListsAnItemChangedMeanwhileOnce: an update of a lean
// item is still removing its rows (the first removal Slow, the clock past
// every grace) when an oldest-first run begins, and the run's first page
// shows the item from its row not yet removed. The update's new
// lastModified is taken once its rows are gone, so it is past the run's
// end and the run does not list the item again at its new place; a run
// begun after it lists the item last, once (L2).
func TestOldestFirstRunListsAnItemChangedMeanwhileOnce(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	ctx := context.Background()
	var later []string
	for i := range 3 {
		l.store.Advance(time.Second)
		name, public := fmt.Sprintf("later %d", i), string(library.VisibilityPublic)
		c, err := l.lib.Create(ctx, as(l.owner), library.Input{Name: &name, Visibility: &public})
		if err != nil {
			t.Fatal(err)
		}
		later = append(later, c.ID)
	}
	l.store.Advance(time.Second)

	run := func(cursor string, pages int) (ids []string, next string) {
		for range pages {
			page, err := l.lib.Library(ctx, as(l.owner), l.owner.ID, library.OldestFirst, cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Items {
				ids = append(ids, e.ContentID)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		return ids, cursor
	}
	var listed []string
	var cursor string
	slowed := false
	l.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "library.delete" && !slowed {
			slowed = true
			return memstore.Slow
		}
		return memstore.None
	}
	l.store.Meanwhile = func() { listed, cursor = run("", 1) }
	if err := l.update("renamed", ""); err != nil {
		t.Fatal(err)
	}
	l.store.FaultAt, l.store.Meanwhile = nil, nil
	if len(listed) == 0 || listed[0] != l.item {
		t.Fatalf("the run's first page, read while the update removed rows, listed %v; want the item (%s) first", listed, l.item)
	}
	rest, _ := run(cursor, 10)
	listed = append(listed, rest...)
	count := map[string]int{}
	for _, id := range listed {
		count[id]++
	}
	if count[l.item] != 1 {
		t.Errorf("the run listed the item changed meanwhile %d times: %v", count[l.item], listed)
	}
	for _, id := range later {
		if count[id] != 1 {
			t.Errorf("the run listed %s, left alone, %d times: %v", id, count[id], listed)
		}
	}
	l.store.Advance(time.Second) // a run ends where it begins: one begun later
	again, _ := run("", 10)
	if want := append(later, l.item); fmt.Sprint(again) != fmt.Sprint(want) {
		t.Errorf("a run begun after the update listed %v; want %v (the changed item last)", again, want)
	}
}
