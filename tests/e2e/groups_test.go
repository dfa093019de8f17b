//go:build integration

package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/tests/testkit"
)

func TestCreateAndGetGroup(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	n := name("Team.")
	r := postGroup(w.ownerAPI, map[string]any{"name": n, "displayName": "The Team", "description": "line one\nline two", "maxMembers": 5})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var g groupResp
	r.JSON(t, &g)
	if !strings.HasPrefix(g.ID, "g_") || g.Name != n || g.DisplayName != "The Team" || g.Description != "line one\nline two" ||
		g.MaxMembers == nil || *g.MaxMembers != 5 || g.MemberCount != 1 || g.CreatedBy != w.owner.ID {
		t.Fatalf("created group: %+v", g)
	}
	if loc := r.Header.Get("Location"); loc != "/v1/groups/"+g.ID {
		t.Fatalf("Location %q", loc)
	}
	// Anyone may read it, with or without a session.
	for who, client := range map[string]*testkit.API{"anonymous": w.api, "owner": w.ownerAPI} {
		r := client.Get("/v1/groups/" + g.ID)
		var got groupResp
		r.JSON(t, &got)
		if r.StatusCode != http.StatusOK || got.ID != g.ID || got.Name != g.Name || got.MemberCount != 1 ||
			got.MaxMembers == nil || *got.MaxMembers != 5 || got.CreatedBy != w.owner.ID {
			t.Fatalf("%s GET: %d %s", who, r.StatusCode, r.Body)
		}
	}
	// Defaults: the display name is the name, no description, no limit.
	plain := mustPostGroup(t, w.ownerAPI, name("plain"), 0)
	if plain.DisplayName != plain.Name || plain.Description != "" || plain.MaxMembers != nil {
		t.Fatalf("defaults: %+v", plain)
	}
	// The creator is its first manager.
	members := listGroupMembers(t, w.ownerAPI, g.ID, 20)
	if len(members) != 1 || members[0] != (groupMemberBody{PrincipalID: w.owner.ID, Role: "manager"}) {
		t.Fatalf("members of a new group: %+v", members)
	}
	checkGroupAgrees(t, w.db, g.ID, []string{w.owner.ID})

	for _, path := range []string{"/v1/groups/g_aaaaaaaaaaaaaaaaaaaaaaaaaa", "/v1/groups/nope", "/v1/groups/" + w.owner.ID} {
		if r := w.api.Get(path); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
	// Anonymous creation is 401.
	if r := postGroup(w.api, map[string]any{"name": name("anon")}); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous create: %d %s", r.StatusCode, r.Body)
	}
}

func TestGroupNamesAreUniqueCaseInsensitively(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	n := name("Club")
	mustPostGroup(t, w.ownerAPI, n, 0)
	_, other := w.member(t)
	for _, taken := range []string{n, strings.ToUpper(n), strings.ToLower(n)} {
		r := postGroup(other, map[string]any{"name": taken})
		if r.StatusCode != http.StatusConflict || r.Problem(t).Code != "conflict" || !hasTaken(t, r, "name") {
			t.Fatalf("create %q again: %d %s", taken, r.StatusCode, r.Body)
		}
	}
	// A group name does not collide with a username, nor the reverse.
	mustPostGroup(t, w.ownerAPI, w.owner.Username, 0)
}

