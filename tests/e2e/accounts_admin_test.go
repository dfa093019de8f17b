//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"shelf/tests/testkit"
)

// TestAdminGrantAndRevoke drives `api admin grant|revoke` against the
// test's keyspace, as an operator would on the machine where the API runs.
func TestAdminGrantAndRevoke(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, nil)
	adminName, otherName := name("boss"), name("someone")
	mustSignup(t, api, adminName, adminName+"@example.org")
	other := mustSignup(t, api, otherName, otherName+"@example.org")
	tok := mustLogin(t, api, adminName).Token

	cli := func(args ...string) (string, error) { return runAdminOn(db, args...) }
	if r := api.As(tok).Get("/v1/users/by-email/" + otherName + "@example.org"); r.StatusCode != http.StatusForbidden {
		t.Fatalf("before grant: %d", r.StatusCode)
	}
	for i := 0; i < 2; i++ { // twice: idempotent
		out, err := cli("grant", strings.ToUpper(adminName))
		if err != nil || !strings.Contains(out, "is now an admin") {
			t.Fatalf("grant %d: %q %v", i, out, err)
		}
	}
	// The role takes effect on the existing session at once.
	r := api.As(tok).Get("/v1/users/by-email/" + strings.ToUpper(otherName) + "@EXAMPLE.ORG")
	var found userBody
	r.JSON(t, &found)
	if r.StatusCode != http.StatusOK || found.ID != other.ID || found.Email == "" {
		t.Fatalf("admin lookup by email: %d %s", r.StatusCode, r.Body)
	}
	var me userBody
	api.As(tok).Get("/v1/me").JSON(t, &me)
	if len(me.Roles) != 1 || me.Roles[0] != "admin" {
		t.Fatalf("roles %v", me.Roles)
	}
	// Admins see emails on plain reads too.
	api.As(tok).Get("/v1/users/"+other.ID).JSON(t, &found)
	if found.Email == "" {
		t.Fatal("an admin does not see the email")
	}
	for i := 0; i < 2; i++ {
		if out, err := cli("revoke", adminName+"@example.org"); err != nil || !strings.Contains(out, "no longer an admin") {
			t.Fatalf("revoke %d: %q %v", i, out, err)
		}
	}
	if r := api.As(tok).Get("/v1/users/by-email/" + otherName + "@example.org"); r.StatusCode != http.StatusForbidden {
		t.Fatalf("after revoke: %d", r.StatusCode)
	}
	if _, err := cli("grant", "nobody-"+strconv.Itoa(int(uniq.Add(1)))); err == nil || !strings.Contains(err.Error(), "No user") {
		t.Fatalf("grant to an unknown user: %v", err)
	}
	if _, err := cli("promote", adminName); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("unknown admin command: %v", err)
	}
}

// TestRateLimitOnLogin: the limit answers 429 with Retry-After, per client:
// another client (another address behind the trusted proxy) still logs in
// meanwhile.
func TestRateLimitOnLogin(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), map[string]string{"SHELF_RATE_LIMIT_PER_MINUTE": "3", "SHELF_TRUSTED_PROXIES": "127.0.0.1/32"})
	nobody := name("nobody")
	from := func(client string) *testkit.Response {
		b, err := json.Marshal(map[string]string{"login": nobody, "password": testPassword})
		if err != nil {
			t.Fatal(err)
		}
		return api.Do(http.MethodPost, "/v1/sessions", "application/json", b, "X-Forwarded-For", client)
	}
	for i := 0; i < 3; i++ {
		if r := from("203.0.113.1"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, r.StatusCode)
		}
	}
	r := from("203.0.113.1")
	if r.StatusCode != http.StatusTooManyRequests || r.Problem(t).Code != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("4th login: %d %s (Retry-After %q)", r.StatusCode, r.Body, r.Header.Get("Retry-After"))
	}
	if r := from("203.0.113.2"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another client's login while the first is limited: %d %s", r.StatusCode, r.Body)
	}
	// Signups have a bucket of their own.
	u := name("limited")
	mustSignup(t, api, u, u+"@example.org")
}

// TestRateLimitOnAccountChanges: a change's 409 says whether an email is
// taken, so changes are limited per address like signups and logins, or
// anyone could probe for accounts (docs/api.md, "Rate limit").
func TestRateLimitOnAccountChanges(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), map[string]string{"SHELF_RATE_LIMIT_PER_MINUTE": "3"})
	u := name("prober")
	me := mustSignup(t, api, u, u+"@example.org")
	as := api.As(mustLogin(t, api, u).Token)
	for i := 0; i < 3; i++ {
		if r := as.Send(http.MethodPatch, "/v1/users/"+me.ID, map[string]string{"email": name("probe") + "@example.org", "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
			t.Fatalf("change %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	r := as.Send(http.MethodPatch, "/v1/users/"+me.ID, map[string]string{"email": name("probe") + "@example.org", "currentPassword": testPassword})
	if r.StatusCode != http.StatusTooManyRequests || r.Problem(t).Code != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("4th change: %d %s", r.StatusCode, r.Body)
	}
}

// TestRehashWhenParametersRise: a login renews a hash made with weaker
// argon2 parameters.
func TestRehashWhenParametersRise(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, weak := newTestApp(t, db, nil)
	u := name("rehash")
	created := mustSignup(t, weak, u, u+"@example.org")
	_, strong := newTestApp(t, db, map[string]string{"SHELF_ARGON2_TIME": "2", "SHELF_ARGON2_MEMORY_KIB": "2048"})
	mustLogin(t, strong, u)
	var hash string
	if err := db.Session.ContextQuery(context.Background(), "SELECT password_hash FROM users WHERE id = ?", nil).
		Bind(created.ID).GetRelease(&hash); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hash, "m=2048,t=2,") {
		t.Fatalf("hash not renewed: %s", hash)
	}
	mustLogin(t, weak, u) // the renewed hash still verifies
}
