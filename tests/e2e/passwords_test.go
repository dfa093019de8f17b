//go:build integration

package e2e

import (
	"net/http"
	"testing"

	"shelf/tests/testkit"
)

// refusedPassword fails the test unless r is a 400 naming field with code.
func refusedPassword(t *testing.T, r *testkit.Response, field, code, what string) {
	t.Helper()
	if r.StatusCode != http.StatusBadRequest {
		t.Errorf("%s: %d %s, want 400 %s/%s", what, r.StatusCode, r.Body, field, code)
		return
	}
	for _, f := range r.Problem(t).Errors {
		if f.Field == field && f.Code == code && f.Message != "" {
			return
		}
	}
	t.Errorf("%s: %s, want %s/%s", what, r.Body, field, code)
}

// TestGuessablePasswordsAreRefused (docs/design/passwords.md): a rule of
// length alone lets a guesser's first tries through (password1, 12345678,
// qwertyuiop, aaaaaaaa), and the account's own words. Signup, a change
// and a reset refuse them with a 400 naming the field and the reason, and
// write nothing.
func TestGuessablePasswordsAreRefused(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	u, local := name("reader"), name("inbox")
	email := local + "@bookworms.example"
	for _, tc := range []struct{ pw, code string }{
		{"password1", "common_password"},
		{"12345678", "common_password"},
		{"qwertyuiop", "common_password"},
		{"aaaaaaaa", "too_guessable"},
		{"P@ssw0rd!", "common_password"},
		{"abcdefghijkl", "too_guessable"},
		{u + "!!", "contains_username"},
		{local + "#1", "contains_email"},
		{"bookworms!", "contains_email"},
		{"shelf2024", "contains_product_name"},
	} {
		r := api.Send(http.MethodPost, "/v1/users", map[string]string{"username": u, "email": email, "password": tc.pw})
		refusedPassword(t, r, "password", tc.code, "signup with "+tc.pw)
	}
	// Nothing was half-written: the names are free, and a password
	// nobody guesses signs up.
	acct := mustSignup(t, api, u, email)
	as := api.As(mustLogin(t, api, u).Token)

	path := "/v1/users/" + acct.ID + "/password"
	for _, tc := range []struct{ pw, code string }{
		{"password1", "common_password"},
		{"qwertyuiop", "common_password"},
		{u + "2024", "contains_username"},
	} {
		r := as.Send(http.MethodPut, path, map[string]string{"currentPassword": testPassword, "newPassword": tc.pw})
		refusedPassword(t, r, "newPassword", tc.code, "a change to "+tc.pw)
	}
	if r := as.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the session after refused changes: %d", r.StatusCode)
	}
	mustLogin(t, api, u) // the password stayed

	if r := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": email}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("asking for a reset: %d %s", r.StatusCode, r.Body)
	}
	var reset string
	for _, m := range mp.WaitFor(t, email, 2) {
		if m.Subject == "Reset your shelf password" {
			reset = testkit.TokenIn(t, m.Text, "reset")
		}
	}
	for _, tc := range []struct{ pw, code string }{
		{"12345678", "common_password"},
		{"aaaaaaaa", "too_guessable"},
	} {
		r := api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": tc.pw})
		refusedPassword(t, r, "newPassword", tc.code, "a reset to "+tc.pw)
	}
	mustLogin(t, api, u)
	// A refused password did not use the link up.
	const next = "a reading lamp by the window"
	if r := api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": next}); r.StatusCode != http.StatusCreated {
		t.Fatalf("the reset after refusals: %d %s", r.StatusCode, r.Body)
	}
	if r := login(api, u, next); r.StatusCode != http.StatusCreated {
		t.Fatalf("the new password: %d %s", r.StatusCode, r.Body)
	}
}

// TestBreachedPasswordsAreRefused: with SHELF_HIBP_URL, a password that
// a breach holds is refused (signup and change), asked of the range API
// by the first 5 hex digits of its SHA-1 only; when the API fails,
// SHELF_HIBP_FAIL decides: open lets the password through, closed answers
// 503 and writes nothing.
func TestBreachedPasswordsAreRefused(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	hibp := testkit.StartPwnedRange(t)
	const breached = "my cat is called biscuit"
	hibp.Breach(breached, 42)
	_, api := newTestApp(t, db, map[string]string{"SHELF_HIBP_URL": hibp.URL})

	u := name("pwned")
	r := api.Send(http.MethodPost, "/v1/users", map[string]string{"username": u, "email": u + "@example.org", "password": breached})
	refusedPassword(t, r, "password", "breached", "signup with a breached password")
	acct := mustSignup(t, api, u, u+"@example.org")
	for _, a := range hibp.Asked() {
		if len(a.Path) != len("/range/")+5 || a.AddPadding != "true" {
			t.Errorf("the range API was asked %+v", a)
		}
	}
	if want := "/range/" + testkit.PwnedSHA1(breached)[:5]; len(hibp.Asked()) != 2 || hibp.Asked()[0].Path != want {
		t.Errorf("the range API was asked %+v, want %s first", hibp.Asked(), want)
	}
	as := api.As(mustLogin(t, api, u).Token)
	r = as.Send(http.MethodPut, "/v1/users/"+acct.ID+"/password", map[string]string{"currentPassword": testPassword, "newPassword": breached})
	refusedPassword(t, r, "newPassword", "breached", "a change to a breached password")

	// The API fails: open (the default) lets a password through.
	hibp.FailWith(http.StatusInternalServerError)
	mustSignup(t, api, name("open"), name("open")+"@example.org")

	// Closed: 503, and nothing was written (the names are free after).
	_, closed := newTestApp(t, db, map[string]string{"SHELF_HIBP_URL": hibp.URL, "SHELF_HIBP_FAIL": "closed"})
	c := name("closed")
	r = signup(closed, c, c+"@example.org")
	if p := r.Problem(t); r.StatusCode != http.StatusServiceUnavailable || p.Code != "password_check_unavailable" {
		t.Fatalf("signup while the range API fails, closed: %d %s", r.StatusCode, r.Body)
	}
	hibp.FailWith(0)
	mustSignup(t, closed, c, c+"@example.org")
}