func TestGroupValidationNamesTheField(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	long := strings.Repeat("x", 1001)
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "x"}, "name"},
		{map[string]any{"name": "bad name"}, "name"},
		{map[string]any{"name": "zero\u200bwidth"}, "name"},
		{map[string]any{}, "name"},
		{map[string]any{"name": name("ok"), "displayName": ""}, "displayName"},
		{map[string]any{"name": name("ok"), "displayName": strings.Repeat("d", 65)}, "displayName"},
		{map[string]any{"name": name("ok"), "description": long}, "description"},
		{map[string]any{"name": name("ok"), "description": "bell\a"}, "description"},
		{map[string]any{"name": name("ok"), "maxMembers": 0}, "maxMembers"},
		{map[string]any{"name": name("ok"), "maxMembers": 100001}, "maxMembers"},
		{map[string]any{"name": name("ok"), "maxMembers": "ten"}, "maxMembers"},
		{map[string]any{"name": name("ok"), "owner": "me"}, "owner"},
	} {
		r := postGroup(w.ownerAPI, tc.body)
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("%v: %d %s", tc.body, r.StatusCode, r.Body)
			continue
		}
		p := r.Problem(t)
		if !slices.ContainsFunc(p.Errors, func(f struct {
			Field   string `json:"field"`
			Code    string `json:"code"`
			Message string `json:"message"`
		}) bool {
			return f.Field == tc.field
		}) {
			t.Errorf("%v: 400 does not name %s: %s", tc.body, tc.field, r.Body)
		}
	}
	// Every field at fault is named at once.
	r := postGroup(w.ownerAPI, map[string]any{"name": "-", "displayName": " ", "maxMembers": -1})
	if p := r.Problem(t); r.StatusCode != http.StatusBadRequest || len(p.Errors) != 3 {
		t.Fatalf("three bad fields: %d %s", r.StatusCode, r.Body)
	}
	// The member role too.
	g := mustPostGroup(t, w.ownerAPI, name("roles"), 0)
	u, _ := w.member(t)
	for _, body := range []string{`{"role":"owner"}`, `{"role":""}`, `{}`} {
		r := w.ownerAPI.Do(http.MethodPut, "/v1/groups/"+g.ID+"/members/"+u.ID, "application/json", []byte(body))
		if r.StatusCode != http.StatusBadRequest || len(r.Problem(t).Errors) == 0 || r.Problem(t).Errors[0].Field != "role" {
			t.Errorf("PUT %s: %d %s", body, r.StatusCode, r.Body)
		}
	}
}

