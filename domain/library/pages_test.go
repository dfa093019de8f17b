package library

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
)

// rowsOnly is an EntryStore of one library's rows and an index: what a
// library page reads. Writes are not expected. It counts its reads.
type rowsOnly struct {
	EntryStore
	rows          []Entry // any order: Slice sorts them
	index         map[string]Entry
	slices, reads int
	// live are items whose own row differs from their index entry (a
	// change whose fan-out was lost); states counts the reads of items.
	live    map[string]ItemState
	states  int
	deleted *int
	// misplaced are rows in a bucket their visibility is not in, by
	// bucket (a fan-out gone wrong).
	misplaced map[string][]Entry
}

// itemsOf is a ContentStore of the items behind a rowsOnly library: each
// item as its index entry says, unless live says otherwise.
type itemsOf struct {
	ContentStore
	r *rowsOnly
}

func (c itemsOf) States(_ context.Context, ids []string) (map[string]ItemState, error) {
	c.r.states++
	out := map[string]ItemState{}
	for _, id := range ids {
		if st, ok := c.r.live[id]; ok {
			out[id] = st
		} else if e, ok := c.r.index[id]; ok {
			out[id] = ItemState{ID: id, Name: e.Name, Visibility: e.Visibility, LastModified: e.LastModified}
		}
	}
	return out, nil
}

// stores are what a page reads: store's library and its items.
func (r *rowsOnly) stores() Stores { return Stores{Library: r, Content: itemsOf{r: r}} }

// newestFirst orders a bucket as its clustering does.
func newestFirst(a, b Entry) int {
	if c := b.LastModified.Compare(a.LastModified); c != 0 {
		return c
	}
	return strings.Compare(b.ContentID, a.ContentID)
}

