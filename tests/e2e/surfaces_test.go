//go:build integration

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"shelf/tests/testkit"
)

// TestRolesAndHeadersOfAccountReads (docs/design/api-conventions.md): a
// user reading an admin's account does not learn that it is one; the
// admin (on /v1/me) and other admins do. /v1/me, which carries the email,
// is never stored by a cache nor framed.
func TestRolesAndHeadersOfAccountReads(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, nil)
	adminName, otherName := name("root"), name("reader")
	admin := mustSignup(t, api, adminName, adminName+"@example.org")
	other := mustSignup(t, api, otherName, otherName+"@example.org")
	if out, err := runAdminOn(db, "grant", adminName); err != nil {
		t.Fatalf("grant: %q %v", out, err)
	}
	adminAPI, otherAPI := api.As(mustLogin(t, api, adminName).Token), api.As(mustLogin(t, api, otherName).Token)

	for _, path := range []string{"/v1/users/" + admin.ID, "/v1/users/by-username/" + adminName} {
		r := otherAPI.Get(path)
		if r.StatusCode != http.StatusOK || strings.Contains(string(r.Body), `"roles"`) {
			t.Errorf("a user reads the admin at %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
	r := adminAPI.Get("/v1/me")
	var me userBody
	r.JSON(t, &me)
	if len(me.Roles) != 1 || me.Roles[0] != "admin" {
		t.Errorf("the admin's own roles: %s", r.Body)
	}
	for name, want := range map[string]string{"Cache-Control": "no-store", "X-Frame-Options": "DENY",
		"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff"} {
		if got := r.Header.Get(name); got != want {
			t.Errorf("/v1/me: %s %q, want %q", name, got, want)
		}
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("/v1/me: CSP %q", csp)
	}
	if r := otherAPI.Get("/v1/me"); !strings.Contains(string(r.Body), `"roles":[]`) {
		t.Errorf("a user's own roles, none: %s", r.Body)
	}
	var seen userBody
	adminAPI.Get("/v1/users/"+other.ID).JSON(t, &seen)
	if seen.Roles == nil || len(seen.Roles) != 0 {
		t.Errorf("an admin reads a user: roles %v, want an empty list", seen.Roles)
	}
	// Another admin reads the admin's account, and learns it is one.
	secondName := name("root")
	mustSignup(t, api, secondName, secondName+"@example.org")
	if out, err := runAdminOn(db, "grant", secondName); err != nil {
		t.Fatalf("grant: %q %v", out, err)
	}
	secondAPI := api.As(mustLogin(t, api, secondName).Token)
	for _, path := range []string{"/v1/users/" + admin.ID, "/v1/users/by-username/" + adminName} {
		r := secondAPI.Get(path)
		var seen userBody
		r.JSON(t, &seen)
		if r.StatusCode != http.StatusOK || len(seen.Roles) != 1 || seen.Roles[0] != "admin" {
			t.Errorf("another admin reads the admin at %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
}