func TestGroupMembershipRules(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	g := mustPostGroup(t, w.ownerAPI, name("rules"), 0)
	alice, aliceAPI := w.member(t)
	bob, bobAPI := w.member(t)
	stranger, strangerAPI := w.member(t)

	// Adding is 201, the same role again 200, a new role 200.
	mustPutGroupMember(t, w.ownerAPI, g.ID, alice.ID, "member", http.StatusCreated)
	mustPutGroupMember(t, w.ownerAPI, g.ID, alice.ID, "member", http.StatusOK)
	r := putGroupMember(w.ownerAPI, g.ID, bob.ID, "member")
	var m groupMemberBody
	r.JSON(t, &m)
	if r.StatusCode != http.StatusCreated || m != (groupMemberBody{PrincipalID: bob.ID, Role: "member"}) {
		t.Fatalf("add bob: %d %s", r.StatusCode, r.Body)
	}
	// Making a manager asks the manager's password: a session alone
	// (a stolen one) is refused, naming the field, and changes nothing.
	for _, body := range []map[string]string{{"role": "manager"}, {"role": "manager", "currentPassword": "not the password"}} {
		r := w.ownerAPI.Send(http.MethodPut, "/v1/groups/"+g.ID+"/members/"+alice.ID, body)
		if p := r.Problem(t); (r.StatusCode != http.StatusBadRequest && r.StatusCode != http.StatusUnauthorized) || len(p.Errors) != 1 || p.Errors[0].Field != "currentPassword" {
			t.Errorf("alice made a manager with %v: %d %s, want a refusal naming currentPassword", body, r.StatusCode, r.Body)
		}
		if st := checkGroupAgrees(t, w.db, g.ID, []string{alice.ID}); st.Members[alice.ID] != "member" {
			t.Fatalf("after a refused promotion alice is recorded as %q", st.Members[alice.ID])
		}
	}
	// A new role is 200 with it, and recorded; alice is a member again
	// after.
	for _, role := range []string{"manager", "member"} {
		r := putGroupMember(w.ownerAPI, g.ID, alice.ID, role)
		var m groupMemberBody
		r.JSON(t, &m)
		if r.StatusCode != http.StatusOK || m != (groupMemberBody{PrincipalID: alice.ID, Role: role}) {
			t.Fatalf("alice made %s: %d %s", role, r.StatusCode, r.Body)
		}
		if st := checkGroupAgrees(t, w.db, g.ID, []string{alice.ID}); st.Members[alice.ID] != role {
			t.Fatalf("alice made %s is recorded as %q", role, st.Members[alice.ID])
		}
	}

	// A plain member may neither add nor remove others, nor change roles.
	carol, _ := w.member(t)
	for _, r := range []struct {
		what string
		resp func() int
	}{
		{"member adds", func() int { return putGroupMember(aliceAPI, g.ID, carol.ID, "member").StatusCode }},
		{"member promotes self", func() int { return putGroupMember(aliceAPI, g.ID, alice.ID, "manager").StatusCode }},
		{"member removes other", func() int { return deleteGroupMember(aliceAPI, g.ID, bob.ID).StatusCode }},
		{"stranger adds self", func() int { return putGroupMember(strangerAPI, g.ID, stranger.ID, "member").StatusCode }},
		{"stranger adds another", func() int { return putGroupMember(strangerAPI, g.ID, carol.ID, "member").StatusCode }},
		{"stranger removes a member", func() int { return deleteGroupMember(strangerAPI, g.ID, bob.ID).StatusCode }},
		{"stranger removes a non-member", func() int { return deleteGroupMember(strangerAPI, g.ID, carol.ID).StatusCode }},
	} {
		if got := r.resp(); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", r.what, got)
		}
	}
	// Anonymous callers get 401 on every session route.
	for what, got := range map[string]int{
		"put":    putGroupMember(w.api, g.ID, carol.ID, "member").StatusCode,
		"delete": deleteGroupMember(w.api, g.ID, bob.ID).StatusCode,
		"list":   w.api.Get("/v1/groups/" + g.ID + "/members").StatusCode,
	} {
		if got != http.StatusUnauthorized {
			t.Errorf("anonymous %s: %d", what, got)
		}
	}
	// Unknown groups and users are 404.
	unknownGroup := domain.NewID(domain.GroupIDPrefix)
	for what, got := range map[string]int{
		"put, unknown group":          putGroupMember(w.ownerAPI, unknownGroup, carol.ID, "member").StatusCode,
		"put, malformed group":        putGroupMember(w.ownerAPI, "g_x", carol.ID, "member").StatusCode,
		"put, unknown user":           putGroupMember(w.ownerAPI, g.ID, domain.NewID(domain.UserIDPrefix), "member").StatusCode,
		"put, malformed user":         putGroupMember(w.ownerAPI, g.ID, "u_nope", "member").StatusCode,
		"put, a group as member":      putGroupMember(w.ownerAPI, g.ID, g.ID, "member").StatusCode,
		"delete, unknown group":       deleteGroupMember(w.ownerAPI, unknownGroup, bob.ID).StatusCode,
		"delete, not a member":        deleteGroupMember(w.ownerAPI, g.ID, carol.ID).StatusCode,
		"delete, self not a member":   deleteGroupMember(strangerAPI, g.ID, stranger.ID).StatusCode,
		"list, unknown group":         w.ownerAPI.Get("/v1/groups/" + unknownGroup + "/members").StatusCode,
		"list, unknown group (admin)": w.admin.Get("/v1/groups/" + unknownGroup + "/members").StatusCode,
	} {
		if got != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", what, got)
		}
	}
	if r := deleteGroupMember(w.ownerAPI, g.ID, carol.ID); r.Problem(t).Code != "not_member" {
		t.Errorf("removing a non-member: %s", r.Body)
	}

	// The members list: members and admins only.
	if got := strangerAPI.Get("/v1/groups/" + g.ID + "/members").StatusCode; got != http.StatusForbidden {
		t.Errorf("stranger lists members: %d", got)
	}
	want := map[string]string{w.owner.ID: "manager", alice.ID: "member", bob.ID: "member"}
	for who, api := range map[string]*testkit.API{"member": aliceAPI, "manager": w.ownerAPI, "admin": w.admin} {
		got := map[string]string{}
		for _, m := range listGroupMembers(t, api, g.ID, 100) {
			got[m.PrincipalID] = m.Role
		}
		if len(got) != len(want) || got[alice.ID] != "member" || got[w.owner.ID] != "manager" || got[bob.ID] != "member" {
			t.Errorf("%s lists %v, want %v", who, got, want)
		}
	}

	// A member leaves by themself; then they are not a member any more.
	if r := deleteGroupMember(bobAPI, g.ID, bob.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("bob leaves: %d %s", r.StatusCode, r.Body)
	}
	if r := deleteGroupMember(bobAPI, g.ID, bob.ID); r.StatusCode != http.StatusNotFound {
		t.Fatalf("bob leaves twice: %d %s", r.StatusCode, r.Body)
	}
	if got := bobAPI.Get("/v1/groups/" + g.ID + "/members").StatusCode; got != http.StatusForbidden {
		t.Errorf("a former member lists members: %d", got)
	}
	// A manager removes a member.
	if r := deleteGroupMember(w.ownerAPI, g.ID, alice.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("remove alice: %d %s", r.StatusCode, r.Body)
	}
	st := checkGroupAgrees(t, w.db, g.ID, []string{w.owner.ID, alice.ID, bob.ID, carol.ID})
	if len(st.Members) != 1 {
		t.Fatalf("members left: %v", st.Members)
	}
	if r := w.api.Get("/v1/groups/" + g.ID); !strings.Contains(string(r.Body), `"memberCount":1`) {
		t.Fatalf("GET after removals: %s", r.Body)
	}
}

