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
