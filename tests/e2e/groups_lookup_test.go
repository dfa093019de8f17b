//go:build integration

package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"shelf/internal/metrics"
	"shelf/tests/testkit"
)

// groupMembershipBody is the GroupMembership schema as tests read it.
type groupMembershipBody struct {
	Group groupResp `json:"group"`
	Role  string    `json:"role"`
}

type groupMembershipListBody struct {
	Items      []groupMembershipBody `json:"items"`
	NextCursor string                `json:"nextCursor"`
}

// listUserGroups pages through a user's groups with limit as api, and
// checks they come in group id order, none twice.
func listUserGroups(t *testing.T, api *testkit.API, userID string, limit int) []groupMembershipBody {
	t.Helper()
	all := pageAll[groupMembershipBody](t, api, "/v1/users/"+userID+"/groups", limit)
	for i := 1; i < len(all); i++ {
		if all[i].Group.ID <= all[i-1].Group.ID {
			t.Fatalf("group %s after %s: not in id order, or twice", all[i].Group.ID, all[i-1].Group.ID)
		}
	}
	return all
}

// TestGroupLookupsForTheConsole: a group found by its name (anyone,
// case-insensitively), and a user's groups with their roles, paged, for
// the user and admins only; bad input answers 400 naming the field.
func TestGroupLookupsForTheConsole(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	alice, aliceAPI := w.member(t)
	_, strangerAPI := w.member(t)

	t.Run("by name", func(t *testing.T) {
		n := name("Readers.")
		g := mustPostGroup(t, w.ownerAPI, n, 4)
		for _, asked := range []string{n, strings.ToUpper(n), strings.ToLower(n), url.PathEscape(n)} {
			for who, api := range map[string]*testkit.API{"anonymous": w.api, "stranger": strangerAPI} {
				r := api.Get("/v1/groups/by-name/" + asked)
				var got groupResp
				r.JSON(t, &got)
				if r.StatusCode != http.StatusOK || got.ID != g.ID || got.Name != n || got.MemberCount != 1 ||
					got.MaxMembers == nil || *got.MaxMembers != 4 {
					t.Fatalf("%s by name %q: %d %s", who, asked, r.StatusCode, r.Body)
				}
			}
		}
		// Unknown names, names breaking the rules and a username are not found.
		for _, asked := range []string{name("nobody"), "x", "bad%20name", alice.Username} {
			r := w.api.Get("/v1/groups/by-name/" + asked)
			if r.StatusCode != http.StatusNotFound || r.Problem(t).Code != "not_found" {
				t.Errorf("by name %q: %d %s", asked, r.StatusCode, r.Body)
			}
		}
		// A bad token is 401, as on every route.
		if r := w.api.As("u_nope.nope").Get("/v1/groups/by-name/" + n); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("bad token: %d %s", r.StatusCode, r.Body)
		}
	})

	t.Run("a user's groups", func(t *testing.T) {
		var made []groupResp
		for i := 0; i < 5; i++ {
			made = append(made, mustPostGroup(t, w.ownerAPI, name("shelf"), 0))
		}
		want := map[string]string{}
		for i, g := range made[:3] {
			role := "member"
			if i == 1 {
				role = "manager"
			}
			mustPutGroupMember(t, w.ownerAPI, g.ID, alice.ID, role, http.StatusCreated)
			want[g.ID] = role
		}
		for _, limit := range []int{1, 2, 3, 100} {
			got := listUserGroups(t, aliceAPI, alice.ID, limit)
			if len(got) != 3 {
				t.Fatalf("limit %d: alice's groups %+v", limit, got)
			}
			for _, m := range got {
				if want[m.Group.ID] != m.Role || m.Group.Name == "" || m.Group.MemberCount != 2 {
					t.Fatalf("limit %d: %+v, want role %q and two members", limit, m, want[m.Group.ID])
				}
			}
		}
		// An admin sees anyone's; the owner's list holds every group they made, as manager.
		if got := listUserGroups(t, w.admin, alice.ID, 2); len(got) != 3 {
			t.Fatalf("admin's view of alice's groups: %+v", got)
		}
		mine := listUserGroups(t, w.ownerAPI, w.owner.ID, 2)
		ids := []string{}
		for _, m := range mine {
			if m.Role != "manager" {
				t.Fatalf("owner's role in %s: %s", m.Group.ID, m.Role)
			}
			ids = append(ids, m.Group.ID)
		}
		for _, g := range made {
			if !slices.Contains(ids, g.ID) {
				t.Fatalf("owner's groups %v lack %s", ids, g.ID)
			}
		}
		// Leaving and a role change show on the next read.
		if r := deleteGroupMember(aliceAPI, made[0].ID, alice.ID); r.StatusCode != http.StatusNoContent {
			t.Fatalf("alice leaves: %d %s", r.StatusCode, r.Body)
		}
		mustPutGroupMember(t, w.ownerAPI, made[2].ID, alice.ID, "manager", http.StatusOK)
		got := listUserGroups(t, aliceAPI, alice.ID, 10)
		if len(got) != 2 || got[0].Group.ID > got[1].Group.ID {
			t.Fatalf("after leaving: %+v", got)
		}
		for _, m := range got {
			if m.Group.ID == made[0].ID || m.Role != "manager" {
				t.Fatalf("after leaving and a promotion: %+v", got)
			}
		}

		// Who may call: the user and admins.
		if r := w.api.Get("/v1/users/" + alice.ID + "/groups"); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous: %d %s", r.StatusCode, r.Body)
		}
		if r := strangerAPI.Get("/v1/users/" + alice.ID + "/groups"); r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "forbidden" {
			t.Errorf("another user: %d %s", r.StatusCode, r.Body)
		}
		for _, id := range []string{"u_aaaaaaaaaaaaaaaaaaaaaaaaaa", "nope", made[0].ID} {
			if r := w.admin.Get("/v1/users/" + id + "/groups"); r.StatusCode != http.StatusNotFound {
				t.Errorf("admin, user %s: %d %s", id, r.StatusCode, r.Body)
			}
		}
		// Bad input is 400 naming the field.
		for query, field := range map[string]string{
			"limit=0":              "limit",
			"limit=101":            "limit",
			"limit=05":             "limit",
			"cursor=nope":          "cursor",
			"cursor=" + made[0].ID: "cursor",
			"cursor=a&cursor=b":    "cursor",
			"limit=1&limit=2":      "limit",
			"cursor=%zz":           "query",
		} {
			r := aliceAPI.Get("/v1/users/" + alice.ID + "/groups?" + query)
			if r.StatusCode != http.StatusBadRequest || len(r.Problem(t).Errors) == 0 || r.Problem(t).Errors[0].Field != field {
				t.Errorf("?%s: %d %s, want 400 naming %s", query, r.StatusCode, r.Body, field)
			}
		}
		// A user in no group has an empty list, without nextCursor.
		loner, lonerAPI := w.member(t)
		var empty groupMembershipListBody
		r := lonerAPI.Get("/v1/users/" + loner.ID + "/groups")
		r.JSON(t, &empty)
		if r.StatusCode != http.StatusOK || len(empty.Items) != 0 || empty.NextCursor != "" || !strings.Contains(string(r.Body), `"items":[]`) {
			t.Errorf("no groups: %d %s", r.StatusCode, r.Body)
		}
	})
}