func TestLastManagerCannotLeave(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	g := mustPostGroup(t, w.ownerAPI, name("mgr"), 0)
	alice, aliceAPI := w.member(t)
	mustPutGroupMember(t, w.ownerAPI, g.ID, alice.ID, "member", http.StatusCreated)

	// The only manager can neither leave nor step down.
	for what, r := range map[string]func() *testkit.Response{
		"leave":     func() *testkit.Response { return deleteGroupMember(w.ownerAPI, g.ID, w.owner.ID) },
		"step down": func() *testkit.Response { return putGroupMember(w.ownerAPI, g.ID, w.owner.ID, "member") },
	} {
		resp := r()
		if resp.StatusCode != http.StatusConflict || resp.Problem(t).Code != "last_manager" {
			t.Fatalf("only manager %s: %d %s", what, resp.StatusCode, resp.Body)
		}
	}
	// With a second manager, one can step down, and then the other is the
	// last one again.
	mustPutGroupMember(t, w.ownerAPI, g.ID, alice.ID, "manager", http.StatusOK)
	mustPutGroupMember(t, w.ownerAPI, g.ID, w.owner.ID, "member", http.StatusOK)
	if r := deleteGroupMember(aliceAPI, g.ID, alice.ID); r.StatusCode != http.StatusConflict || r.Problem(t).Code != "last_manager" {
		t.Fatalf("alice, now the only manager, leaves: %d %s", r.StatusCode, r.Body)
	}
	// The demoted owner may no longer manage; alice may.
	bob, _ := w.member(t)
	if r := putGroupMember(w.ownerAPI, g.ID, bob.ID, "member"); r.StatusCode != http.StatusForbidden {
		t.Fatalf("demoted owner adds: %d %s", r.StatusCode, r.Body)
	}
	mustPutGroupMember(t, aliceAPI, g.ID, bob.ID, "manager", http.StatusCreated)
	// Now alice may leave (bob manages), and remove the owner.
	if r := deleteGroupMember(aliceAPI, g.ID, w.owner.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("alice removes the owner: %d %s", r.StatusCode, r.Body)
	}
	if r := deleteGroupMember(aliceAPI, g.ID, alice.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("alice leaves: %d %s", r.StatusCode, r.Body)
	}
	st := checkGroupAgrees(t, w.db, g.ID, []string{w.owner.ID, alice.ID, bob.ID})
	if len(st.Members) != 1 || st.Members[bob.ID] != "manager" {
		t.Fatalf("left: %v", st.Members)
	}
}

func TestMemberListPaging(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	g := mustPostGroup(t, w.ownerAPI, name("paged"), 0)
	ids := signupJoiners(t, w.api, 7)
	for _, id := range ids {
		mustPutGroupMember(t, w.ownerAPI, g.ID, id, "member", http.StatusCreated)
	}
	want := append([]string{w.owner.ID}, ids...)
	slices.Sort(want)
	for _, limit := range []int{1, 2, 3, 8, 100} {
		var got []string
		for _, m := range listGroupMembers(t, w.ownerAPI, g.ID, limit) {
			got = append(got, m.PrincipalID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want each of %v exactly once, in order", limit, got, want)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?cursor=garbage", "?cursor=" + "Z2FyYmFnZQ"} {
		if r := w.ownerAPI.Get("/v1/groups/" + g.ID + "/members" + q); r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.StatusCode, r.Body)
		}
	}
}