// Slice reads the bucket: the rows whose visibility it may see.
func (r *rowsOnly) Slice(_ context.Context, _, bucket string, order Order, after *Cursor, limit int) ([]Entry, error) {
	r.slices++
	rows := slices.DeleteFunc(slices.Clone(r.rows), func(e Entry) bool { return !slices.Contains(BucketsFor(e.Visibility), bucket) })
	rows = append(rows, r.misplaced[bucket]...)
	slices.SortFunc(rows, newestFirst)
	if order == OldestFirst {
		slices.Reverse(rows)
	}
	var out []Entry
	for _, e := range rows {
		pos := Entry{LastModified: e.LastModified, ContentID: e.ContentID}
		if after != nil {
			at := Entry{LastModified: after.LastModified, ContentID: after.ContentID}
			if c := newestFirst(at, pos); c == 0 || (c < 0) != (order == NewestFirst) {
				continue // not past the cursor in this order
			}
		}
		if len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (r *rowsOnly) Index(_ context.Context, _ string, ids []string) (map[string]Entry, error) {
	r.reads++
	out := map[string]Entry{}
	for _, id := range ids {
		if e, ok := r.index[id]; ok {
			out[id] = e
		}
	}
	return out, nil
}

// DeleteRow counts the background cleanup's deletes (when deleted is set).
func (r *rowsOnly) DeleteRow(context.Context, string, Entry) error {
	if r.deleted != nil {
		*r.deleted++
	}
	return nil
}

type visibleUsers struct{}

func (visibleUsers) Profile(_ context.Context, id string) (domain.Profile, error) {
	return domain.Profile{ID: id, Status: domain.StatusActive}, nil
}

// TestPageBehindManyStaleRowsStillHasACursor: a page whose refills run out
// among ghost rows (a library after mass removals, before cleanup caught
// up) ends with nextCursor, so the items behind them are reached; paging
// on shows each live item exactly once (L2, L5).
// In both orders: oldest first the ghosts are at the end.
func TestPageBehindManyStaleRowsStillHasACursor(t *testing.T) {
	t.Parallel()
	store := &rowsOnly{index: map[string]Entry{}}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var live []string
	for i := 0; i < 43; i++ {
		e := Entry{PrincipalID: "u", ContentID: domain.NewID(domain.ContentIDPrefix), Visibility: VisibilityPublic,
			LastModified: at.Add(-time.Duration(i) * time.Minute), Version: 1}
		store.rows = append(store.rows, e)
		if i >= 40 { // the 40 newest rows are ghosts: no index entry
			store.index[e.ContentID] = e
			live = append(live, e.ContentID)
		}
	}
	s := New(Config{Now: func() time.Time { return at.Add(time.Hour) }}, nil, visibleUsers{}, nil, store.stores(), nil)
	owner := domain.NewID(domain.UserIDPrefix)
	for _, order := range []Order{NewestFirst, OldestFirst} {
		got, _ := pageAll(t, s, owner, order, 2, nil)
		want := slices.Clone(live)
		if order == OldestFirst {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s first: paged through %v, want the live items %v once each", order, got, want)
		}
	}
}

// pageAll pages through owner's library as an anonymous caller, calling
// between (if set) after each page, and returns the ids in the order listed
// and the number of pages.
func pageAll(t *testing.T, s *Service, owner string, order Order, limit int, between func(page int)) ([]string, int) {
	t.Helper()
	got, pages := pageAllAs(t, s, domain.Principal{}, owner, order, limit, between)
	ids := make([]string, len(got))
	for i, e := range got {
		ids[i] = e.ContentID
	}
	return ids, pages
}

// pageAllAs pages through owner's library as viewer and returns the
// entries in the order listed and the number of pages.
func pageAllAs(t *testing.T, s *Service, viewer domain.Principal, owner string, order Order, limit int, between func(page int)) ([]Entry, int) {
	t.Helper()
	var got []Entry
	cursor := ""
	for pages := 1; ; pages++ {
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		p, err := s.Library(context.Background(), viewer, owner, order, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Items...)
		if p.Next == "" {
			return got, pages
		}
		cursor = p.Next
		if between != nil {
			between(pages)
		}
	}
}

// libraryOf is a bucket of n live items a minute apart (the newest at
// newest); dirty, every third row has a ghost or a stale copy beside it:
// what both orders must check alike.
func libraryOf(n int, newest time.Time, dirty bool) (*rowsOnly, []Entry) {
	store := &rowsOnly{index: map[string]Entry{}}
	var live []Entry // newest first
	for i := 0; i < n; i++ {
		e := Entry{PrincipalID: "u", ContentID: domain.NewID(domain.ContentIDPrefix), Name: fmt.Sprint("item ", i),
			Visibility: VisibilityPublic, LastModified: newest.Add(-time.Duration(i) * time.Minute), Version: 2}
		store.rows = append(store.rows, e)
		store.index[e.ContentID] = e
		live = append(live, e)
		if !dirty {
			continue
		}
		switch i % 3 {
		case 1: // a ghost
			store.rows = append(store.rows, Entry{PrincipalID: "u", ContentID: domain.NewID(domain.ContentIDPrefix),
				Visibility: VisibilityPublic, LastModified: e.LastModified.Add(time.Second), Version: 1})
		case 2: // the item's older copy, not yet deleted
			old := e
			old.LastModified, old.Version = e.LastModified.Add(-time.Second), 1
			store.rows = append(store.rows, old)
		}
	}
	return store, live
}

// TestBothOrdersListTheSameItemsAtTheSameCost: oldest first lists exactly
// the items newest first does, reversed (by lastModified, then id), and
// hides the same ghosts and stale copies; on a clean library both read the
// same slices and index reads, one each per page, and with stale rows
// neither reads more than its refills allow (L2, L3, L5).
func TestBothOrdersListTheSameItemsAtTheSameCost(t *testing.T) {
	t.Parallel()
	newest := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		limit int
		dirty bool
	}{{1, false}, {7, false}, {100, false}, {1, true}, {3, true}, {7, true}, {100, true}} {
		limit := tc.limit
		var cost [2][2]int
		for i, order := range []Order{NewestFirst, OldestFirst} {
			store, live := libraryOf(30, newest, tc.dirty)
			// Two items at the same time: ties go by id, in the order's direction.
			live[4].LastModified = live[5].LastModified
			store.index[live[4].ContentID] = live[4]
			for j := range store.rows {
				if store.rows[j].ContentID == live[4].ContentID && store.rows[j].Version == 2 {
					store.rows[j] = live[4]
				}
			}
			slices.SortFunc(live, newestFirst)
			s := New(Config{Now: func() time.Time { return newest.Add(time.Hour) }}, nil, visibleUsers{}, nil, store.stores(), nil)
			got, pages := pageAll(t, s, domain.NewID(domain.UserIDPrefix), order, limit, nil)
			want := make([]string, len(live))
			for k, e := range live {
				want[k] = e.ContentID
			}
			if order == OldestFirst {
				slices.Reverse(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d, dirty %v, %s first: listed %v, want %v", limit, tc.dirty, order, got, want)
			}
			cost[i] = [2]int{store.slices, store.reads}
			if store.states != store.reads {
				t.Errorf("limit %d, %s first: %d index reads, %d reads of the items; want one beside each", limit, order, store.reads, store.states)
			}
			if store.slices > pages*(maxRefills+1) || store.reads > store.slices {
				t.Errorf("limit %d, %s first: %d slices, %d index reads for %d pages", limit, order, store.slices, store.reads, pages)
			}
			if !tc.dirty && (store.slices != pages || store.reads != pages) {
				t.Errorf("limit %d, %s first, clean: %d slices, %d index reads for %d pages; want one each per page",
					limit, order, store.slices, store.reads, pages)
			}
		}
		if !tc.dirty && cost[0] != cost[1] {
			t.Errorf("limit %d: newest first read %v (slices, index reads), oldest first %v", limit, cost[0], cost[1])
		}
	}
}

// TestOldestFirstListsOnlyWhatWasThereWhenPagingBegan: an item changed
// while an oldest-first run pages moves to the end, past the run's end
// (the time of its first page), so it is not listed twice, and an item
// created since is not listed either: as newest first, where both land
// before the cursor. Every item left alone is listed exactly once, in
// order (L2).
func TestOldestFirstListsOnlyWhatWasThereWhenPagingBegan(t *testing.T) {
	t.Parallel()
	began := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	now := began
	store, live := libraryOf(20, began.Add(-time.Millisecond), true)
	s := New(Config{Now: func() time.Time { return now }}, nil, visibleUsers{}, nil, store.stores(), nil)
	owner := domain.NewID(domain.UserIDPrefix)
	// An item changed in the millisecond the run began is past its end too.
	changed := map[string]bool{}
	move := func(e Entry) {
		for i := range store.rows {
			if store.rows[i].ContentID == e.ContentID && store.rows[i].Version == e.Version {
				store.rows[i].LastModified, store.rows[i].Version = now, e.Version+1
				store.index[e.ContentID] = store.rows[i]
			}
		}
		changed[e.ContentID] = true
	}
	got, _ := pageAll(t, s, owner, OldestFirst, 3, func(page int) {
		now = now.Add(time.Duration(page-1) * time.Second) // the first change at the very millisecond
		switch page {
		case 1:
			move(live[len(live)-1]) // the oldest, shown on the first page
		case 2:
			move(live[0]) // the newest, not yet reached
		case 3:
			store.rows = append(store.rows, Entry{PrincipalID: "u", ContentID: domain.NewID(domain.ContentIDPrefix),
				Visibility: VisibilityPublic, LastModified: now, Version: 1}) // created while paging
			store.index[store.rows[len(store.rows)-1].ContentID] = store.rows[len(store.rows)-1]
		}
	})
	count := map[string]int{}
	for _, id := range got {
		count[id]++
	}
	for id, n := range count {
		if n > 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	for _, e := range live {
		if !changed[e.ContentID] && count[e.ContentID] != 1 {
			t.Errorf("%s, left alone, listed %d times", e.ContentID, count[e.ContentID])
		}
	}
	if count[live[0].ContentID] != 0 || len(got) != len(live)-1 {
		t.Errorf("listed %d items (the newest, changed before it was reached, %d times); want the %d left alone and the oldest once",
			len(got), count[live[0].ContentID], len(live)-2)
	}
	// A run begun now lists the changed items at the end, newest last.
	again, _ := pageAll(t, s, owner, OldestFirst, 100, nil)
	if len(again) != len(live)+1 || again[len(again)-1] != store.rows[len(store.rows)-1].ContentID {
		t.Errorf("a new run listed %d items ending %v; want %d ending with the created one", len(again), again[len(again)-3:], len(live)+1)
	}
}

// TestACursorBelongsToItsOrder: a cursor presented with the other order is
// refused naming cursor (read the other way it would list the items before
// it again); an order that is not newest or oldest is refused naming order.
func TestACursorBelongsToItsOrder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	store, _ := libraryOf(5, now.Add(-time.Hour), false)
	s := New(Config{Now: func() time.Time { return now }}, nil, visibleUsers{}, nil, store.stores(), nil)
	owner := domain.NewID(domain.UserIDPrefix)
	for _, tc := range []struct{ made, used Order }{{NewestFirst, OldestFirst}, {OldestFirst, NewestFirst}} {
		p, err := s.Library(context.Background(), domain.Principal{}, owner, tc.made, "", 2)
		if err != nil || p.Next == "" {
			t.Fatalf("%s first: %+v, %v", tc.made, p, err)
		}
		_, err = s.Library(context.Background(), domain.Principal{}, owner, tc.used, p.Next, 2)
		wantField(t, err, "cursor", "wrong_order")
	}
	for _, bad := range []Order{"", "Oldest", "asc", "newest "} {
		_, err := s.Library(context.Background(), domain.Principal{}, owner, bad, "", 2)
		wantField(t, err, "order", "oneof")
	}
}

// TestAnOldestFirstCursorEndsNoLaterThanNow (bad input gets a clear
// answer): an oldest-first run ends when its first page was read, and its
// cursors carry that end. A cursor crafted with an end years ahead was
// taken: its run listed every item changed while it paged again at the
// end of the list, a run with no end while the library changes. A cursor
// whose end is past now (beyond the clocks' skew) was not made here and
// is refused naming cursor; one made a moment ago on a process whose
// clock runs ahead is taken.
func TestAnOldestFirstCursorEndsNoLaterThanNow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	store, live := libraryOf(5, now.Add(-time.Hour), false)
	s := New(Config{Now: func() time.Time { return now }}, nil, visibleUsers{}, nil, store.stores(), nil)
	owner := domain.NewID(domain.UserIDPrefix)
	last := live[len(live)-1]
	for until, ok := range map[time.Time]bool{
		now.Add(24 * 365 * time.Hour):           false,
		now.Add(domain.ClockSkew + time.Second): false,
		now.Add(domain.ClockSkew):               true,
		now:                                     true,
	} {
		cursor := Cursor{Order: OldestFirst, Until: until, LastModified: last.LastModified, ContentID: last.ContentID}.Encode()
		_, err := s.Library(context.Background(), domain.Principal{}, owner, OldestFirst, cursor, 2)
		if ok && err != nil {
			t.Errorf("a cursor ending %v after now: %v", until.Sub(now), err)
		}
		if !ok {
			wantField(t, err, "cursor", "invalid")
		}
	}
}

// wantField fails unless err is ErrInvalid naming exactly field with code.
func wantField(t *testing.T, err error, field, code string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || !errors.Is(err, domain.ErrInvalid) || len(de.Fields) != 1 || de.Fields[0].Field != field || de.Fields[0].Code != code {
		t.Errorf("got %v, want ErrInvalid naming %s (%s)", err, field, code)
	}
}

// sessions is Callers for a page: a caller with a session is an active
// user, not an admin.
type sessions struct{ Callers }

func (sessions) Caller(_ context.Context, p domain.Principal) (*domain.Access, error) {
	if p.Anonymous() {
		return nil, nil
	}
	return &domain.Access{ID: p.UserID, Status: domain.StatusActive}, nil
}

// TestAPageNeverShowsWhatTheItemNoLongerSays: changes whose fan-out was
// lost (the library's rows and index entries still at the old version, the
// items' own rows moved on) never show through a page, whoever reads it
// and in either order: not the deleted item, not the item made private
// (to anonymous or logged-in viewers, the owner's own anonymous view
// included), not the one made loggedin to anonymous viewers, not an old
// name. They are hidden until their fan-out lands; hidden rows are refilled
// like dropped ones and the cursor passes them, so every item left alone
// is listed exactly once. Nothing is deleted on the verdict (L1, L3;
// docs/design/libraries.md, "the items' word").
func TestAPageNeverShowsWhatTheItemNoLongerSays(t *testing.T) {
	t.Parallel()
	newest := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	later := newest.Add(time.Hour)
	store, items := libraryOf(40, newest, false)
	// The 32 newest changed, the fan-out of each lost: deleted, made
	// private, made loggedin, renamed, or only changed (its description);
	// each change moves lastModified on, and so that each field is checked
	// on its own, every other one here does not. The 8 oldest are left
	// alone.
	kept := map[string]bool{}
	store.live = map[string]ItemState{}
	for i, e := range items {
		st := ItemState{ID: e.ContentID, Name: e.Name, Visibility: e.Visibility, LastModified: e.LastModified}
		if i%2 == 1 {
			st.LastModified = later.Add(time.Duration(i) * time.Millisecond)
		}
		switch {
		case i >= 32:
			kept[e.ContentID] = true
			continue
		case i%8 < 2:
			st.Deleted = true
		case i%8 < 4:
			st.Visibility = VisibilityPrivate
		case i%8 < 6:
			st.Visibility = VisibilityLoggedIn
		case i%8 == 6:
			st.Name = "renamed"
		}
		store.live[e.ContentID] = st
	}
	// A private item whose rows, at its version, a fan-out gone wrong also
	// put in the loggedin and public buckets: only its owner lists it.
	private := Entry{PrincipalID: "u", ContentID: domain.NewID(domain.ContentIDPrefix), Name: "private",
		Visibility: VisibilityPrivate, LastModified: newest.Add(-time.Hour), Version: 2}
	store.rows, store.index[private.ContentID] = append(store.rows, private), private
	store.misplaced = map[string][]Entry{BucketLoggedIn: {private}, BucketPublic: {private}}
	var deletes int
	store.deleted = &deletes
	s := New(Config{Now: func() time.Time { return later.Add(time.Hour) }, Background: func(f func()) { f() }},
		sessions{}, visibleUsers{}, nil, store.stores(), nil)
	owner := domain.NewID(domain.UserIDPrefix)
	viewers := map[string]domain.Principal{"anonymous": {}, "another session": {UserID: domain.NewID(domain.UserIDPrefix)}, "the owner": {UserID: owner}}
	for name, viewer := range viewers {
		for _, order := range []Order{NewestFirst, OldestFirst} {
			got, _ := pageAllAs(t, s, viewer, owner, order, 2, nil)
			listed := map[string]int{}
			for _, e := range got {
				listed[e.ContentID]++
				if _, changed := store.live[e.ContentID]; changed {
					st := store.live[e.ContentID]
					t.Errorf("%s, %s first: listed %s as %q (%s), the item is %q (%s, deleted %v)", name, order, e.ContentID, e.Name, e.Visibility, st.Name, st.Visibility, st.Deleted)
				}
			}
			want := maps.Clone(kept)
			want[private.ContentID] = viewer.UserID == owner
			for id := range want {
				if listed[id] != 1 && want[id] {
					t.Errorf("%s, %s first: %s, left alone, listed %d times", name, order, id, listed[id])
				}
				if listed[id] != 0 && !want[id] {
					t.Errorf("%s, %s first: %s, private, listed %d times", name, order, id, listed[id])
				}
			}
		}
	}
	if deletes != 0 {
		t.Errorf("%d rows deleted on the items' word; only the index may say a row is stale", deletes)
	}
}

// TestALeanPageCostsOneSlice: a page of lean rows is the slice alone (no
// index read, no read of the items), as the seed's page is; a page that
// mixes lean and checked rows checks only the checked ones (one round
// trip of checks beside each slice), and lists every row either way, in
// both orders (L1, L5; docs/design/libraries.md, "Lean rows").
func TestALeanPageCostsOneSlice(t *testing.T) {
	t.Parallel()
	newest := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, mixed := range []bool{false, true} {
		for _, order := range []Order{NewestFirst, OldestFirst} {
			store, live := libraryOf(30, newest, false)
			for i := range store.rows {
				store.rows[i].Lean = !mixed || i%3 != 0
			}
			var asked []string
			counting := &askedIndex{rowsOnly: store, asked: &asked}
			s := New(Config{Now: func() time.Time { return newest.Add(time.Hour) }}, nil, visibleUsers{}, nil,
				Stores{Library: counting, Content: itemsOf{r: store}}, nil)
			got, pages := pageAll(t, s, domain.NewID(domain.UserIDPrefix), order, 7, nil)
			if len(got) != len(live) {
				t.Fatalf("mixed %v, %s first: listed %d items, want %d", mixed, order, len(got), len(live))
			}
			if store.slices != pages {
				t.Errorf("mixed %v, %s first: %d slices for %d pages", mixed, order, store.slices, pages)
			}
			switch {
			case !mixed && (store.reads != 0 || store.states != 0):
				t.Errorf("%s first, all lean: %d index reads and %d reads of items; want none", order, store.reads, store.states)
			case mixed && (store.reads > pages || store.states != store.reads):
				t.Errorf("%s first, mixed: %d index reads, %d item reads for %d pages; want at most one each per page",
					order, store.reads, store.states, pages)
			}
			if mixed {
				want, lean := map[string]bool{}, map[string]bool{}
				for _, r := range store.rows {
					want[r.ContentID], lean[r.ContentID] = !r.Lean, r.Lean
				}
				for _, id := range asked {
					if lean[id] {
						t.Errorf("%s first, mixed: a lean row's item %s was checked", order, id)
					}
					delete(want, id)
				}
				maps.DeleteFunc(want, func(_ string, checked bool) bool { return !checked })
				if len(want) != 0 {
					t.Errorf("%s first, mixed: %d checked rows were never checked", order, len(want))
				}
			}
		}
	}
}

// askedIndex is rowsOnly that records which ids its index reads were asked
// for.
type askedIndex struct {
	*rowsOnly
	asked *[]string
}

func (a *askedIndex) Index(ctx context.Context, principalID string, ids []string) (map[string]Entry, error) {
	*a.asked = append(*a.asked, ids...)
	return a.rowsOnly.Index(ctx, principalID, ids)
}

// countedUsers is visibleUsers counting its reads.
type countedUsers struct {
	visibleUsers
	profiles atomic.Int32
}

func (c *countedUsers) Profile(ctx context.Context, id string) (domain.Profile, error) {
	c.profiles.Add(1)
	return c.visibleUsers.Profile(ctx, id)
}

// TestOwnPageTakesTheAccountFromTheSession: the owner's own library is
// not checked with a second read of their account (the session's read
// found it visible), so each of its pages is the one slice; a principal
// without that read (a system caller) still reads the account per page.
func TestOwnPageTakesTheAccountFromTheSession(t *testing.T) {
	t.Parallel()
	newest := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	owner := domain.NewID(domain.UserIDPrefix)
	for _, tc := range []struct {
		name    string
		viewer  domain.Principal
		perPage int32
	}{
		{"the owner's session", domain.Principal{UserID: owner, Account: &domain.Access{ID: owner, Status: domain.StatusActive}}, 0},
		{"the owner without the session's read", domain.Principal{UserID: owner}, 1},
	} {
		store, live := libraryOf(30, newest, false)
		users := &countedUsers{}
		s := New(Config{Now: func() time.Time { return newest.Add(time.Hour) }}, nil, users, nil, store.stores(), nil)
		got, pages := pageAllAs(t, s, tc.viewer, owner, NewestFirst, 7, nil)
		if len(got) != len(live) {
			t.Errorf("%s: listed %d items, want %d", tc.name, len(got), len(live))
		}
		if n := users.profiles.Load(); n != tc.perPage*int32(pages) {
			t.Errorf("%s: %d reads of the account for %d pages, want %d a page", tc.name, n, pages, tc.perPage)
		}
	}
}
