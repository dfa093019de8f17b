//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain/library"
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
// owner's oldest item is held (a test hook), and an oldest-first run's
// first page, read meanwhile, shows the item from its old row. Then the
// update goes on and answers, and the rest of the run lists every item
// once, the changed one included, which sits at its new place past the
// run's end (L2). Both ways an update keeps it:
//   - a lean item, held before it removes its rows: it takes its new
//     lastModified once they are gone (a time taken before the removals
//     would have the run list the item twice);
//   - an item that is not lean (shared past SHELF_LEAN_MEMBERS, here 1),
//     held before its compare-and-set is sent: it takes its place by a
//     second one once the first has answered (the time taken before the
//     first, as its place, would have it listed twice).
func TestOldestFirstRunListsAnItemChangedMeanwhileOnce(t *testing.T) {
	t.Parallel()
	t.Run("lean", func(t *testing.T) {
		t.Parallel()
		oldestRunAcrossAHeldUpdate(t, nil, func(h *library.Hooks, hold func(string)) {
			h.BeforeRemove = func(contentID, _ string) { hold(contentID) }
		})
	})
	t.Run("not lean", func(t *testing.T) {
		t.Parallel()
		oldestRunAcrossAHeldUpdate(t, map[string]string{"SHELF_LEAN_MEMBERS": "1"}, func(h *library.Hooks, hold func(string)) {
			h.BeforeRecord = hold
		})
	})
}

// oldestRunAcrossAHeldUpdate is TestOldestFirstRunListsAnItemChangedMeanwhileOnce
// in an app with env, the update held where hook calls hold.
func oldestRunAcrossAHeldUpdate(t *testing.T, env map[string]string, hook func(*library.Hooks, func(string))) {
	m := newModerators(t, env)
	owner, ownerAPI := m.member(t)
	friend, _ := m.member(t)
	first := createContent(t, ownerAPI, "first", "public")
	share(t, ownerAPI, first.ID, friend.ID, "viewer")
	for i := range 3 {
		createContent(t, ownerAPI, "later "+itoa(i), "public")
	}
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := sync.OnceFunc(func() { close(release) })
	defer free() // a failed check lets the held update go
	hook(&m.app.Contents.Hooks, func(contentID string) {
		if contentID == first.ID {
			once.Do(func() { close(reached); <-release })
		}
	})
	updated := make(chan contentBody, 1)
	go func() {
		var c contentBody
		if r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+first.ID, map[string]string{"name": "renamed"}); r.StatusCode == http.StatusOK {
			r.JSON(t, &c)
		}
		updated <- c
	}()
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the update never reached the hook")
	}
	path := "/v1/users/" + owner.ID + "/library?limit=2&order=oldest"
	var page itemPage
	ownerAPI.Get(path).JSON(t, &page)
	free()
	answer := <-updated
	if answer.Name != "renamed" {
		t.Fatalf("the update answered %+v; want the item renamed", answer)
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
	if n := countRows(t, m.db, `SELECT id FROM content WHERE id = ? AND placing = true ALLOW FILTERING`, first.ID); n != 0 {
		t.Errorf("the item is still placing after its update answered")
	}
	for _, it := range libraryIn(t, ownerAPI, "/v1/users/"+owner.ID+"/library", "newest", 10) {
		if it.ID == first.ID && !it.LastModified.Equal(answer.LastModified) {
			t.Errorf("the library shows the item last modified at %s; the update answered %s", it.LastModified, answer.LastModified)
		}
	}
}

// TestOldestFirstRunsBesideConcurrentUpdates: items past their lean rows
// (SHELF_LEAN_MEMBERS 1, each shared with a friend) are updated by four
// writers without pause while four readers page oldest-first runs of the
// owner's library, three items a page, for five seconds or more (until
// 20 runs beside 100 updates): no run lists an item twice (L2). Were an
// item's place taken before its compare-and-set, a run whose first page
// read the item while that compare-and-set was in flight would begin
// after the place and list the item again there; the place taken by a
// second compare-and-set once the first has answered is past the run's
// end (docs/design/libraries.md, oldest first).
func TestOldestFirstRunsBesideConcurrentUpdates(t *testing.T) {
	t.Parallel()
	m := newModerators(t, map[string]string{"SHELF_LEAN_MEMBERS": "1"})
	owner, ownerAPI := m.member(t)
	friend, _ := m.member(t)
	var ids []string
	for i := range 20 {
		c := createContent(t, ownerAPI, "item "+itoa(i), "public")
		share(t, ownerAPI, c.ID, friend.ID, "viewer")
		ids = append(ids, c.ID)
	}
	path := "/v1/users/" + owner.ID + "/library?limit=3&order=oldest"
	stop := make(chan struct{})
	var updates, runs atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := ids[(n*7+w*5)%len(ids)]
				if r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+id, map[string]string{"name": fmt.Sprintf("w%d n%d", w, n)}); r.StatusCode != http.StatusOK {
					t.Errorf("update: %d %s", r.StatusCode, r.Body)
					return
				}
				updates.Add(1)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if listed, err := oldestRun(ownerAPI, path); err != nil {
					t.Error(err)
					return
				} else if twice := listedTwice(listed); twice != "" {
					t.Errorf("an oldest-first run listed %s twice: %v", twice, listed)
				}
				runs.Add(1)
			}
		})
	}
	// Five seconds at least, and until there are enough of each to show
	// something: a machine busy with other tests takes longer for them.
	start := time.Now()
	for time.Since(start) < 5*time.Second || (runs.Load() < 20 || updates.Load() < 100) && time.Since(start) < time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d oldest-first runs beside %d updates in %s", runs.Load(), updates.Load(), time.Since(start).Round(time.Second))
	if runs.Load() < 20 || updates.Load() < 100 {
		t.Fatalf("only %d runs beside %d updates in a minute: too few to show anything", runs.Load(), updates.Load())
	}
}

// oldestRun pages a run from path to its end and returns the ids it listed.
func oldestRun(api *testkit.API, path string) ([]string, error) {
	var listed []string
	cursor := ""
	for range 100 {
		p := path
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := api.Get(p)
		var page itemPage
		if r.StatusCode != http.StatusOK {
			return listed, fmt.Errorf("GET %s: %d %s", p, r.StatusCode, r.Body)
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			return listed, err
		}
		for _, it := range page.Items {
			listed = append(listed, it.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			return listed, nil
		}
	}
	return listed, fmt.Errorf("a run of %s did not end in 100 pages", path)
}

// listedTwice is an id listed more than once ("" if none).
func listedTwice(ids []string) string {
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			return id
		}
		seen[id] = true
	}
	return ""
}