// TestAUsersGroupsCountAPendingChangeAsRecorded stops a removal and a
// role change right after their compare-and-set (recorded in the group
// row, no member row written, as a crash would leave them): the user's
// list already shows what was recorded, and so does it once the next
// change of the group finishes them.
func TestAUsersGroupsCountAPendingChangeAsRecorded(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	alice, aliceAPI := w.member(t)
	var ids []string
	for i := 0; i < 3; i++ {
		g := mustPostGroup(t, w.ownerAPI, name("pending"), 0)
		mustPutGroupMember(t, w.ownerAPI, g.ID, alice.ID, "member", http.StatusCreated)
		ids = append(ids, g.ID)
	}
	sort.Strings(ids)
	crashOnce(w, "remove", "cas")
	if r := deleteGroupMember(w.ownerAPI, ids[0], alice.ID); r.StatusCode != http.StatusInternalServerError {
		t.Fatalf("crashed removal: %d %s", r.StatusCode, r.Body)
	}
	crashOnce(w, "set", "cas")
	if r := putGroupMember(w.ownerAPI, ids[1], alice.ID, "manager"); r.StatusCode != http.StatusInternalServerError {
		t.Fatalf("crashed promotion: %d %s", r.StatusCode, r.Body)
	}
	w.app.Groups.Hooks.AfterStep = nil
	if st := readGroupState(t, w.db, ids[0], []string{alice.ID}); st.PendingUser != alice.ID || st.Index[alice.ID] != "member" {
		t.Fatalf("the removal is not left pending: %+v", st)
	}
	// With limit 1 the first page holds nothing (its group's removal is
	// pending) and still carries a cursor, which listUserGroups follows.
	check := func(when string) {
		t.Helper()
		for _, limit := range []int{1, 3} {
			got := listUserGroups(t, aliceAPI, alice.ID, limit)
			if len(got) != 2 || got[0].Group.ID != ids[1] || got[0].Role != "manager" ||
				got[1].Group.ID != ids[2] || got[1].Role != "member" {
				t.Fatalf("%s, limit %d: %+v", when, limit, got)
			}
		}
	}
	check("pending")
	// The next change of each group finishes what is pending there.
	for _, id := range ids[:2] {
		mustPutGroupMember(t, w.ownerAPI, id, w.owner.ID, "manager", http.StatusOK)
		checkGroupAgrees(t, w.db, id, []string{alice.ID, w.owner.ID})
	}
	check("finished")
}

