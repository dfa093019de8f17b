//go:build integration

package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// TestAResetEndsALockout: a stranger with ten client addresses spends the
// login tier of the owner's username (10 × 5 wrong passwords: 50 in the
// window), so every login at it is refused 429 from any address, the
// right password too; a trickle of one more wrong guess from a new
// address every fraction of a second keeps it full. The owner asks for a
// reset and sets a new password with the mailed link: the reset answers
// 201 with a session under the new password (a reset is a way in,
// whatever the login tiers hold), which reads the account as its owner,
// while a login with the new password is still refused until the window
// ends. A reset that answered no session would leave the owner locked out
// for as long as the trickle went on.
func TestAResetEndsALockout(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	env := map[string]string{"SHELF_TRUSTED_PROXIES": "127.0.0.1/32"}
	for k, v := range throttleEnv {
		env[k] = v
	}
	_, api := newMailApp(t, testkit.PackageDB(t), mp, env)
	n := name("locked")
	email := n + "@example.org"
	u := mustSignup(t, api, n, email)
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr, "User-Agent", "lockout-test"} }
	guess := func(addr string) *testkit.Response {
		body := fmt.Sprintf(`{"login":%q,"password":"a wrong guess"}`, n)
		return api.Do(http.MethodPost, "/v1/sessions", "application/json", []byte(body), from(addr)...)
	}
	for a := range 10 {
		for i := range 5 {
			if r := guess(fmt.Sprintf("198.51.100.%d", a+1)); r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("address %d, wrong guess %d: %d %s, want 401", a+1, i+1, r.StatusCode, r.Body)
			}
		}
	}
	const owner = "203.0.113.7"
	ownerLogin := func(password string) *testkit.Response {
		body := fmt.Sprintf(`{"login":%q,"password":%q}`, n, password)
		return api.Do(http.MethodPost, "/v1/sessions", "application/json", []byte(body), from(owner)...)
	}
	throttled(t, "the owner's right password while the login tier is full", []*testkit.Response{ownerLogin(testPassword)})

	// The trickle: a wrong guess from a new address every 100 ms, until
	// the owner is done.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				guess(fmt.Sprintf("192.0.2.%d", i%250+1))
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()

	if r := api.Do(http.MethodPost, "/v1/password-resets", "application/json", []byte(fmt.Sprintf(`{"email":%q}`, email)), from(owner)...); r.StatusCode != http.StatusAccepted {
		t.Fatalf("asking for a reset: %d %s", r.StatusCode, r.Body)
	}
	var reset string
	for _, m := range mp.WaitFor(t, email, 2) {
		if m.Subject == "Reset your shelf password" {
			reset = testkit.TokenIn(t, m.Text, "reset")
		}
	}
	const newPassword = "a lamp that was never lit"
	body := fmt.Sprintf(`{"token":%q,"newPassword":%q}`, reset, newPassword)
	r := api.Do(http.MethodPost, "/v1/password-resets/confirm", "application/json", []byte(body), from(owner)...)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("the reset while the login tier is full: %d %s, want 201 and a session", r.StatusCode, r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the reset's session is answered with Cache-Control %q, want no-store", cc)
	}
	var s sessionBody
	r.JSON(t, &s)
	if s.User.ID != u.ID || s.User.Email != email {
		t.Fatalf("the reset's session is of %+v, want %s with its email", s.User, u.ID)
	}
	got := api.As(s.Token).Get("/v1/users/" + u.ID)
	var read userBody
	if got.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/users/{id} with the reset's session: %d %s", got.StatusCode, got.Body)
	}
	got.JSON(t, &read)
	if read.Email != email {
		t.Fatalf("the reset's session reads the account without its email (not as its owner): %s", got.Body)
	}
	// Its list of sessions shows where the reset came from, as a login's.
	var page struct {
		Items []sessionInfoBody `json:"items"`
	}
	list := api.As(s.Token).Get("/v1/users/" + u.ID + "/sessions")
	list.JSON(t, &page)
	if len(page.Items) != 1 || page.Items[0].ClientIP != owner || page.Items[0].UserAgent != "lockout-test" || !page.Items[0].Current {
		t.Fatalf("the sessions after the reset: %s, want the reset's alone, from %s", list.Body, owner)
	}
	// The login tier still holds: the session is the way in until the
	// window ends.
	throttled(t, "a login with the new password while the trickle goes on", []*testkit.Response{ownerLogin(newPassword)})
	refusedToken(t, api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": newPassword}), "used", "the reset token again")
}
