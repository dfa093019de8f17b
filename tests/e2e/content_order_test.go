//go:build integration

package e2e

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// TestOldestFirstOnBothLibraries: a user's and a group's library list the
// same items oldest first as newest first, reversed, for the owner, a
// member and anonymous callers alike; and a cursor belongs to the order it
// was made for: presented with the other, it is 400 naming cursor
// (wrong_order), while the default and an explicit newest are one order.
func TestOldestFirstOnBothLibraries(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	owner, ownerAPI := m.member(t)
	member, memberAPI := m.member(t)
	g := createGroup(t, ownerAPI, 0)
	addToGroup(t, ownerAPI, g.ID, member.ID, "member")
	for i := range 5 {
		c := createContent(t, ownerAPI, "item "+itoa(i), []string{"public", "loggedin", "private"}[i%3])
		share(t, ownerAPI, c.ID, g.ID, "viewer")
	}
	userLib, groupLib := "/v1/users/"+owner.ID+"/library", "/v1/groups/"+g.ID+"/library"
	for _, read := range []struct {
		who  string
		api  *testkit.API
		path string
		n    int
	}{
		{"the owner", ownerAPI, userLib, 5},
		{"anonymous", m.api, userLib, 2},
		{"a member", memberAPI, groupLib, 5},
		{"anonymous", m.api, groupLib, 2},
	} {
		for _, limit := range []int{1, 2, 10} {
			newest := ids(libraryIn(t, read.api, read.path, "newest", limit))
			oldestItems := libraryIn(t, read.api, read.path, "oldest", limit)
			inOrder(t, read.who+" reading "+read.path, oldestItems, "oldest")
			oldest := ids(oldestItems)
			slices.Reverse(oldest)
			if len(newest) != read.n || !slices.Equal(newest, oldest) {
				t.Errorf("%s reading %s, limit %d: newest first %v, oldest first reversed %v; want the same %d items",
					read.who, read.path, limit, newest, oldest, read.n)
			}
		}
	}
	for _, path := range []string{userLib, groupLib} {
		for _, tc := range []struct{ made, used string }{
			{"", "oldest"}, {"newest", "oldest"}, {"oldest", ""}, {"oldest", "newest"},
		} {
			first := path + "?limit=1"
			if tc.made != "" {
				first += "&order=" + tc.made
			}
			var pg itemPage
			if r := ownerAPI.Get(first); r.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %s", first, r.StatusCode, r.Body)
			} else {
				r.JSON(t, &pg)
			}
			if pg.NextCursor == "" {
				t.Fatalf("GET %s: no cursor", first)
			}
			next := path + "?limit=1&cursor=" + pg.NextCursor
			if tc.used != "" {
				next += "&order=" + tc.used
			}
			wantField(t, ownerAPI.Get(next), "cursor", "wrong_order")
		}
		// The default is newest: its cursors go on with order=newest.
		var pg itemPage
		ownerAPI.Get(path+"?limit=1").JSON(t, &pg)
		if r := ownerAPI.Get(path + "?limit=1&order=newest&cursor=" + pg.NextCursor); r.StatusCode != http.StatusOK {
			t.Errorf("a default cursor with order=newest: %d %s", r.StatusCode, r.Body)
		}
	}
}

// TestOldestFirstRunListsAnItemChangedMeanwhileOnce: an update of the
// owner's oldest item is held before it removes the item's rows (the
// library's test hook), and an oldest-first run's first page, read
// meanwhile, shows the item from its old row. The update takes its new
// lastModified once the rows are gone, so the rest of the run does not
// list the item again at its new place; every item left alone is listed
// once (L2). It listed the item twice while the time was taken before the
// removals.
func TestOldestFirstRunListsAnItemChangedMeanwhileOnce(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	owner, ownerAPI := m.member(t)
	first := createContent(t, ownerAPI, "first", "public")
	for i := range 3 {
		createContent(t, ownerAPI, "later "+itoa(i), "public")
	}
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := sync.OnceFunc(func() { close(release) })
	defer free() // a failed check lets the held update go
	m.app.Contents.Hooks.BeforeRemove = func(contentID, _ string) {
		if contentID == first.ID {
			once.Do(func() { close(reached); <-release })
		}
	}
	updated := make(chan int, 1)
	go func() {
		updated <- ownerAPI.Send(http.MethodPatch, "/v1/content/"+first.ID, map[string]string{"name": "renamed"}).StatusCode
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the update never reached its rows' removal")
	}
	path := "/v1/users/" + owner.ID + "/library?limit=2&order=oldest"
	var page itemPage
	ownerAPI.Get(path).JSON(t, &page)
	free()
	if code := <-updated; code != http.StatusOK {
		t.Fatalf("the update answered %d", code)
	}
	if len(page.Items) == 0 || page.Items[0].ID != first.ID {
		t.Fatalf("the first page, read while the update was held, is %+v; want the item %s first", page.Items, first.ID)
	}
	listed := page.Items
	for page.NextCursor != "" {
		cursor := page.NextCursor
		page = itemPage{}
		ownerAPI.Get(path+"&cursor="+cursor).JSON(t, &page)
		listed = append(listed, page.Items...)
	}
	count := map[string]int{}
	for _, it := range listed {
		count[it.ID]++
	}
	if len(listed) != 4 || len(count) != 4 {
		t.Errorf("the run listed %+v; want each of the 4 items once", listed)
	}
}
