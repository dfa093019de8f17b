package handlers

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"shelf/tests/testkit"
)

// TestTwoAuthorizationHeadersAreRefused: with two headers, which one
// counts would depend on who reads it (a proxy may check one while shelf
// acts on the other), so the request is 400 before any token is looked up.
func TestTwoAuthorizationHeadersAreRefused(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodGet, "/v1/me", nil)
	req.Header.Add("Authorization", "Bearer one")
	req.Header.Add("Authorization", "Bearer two")
	rec := httptest.NewRecorder()
	testRouter(t).ServeHTTP(rec, req)
	problemOf(t, rec, http.StatusBadRequest, "malformed_authorization")
}

// TestEveryRouteDocumentsItsAuthorizationRefusals: authenticate answers
// two Authorization headers 400 malformed_authorization, and a malformed
// one 401, on every /v1 route before its handler runs, so openapi.yaml
// must list both statuses on every operation: a generated client decodes
// only the statuses its operation lists. GET /v1/users/{id}, the jobs,
// the groups' and content's reads, the deletions and others listed no
// 400, so their 400 matched nothing (the contract check says "status is
// not supported"; shelfclient leaves the problem undecoded).
func TestEveryRouteDocumentsItsAuthorizationRefusals(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	router := corsRouter(nil).(*chi.Mux)
	param := regexp.MustCompile(`\{[^}]+\}`)
	var routes int
	err = chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, v1+"/") {
			return nil
		}
		routes++
		path := param.ReplaceAllString(route, "x")
		for _, auth := range [][]string{{"Bearer one", "Bearer two"}, {"Basic eA=="}} {
			req := httptest.NewRequest(method, path, nil)
			req.Header["Authorization"] = auth
			rec := httptest.NewRecorder()
			router.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest && rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s with Authorization %q: %d, want 400 or 401", method, route, auth, rec.Code)
				continue
			}
			if err := contract.Check(req, rec.Result(), rec.Body.Bytes()); err != nil {
				t.Errorf("%s %s with Authorization %q: %v", method, route, auth, err)
			}
		}
		return nil
	})
	if err != nil || routes < 50 {
		t.Fatalf("walked %d routes: %v", routes, err)
	}
}

// TestOwnDeletionByDeleteSaysWhereThePasswordGoes: DELETE
// /v1/users/{id} is an admin's; the user's own request is refused 400
// naming currentPassword (openapi.yaml: "use POST
// /v1/users/{id}/deletion"). The answer said only "Give your current
// password", which a DELETE cannot carry (it takes no body): a client
// following it had nowhere to put the password. The refusal must name
// the request that takes it, and leave the account as it was.
func TestOwnDeletionByDeleteSaysWhereThePasswordGoes(t *testing.T) {
	t.Parallel()
	app := newMemApp(t)
	rec := app.do(http.MethodDelete, "/v1/users/"+app.ann, "")
	p := problemOf(t, rec, http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "currentPassword" {
		t.Errorf("errors %+v, want one naming currentPassword", p.Errors)
	}
	if want := "POST /v1/users/" + app.ann + "/deletion"; !strings.Contains(p.Detail, want) {
		t.Errorf("detail %q does not say %q", p.Detail, want)
	}
	if rec := app.do(http.MethodGet, "/v1/me", ""); rec.Code != http.StatusOK {
		t.Errorf("after the refusal, GET /v1/me: %d %s", rec.Code, rec.Body)
	}
}
