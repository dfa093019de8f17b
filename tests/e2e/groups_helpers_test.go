//go:build integration

package e2e

import (
	"context"
	"net/http"
	"testing"

	"shelf/internal/app"
	"shelf/tests/testkit"
)

// groupResp is the Group schema as tests read it.
type groupResp struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	MaxMembers  *int   `json:"maxMembers"`
	MemberCount int    `json:"memberCount"`
	CreatedBy   string `json:"createdBy"`
	CreatedAt   string `json:"createdAt"`
}

// groupMemberBody is the GroupMember schema as tests read it.
type groupMemberBody struct {
	PrincipalID string `json:"principalId"`
	Role        string `json:"role"`
}

type groupMemberListBody struct {
	Items      []groupMemberBody `json:"items"`
	NextCursor string            `json:"nextCursor"`
}

// groupWorld is an app with an admin (moderators) and a user who creates
// groups, logged in.
type groupWorld struct {
	*moderators
	owner    userBody
	ownerAPI *testkit.API
}

func newGroupWorld(t *testing.T, env map[string]string, opts ...app.Option) *groupWorld {
	t.Helper()
	m := newModerators(t, env, opts...)
	owner, ownerAPI := m.member(t)
	return &groupWorld{moderators: m, owner: owner, ownerAPI: ownerAPI}
}

// postGroup sends POST /v1/groups as api.
func postGroup(api *testkit.API, body map[string]any) *testkit.Response {
	return api.Send(http.MethodPost, "/v1/groups", body)
}

// mustPostGroup creates a group named groupName (maxMembers when > 0) as
// api, failing unless it answers 201.
func mustPostGroup(t *testing.T, api *testkit.API, groupName string, maxMembers int) groupResp {
	t.Helper()
	body := map[string]any{"name": groupName}
	if maxMembers > 0 {
		body["maxMembers"] = maxMembers
	}
	r := postGroup(api, body)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create group %s: %d %s", groupName, r.StatusCode, r.Body)
	}
	var g groupResp
	r.JSON(t, &g)
	return g
}

// putGroupMember adds or changes a member as api's user; making a manager
// sends the user's password (every account here has testPassword), as
// the API asks.
func putGroupMember(api *testkit.API, groupID, userID, role string) *testkit.Response {
	body := map[string]string{"role": role}
	if role == "manager" {
		body["currentPassword"] = testPassword
	}
	return api.Send(http.MethodPut, "/v1/groups/"+groupID+"/members/"+userID, body)
}

func deleteGroupMember(api *testkit.API, groupID, userID string) *testkit.Response {
	return api.Do(http.MethodDelete, "/v1/groups/"+groupID+"/members/"+userID, "", nil)
}

// mustPutGroupMember adds or changes a member, failing unless it answers want.
func mustPutGroupMember(t *testing.T, api *testkit.API, groupID, userID, role string, want int) {
	t.Helper()
	if r := putGroupMember(api, groupID, userID, role); r.StatusCode != want {
		t.Fatalf("PUT member %s as %s: %d %s (want %d)", userID, role, r.StatusCode, r.Body, want)
	}
}

// listGroupMembers pages through a group's members with limit as api.
func listGroupMembers(t *testing.T, api *testkit.API, groupID string, limit int) []groupMemberBody {
	t.Helper()
	var all []groupMemberBody
	cursor := ""
	for pages := 0; pages < 10000; pages++ {
		path := "/v1/groups/" + groupID + "/members?limit=" + itoa(limit)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := api.Get(path)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("list members: %d %s", r.StatusCode, r.Body)
		}
		var page groupMemberListBody
		r.JSON(t, &page)
		if len(page.Items) > limit {
			t.Fatalf("page of %d members with limit %d", len(page.Items), limit)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
	t.Fatal("the member list never ended")
	return nil
}

// groupState is a group as stored: the row's counts and pending change,
// the member rows and the reverse index rows of the given users.
type groupState struct {
	MemberCount  int
	ManagerCount int
	MaxMembers   int
	PendingUser  string
	Members      map[string]string // user id -> role, from group_members
	Index        map[string]string // user id -> role, from groups_by_member
}

// readGroupState reads a group straight from Cassandra; users lists whose
// reverse index rows to read.
func readGroupState(t *testing.T, db *testkit.DB, groupID string, users []string) groupState {
	t.Helper()
	ctx := context.Background()
	var st groupState
	err := db.Session.ContextQuery(ctx, "SELECT member_count, manager_count, max_members, pending_user FROM groups WHERE id = ?", nil).
		Bind(groupID).Scan(&st.MemberCount, &st.ManagerCount, &st.MaxMembers, &st.PendingUser)
	if err != nil {
		t.Fatalf("read group %s: %v", groupID, err)
	}
	var rows []struct {
		UserID string
		Role   string
	}
	if err := db.Session.ContextQuery(ctx, "SELECT user_id, role FROM group_members WHERE group_id = ?", nil).
		Bind(groupID).SelectRelease(&rows); err != nil {
		t.Fatal(err)
	}
	st.Members = map[string]string{}
	for _, r := range rows {
		st.Members[r.UserID] = r.Role
	}
	st.Index = map[string]string{}
	for _, u := range users {
		var role string
		err := db.Session.ContextQuery(ctx, "SELECT role FROM groups_by_member WHERE user_id = ? AND group_id = ?", nil).
			Bind(u, groupID).Scan(&role)
		if err == nil {
			st.Index[u] = role
		}
	}
	return st
}

// checkGroupAgrees asserts the stored group is consistent once every
// operation has answered: no change pending, member_count and
// manager_count equal the member rows, at most maxMembers of them (L7),
// at least one manager, and the reverse index of every user in users
// agrees with the member rows.
func checkGroupAgrees(t *testing.T, db *testkit.DB, groupID string, users []string) groupState {
	t.Helper()
	st := readGroupState(t, db, groupID, users)
	managers := 0
	for _, role := range st.Members {
		if role == "manager" {
			managers++
		}
	}
	if st.PendingUser != "" {
		t.Errorf("group %s: change of %s still pending", groupID, st.PendingUser)
	}
	if st.MemberCount != len(st.Members) {
		t.Errorf("group %s: member_count %d, %d member rows", groupID, st.MemberCount, len(st.Members))
	}
	if st.ManagerCount != managers || managers < 1 {
		t.Errorf("group %s: manager_count %d, %d manager rows", groupID, st.ManagerCount, managers)
	}
	if st.MaxMembers > 0 && len(st.Members) > st.MaxMembers {
		t.Errorf("L7 broken: group %s has %d members, maxMembers %d", groupID, len(st.Members), st.MaxMembers)
	}
	for _, u := range users {
		if st.Members[u] != st.Index[u] {
			t.Errorf("group %s, user %s: member row %q, reverse index %q", groupID, u, st.Members[u], st.Index[u])
		}
	}
	return st
}

// signupJoiners signs up n users (not logged in) and returns their ids.
func signupJoiners(t *testing.T, api *testkit.API, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		nm := name("joiner")
		ids[i] = mustSignup(t, api, nm, nm+"@example.org").ID
	}
	return ids
}
