//go:build integration

package e2e

import (
	"net/http"
	"slices"
	"testing"

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
