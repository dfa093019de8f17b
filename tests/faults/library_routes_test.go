package faults

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/handlers"
)

// TestALibraryRouteServesOnlyItsOwnKindOfPrincipal: /v1/users/{id}/library
// takes a user id and /v1/groups/{id}/library a group id; openapi.yaml
// answers an id of the wrong shape 404, as an unknown one. The world's
// group and owner each have a library with the world's public item in it.
// Read anonymously through the other kind's route, each library is 404,
// not served as if the route were its own.
func TestALibraryRouteServesOnlyItsOwnKindOfPrincipal(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	router := handlers.NewRouter(handlers.Deps{Logger: zerolog.Nop(), MaxBodyBytes: 1 << 20, RequestTimeout: time.Second,
		Accounts: l.svc, Contents: l.lib})
	for _, c := range []struct {
		path string
		want int
	}{
		{"/v1/users/" + l.owner.ID + "/library", http.StatusOK},
		{"/v1/groups/" + l.group + "/library", http.StatusOK},
		{"/v1/users/" + l.group + "/library", http.StatusNotFound},
		{"/v1/groups/" + l.owner.ID + "/library", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		if rec.Code != c.want {
			t.Errorf("GET %s: %d %s, want %d", c.path, rec.Code, rec.Body.String(), c.want)
		}
	}
}
