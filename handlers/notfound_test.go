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
// BOB_ID empty), and says so; any other points at the routes' list.
func TestAnUnknownPathSaysWhereToLook(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	for _, tc := range []struct {
		method, path, want string
	}{
		{http.MethodPut, "/v1/content/c_x/members/", "ends with an empty segment"},
		{http.MethodGet, "/v1/users/", "ends with an empty segment"},
		{http.MethodGet, "/v1/user", "/openapi.yaml"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		p := problemOf(t, rec, http.StatusNotFound, "not_found")
		if !strings.HasPrefix(p.Detail, "No resource at "+tc.path) || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("%s %s: detail %q, want it to name the path and %q", tc.method, tc.path, p.Detail, tc.want)
		}
	}
}
