//go:build integration

package e2e

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"shelf/tests/testkit"
)

// TestAPageNeverShowsWhatALostFanoutLeft: four changes of items shared
// with a friend (a deletion, one made private, one made loggedin, a
// rename) answer while every fan-out stops before its first library, as
// a crash would. No page, for any viewer, in either order, shows the
// deleted item, a private item to anyone but the library's owner (the
// item's owner's own anonymous view included), the loggedin item to
// anonymous callers, or the old name; the item left alone is listed. Once
// the outbox worker has run, each changed item arrives where its viewers
// may see it (a lost fan-out delays an arrival, never leaks). Both ways a
// page keeps it: lean rows, which each change removed before it was
// recorded, and rows that are not lean (items past SHELF_LEAN_MEMBERS,
// here 1: the share to the friend took each past it), which stay at the
// old versions and which the page checks against the items.
func TestAPageNeverShowsWhatALostFanoutLeft(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		rows int // in each public bucket once the fan-outs are lost
	}{{"lean rows", nil, 1}, {"checked rows", map[string]string{"SHELF_LEAN_MEMBERS": "1"}, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pagesWithLostFanouts(t, tc.env, tc.rows)
		})
	}
}

// pagesWithLostFanouts is TestAPageNeverShowsWhatALostFanoutLeft in an app
// with env, whose fan-outs, once lost, leave rows public rows in each
// library.
func pagesWithLostFanouts(t *testing.T, env map[string]string, rows int) {
	m := newModerators(t, env)
	owner, ownerAPI := m.member(t)
	friend, friendAPI := m.member(t)
	_, strangerAPI := m.member(t)
	items := map[string]contentBody{}
	for _, name := range []string{"deleted", "made private", "made loggedin", "renamed", "left alone"} {
		c := createContent(t, ownerAPI, name, "public")
		share(t, ownerAPI, c.ID, friend.ID, "viewer")
		items[name] = c
	}
	m.app.Contents.Hooks.BeforeMember = func(string, string) error { return errors.New("stopped here (test hook)") }
	for name, change := range map[string]map[string]string{
		"made private": {"visibility": "private"}, "made loggedin": {"visibility": "loggedin"}, "renamed": {"name": "new name"},
	} {
		if r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+items[name].ID, change); r.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, r.StatusCode, r.Body)
		}
	}
	if r := ownerAPI.Do(http.MethodDelete, "/v1/content/"+items["deleted"].ID, "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	for _, u := range []string{owner.ID, friend.ID} {
		if n := countRows(t, m.db, `SELECT content_id FROM library_by_principal WHERE principal_id = ? AND bucket = 'public'`, u); n != rows {
			t.Fatalf("%s's public bucket holds %d rows once the fan-outs stopped, want %d", u, n, rows)
		}
	}

	type viewer struct {
		api  *testkit.API
		name string
	}
	viewers := []viewer{{m.api, "anonymous"}, {strangerAPI, "another user"}, {m.admin, "an admin"}, {ownerAPI, "the item's owner"}, {friendAPI, "the friend"}}
	lists := func(api *testkit.API, library, order string) map[string]string {
		t.Helper()
		shown := map[string]string{}
		for _, it := range libraryIn(t, api, "/v1/users/"+library+"/library", order, 2) {
			shown[it.ID] = it.Name
		}
		return shown
	}
	for _, lib := range []string{owner.ID, friend.ID} {
		for _, v := range viewers {
			for _, order := range []string{"newest", "oldest"} {
				shown := lists(v.api, lib, order)
				if len(shown) != 1 || shown[items["left alone"].ID] != "left alone" {
					t.Errorf("with the fan-outs lost, %s reads %s's library (%s first) as %v; want only the item left alone", v.name, lib, order, shown)
				}
			}
		}
	}

	m.app.Contents.Hooks.BeforeMember = nil
	drain(t, m)
	for _, lib := range []string{owner.ID, friend.ID} {
		for _, v := range viewers {
			var want []string
			switch {
			case v.api == m.api:
				want = []string{"left alone", "new name"}
			case v.api == m.admin || (v.api == ownerAPI && lib == owner.ID) || (v.api == friendAPI && lib == friend.ID):
				want = []string{"left alone", "made loggedin", "made private", "new name"}
			default:
				want = []string{"left alone", "made loggedin", "new name"}
			}
			var got []string
			for _, name := range lists(v.api, lib, "newest") {
				got = append(got, name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("after the outbox worker, %s reads %s's library as %v, want %v", v.name, lib, got, want)
			}
		}
	}
}
