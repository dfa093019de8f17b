package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAnUnknownPathSaysWhereToLook: a 404 for a path no route has says
// what to do next. A path ending in an empty segment is, most often, an id
// left out (a shell variable unset: /v1/content/$CID/members/$BOB_ID with
// BOB_ID empty), and says so, as does one with an empty segment inside
// (/v1/users/$BOB_ID/suspension); any other points at the routes' list.
func TestAnUnknownPathSaysWhereToLook(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	for _, tc := range []struct {
		method, path, want string
	}{
		{http.MethodPut, "/v1/content/c_x/members/", "ends with an empty segment"},
		{http.MethodGet, "/v1/users/", "ends with an empty segment"},
		{http.MethodGet, "/v1/user", "/openapi.yaml"},
		// An id left out between two segments: routed, it read as an id
		// of none ("No such user.").
		{http.MethodPost, "/v1/users//suspension", "has an empty segment"},
		{http.MethodGet, "/v1/users//library", "has an empty segment"},
		{http.MethodPut, "/v1/content//members/u_x", "has an empty segment"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		p := problemOf(t, rec, http.StatusNotFound, "not_found")
		if !strings.HasPrefix(p.Detail, "No resource at "+tc.path) || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("%s %s: detail %q, want it to name the path and %q", tc.method, tc.path, p.Detail, tc.want)
		}
	}
}

// TestAnEscapedSlashIsNoEmptySegment: two slashes sent escaped inside a
// segment (%2F%2F) are part of its value, not an empty segment.
func TestAnEscapedSlashIsNoEmptySegment(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/groups/by-name/a%2F%2Fb", nil))
	if strings.Contains(rec.Body.String(), "empty segment") {
		t.Errorf("GET /v1/groups/by-name/a%%2F%%2Fb: %d %s, want no empty segment found", rec.Code, rec.Body)
	}
}

// TestANameWhereAnIDGoesSaysWhereTheIDIs: a username or a group name sent
// where the route takes an id (/v1/users/alice/library) was 404 "No such
// user or group.", though the account exists: the answer says the value
// is not an id of that kind and where the name's id is read. An id of the
// right kind that names nobody says nothing more.
func TestANameWhereAnIDGoesSaysWhereTheIDIs(t *testing.T) {
	t.Parallel()
	app := newMemApp(t)
	for _, tc := range []struct {
		method, path, want string
	}{
		{http.MethodGet, "/v1/users/alice/library", "GET /v1/users/by-username/alice"},
		{http.MethodGet, "/v1/users/alice", "GET /v1/users/by-username/alice"},
		{http.MethodGet, "/v1/groups/book-club/library", "GET /v1/groups/by-name/book-club"},
		{http.MethodGet, "/v1/groups/book-club", "GET /v1/groups/by-name/book-club"},
		{http.MethodGet, "/v1/users/u_aaaaaaaaaaaaaaaaaaaaaaaaaa/library", ""},
		{http.MethodGet, "/v1/groups/g_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		p := problemOf(t, rec, http.StatusNotFound, "not_found")
		switch {
		case tc.want == "" && strings.Contains(p.Detail, "is not a"):
			t.Errorf("%s %s: detail %q, want no hint about the id's kind", tc.method, tc.path, p.Detail)
		case tc.want != "" && !strings.Contains(p.Detail, tc.want):
			t.Errorf("%s %s: detail %q, want it to name %q", tc.method, tc.path, p.Detail, tc.want)
		}
	}
}