// TestGroupDirectoryForContent exercises what the content feature calls:
// MemberRole, GroupsAmong and Exists, on real data (and GroupIDsOf, a
// deletion's job's).
func TestGroupDirectoryForContent(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	ctx := context.Background()
	groups := w.app.Groups
	g1 := mustPostGroup(t, w.ownerAPI, name("dir"), 0)
	g2 := mustPostGroup(t, w.ownerAPI, name("dir"), 0)
	alice, _ := w.member(t)
	mustPutGroupMember(t, w.ownerAPI, g1.ID, alice.ID, "member", http.StatusCreated)
	mustPutGroupMember(t, w.ownerAPI, g2.ID, alice.ID, "manager", http.StatusCreated)

	for _, tc := range []struct {
		group, user, role string
	}{
		{g1.ID, w.owner.ID, "manager"}, {g1.ID, alice.ID, "member"}, {g2.ID, alice.ID, "manager"},
	} {
		if role, err := groups.MemberRole(ctx, tc.group, tc.user); err != nil || role != tc.role {
			t.Errorf("MemberRole(%s, %s) = %q, %v; want %q", tc.group, tc.user, role, err, tc.role)
		}
	}
	unknown := domain.NewID(domain.GroupIDPrefix)
	for _, tc := range [][2]string{{g1.ID, w.id}, {unknown, alice.ID}, {"g_bad", alice.ID}, {g1.ID, "nobody"}} {
		if role, err := groups.MemberRole(ctx, tc[0], tc[1]); !errors.Is(err, domain.ErrNotFound) || err != domain.ErrNotFound || role != "" {
			t.Errorf("MemberRole(%s, %s) = %q, %v; want ErrNotFound", tc[0], tc[1], role, err)
		}
	}

	ids, err := groups.GroupIDsOf(ctx, alice.ID)
	slices.Sort(ids)
	want := []string{g1.ID, g2.ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("GroupIDsOf(alice) = %v, %v; want %v", ids, err, want)
	}
	if ids, err := groups.GroupIDsOf(ctx, w.id); err != nil || len(ids) != 0 {
		t.Fatalf("GroupIDsOf(admin, in no group) = %v, %v", ids, err)
	}
	for _, tc := range []struct {
		user string
		of   []string
		want []string
	}{
		{alice.ID, []string{g1.ID, unknown}, []string{g1.ID}},
		{alice.ID, []string{g2.ID, g1.ID}, want},
		{alice.ID, nil, nil},
		{w.id, []string{g1.ID, g2.ID}, nil},
		{"nobody", []string{g1.ID}, nil},
	} {
		got, err := groups.GroupsAmong(ctx, tc.user, tc.of)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Fatalf("GroupsAmong(%s, %v) = %v, %v; want %v", tc.user, tc.of, got, err, tc.want)
		}
	}
	// Leaving takes the group out of the user's list and role.
	if r := deleteGroupMember(w.ownerAPI, g1.ID, alice.ID); r.StatusCode != http.StatusNoContent {
		t.Fatal(r.StatusCode)
	}
	if ids, err := groups.GroupIDsOf(ctx, alice.ID); err != nil || !slices.Equal(ids, []string{g2.ID}) {
		t.Fatalf("GroupIDsOf(alice) after leaving g1 = %v, %v", ids, err)
	}
	if _, err := groups.MemberRole(ctx, g1.ID, alice.ID); err != domain.ErrNotFound {
		t.Fatalf("MemberRole after leaving: %v", err)
	}

	for id, want := range map[string]bool{g1.ID: true, g2.ID: true, unknown: false, "g_bad": false, alice.ID: false} {
		if ok, err := groups.Exists(ctx, id); err != nil || ok != want {
			t.Errorf("Exists(%s) = %v, %v; want %v", id, ok, err, want)
		}
	}
}