// TestGroupLookupsCostWhatTheModelSays: a group by name waits for two
// round trips (claim, group), a page of one's own groups for three
// (session, the index slice, the page's groups at once), by the api's own
// count: every request, at the best of three sends (fewestTrips).
func TestGroupLookupsCostWhatTheModelSays(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	mt := metrics.New()
	a, api := newObservedApp(t, db, mt, mt, mt)
	m := withAdmin(t, a, api, db)
	u, uAPI := m.member(t)
	var groupNames []string
	for range 6 {
		g := mustPostGroup(t, uAPI, name("costly"), 0)
		groupNames = append(groupNames, g.Name)
	}
	for _, n := range groupNames {
		if trips, _ := fewestTrips(t, api, "/v1/groups/by-name/{name}", func() *testkit.Response { return api.Get("/v1/groups/by-name/" + n) }); trips != 2 {
			t.Errorf("group %s by name: %d round trips at best of three sends, want 2", n, trips)
		}
	}
	path, pages := "/v1/users/"+u.ID+"/groups?limit=2", 0
	for {
		var page struct {
			Items      []groupMembershipBody `json:"items"`
			NextCursor string                `json:"nextCursor"`
		}
		trips, r := fewestTrips(t, api, "/v1/users/{id}/groups", func() *testkit.Response { return uAPI.Get(path) })
		if trips != 3 {
			t.Errorf("page %d of one's own groups: %d round trips at best of three sends, want 3", pages+1, trips)
		}
		r.JSON(t, &page)
		pages++
		if page.NextCursor == "" {
			break
		}
		path = "/v1/users/" + u.ID + "/groups?limit=2&cursor=" + page.NextCursor
	}
	if got := listUserGroups(t, uAPI, u.ID, 2); len(got) != 6 || pages != 3 {
		t.Fatalf("%d groups in %d pages of 2, want 6 in 3", len(got), pages)
	}
}
