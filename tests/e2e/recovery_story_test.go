//go:build integration

package e2e

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"shelf/tests/testkit"
)

// from sends v as a JSON body on behalf of the client address addr (the
// servers trust X-Forwarded-For from loopback in these tests).
func from(t *testing.T, api *testkit.API, addr, method, path string, v any) *testkit.Response {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return api.Do(method, path, "application/json", body, "X-Forwarded-For", addr)
}

// TestAThiefWithTokenAndPasswordLosesTheAccount is the recovery's whole
// story against a real SMTP server and two API processes on one keyspace
// (docs/design/account-security.md). The attacker holds a session token
// and the password, and several client addresses: they change the email
// and the password, spend the owner's address's mail budget with reset
// requests, confirm the new address and hammer the login from one
// address. The owner follows the notice's revert link: the address is
// hers again, every session ends, the password stops working (the thief's
// right password answers 403 password_reset_required, a wrong one 401 as
// ever), and the reset mail comes although the budget was spent. The
// reset answers with a session, and a login with the new password works
// from any address at once; the thief's password and sessions are dead on
// both processes.
func TestAThiefWithTokenAndPasswordLosesTheAccount(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	env := maps.Clone(throttleEnv)
	env["SHELF_MAIL_PER_HOUR"] = "5"
	env["SHELF_TRUSTED_PROXIES"] = "127.0.0.1/32"
	_, api0 := newMailApp(t, db, mp, env)
	_, api1 := newMailApp(t, db, mp, env)
	apis := []*testkit.API{api0, api1}
	const (
		thiefAddr   = "198.51.100.66"
		thiefAddr2  = "198.51.100.77"
		thiefAddr3  = "198.51.100.88"
		newAddr     = "192.0.2.44"
		ownerAddr   = "203.0.113.5"
		thiefSecret = "the thief's own passphrase 9"
		ownerSecret = "the owner's fresh passphrase 4"
	)
	n := name("robbed")
	owned, taken := n+"@example.org", name("thief")+"@example.net"
	u, owner := verifiedUser(t, api0, mp, n)
	path := "/v1/users/" + u.ID

	// The thief logs in with the password and changes the email (only
	// asked for: a notice with a revert link goes to the owner) and the
	// password.
	r := from(t, api1, thiefAddr, http.MethodPost, "/v1/sessions", map[string]string{"login": n, "password": testPassword})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("the thief's login: %d %s", r.StatusCode, r.Body)
	}
	var s sessionBody
	r.JSON(t, &s)
	stolen := []*testkit.API{api0.As(s.Token), api1.As(s.Token)}
	mustAskEmail(t, stolen[1], u.ID, taken)
	notice := mp.WaitFor(t, owned, 2)[0]
	if notice.Subject != "The email address of your shelf account is changing" {
		t.Fatalf("the owner's newest mail: %q", notice.Subject)
	}
	revert := testkit.TokenIn(t, notice.Text, "revert-email")
	if r := stolen[0].Send(http.MethodPut, path+"/password", map[string]string{"currentPassword": testPassword, "newPassword": thiefSecret}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the thief's password change: %d %s", r.StatusCode, r.Body)
	}
	if r := owner.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the owner's session after the thief's change: %d", r.StatusCode)
	}

	// The thief spends the owner's address's mail budget (5 an hour) with
	// reset requests from several addresses, then confirms the new address.
	for i := range 6 {
		addr := []string{thiefAddr, thiefAddr2}[i%2]
		if r := from(t, apis[i%2], addr, http.MethodPost, "/v1/password-resets", map[string]string{"email": owned}); r.StatusCode != http.StatusAccepted {
			t.Fatalf("reset request %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	spent := len(mp.Messages(t, owned))
	confirm := testkit.TokenIn(t, mp.WaitFor(t, taken, 1)[0].Text, "verify")
	if r := api0.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the thief confirms the new address: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, stolen[0]); got.Email != taken {
		t.Fatalf("after the thief's confirmation: %+v", got)
	}

	// The thief hammers the login from one address.
	hammered := burst(40, func(i int) *testkit.Response {
		return from(t, apis[i%2], thiefAddr, http.MethodPost, "/v1/sessions", map[string]string{"login": n, "password": "a wrong guess"})
	})
	for i, r := range hammered {
		if r.StatusCode != http.StatusUnauthorized && r.StatusCode != http.StatusTooManyRequests && r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("hammering guess %d: %d %s", i, r.StatusCode, r.Body)
		}
	}

	// The owner follows the notice's link.
	if r := api1.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": revert}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the owner's revert: %d %s", r.StatusCode, r.Body)
	}
	for i, api := range apis {
		if r := stolen[i].Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the thief's session on process %d after the revert: %d", i, r.StatusCode)
		}
		r := from(t, api, thiefAddr2, http.MethodPost, "/v1/sessions", map[string]string{"login": owned, "password": thiefSecret})
		if p := r.Problem(t); r.StatusCode != http.StatusForbidden || p.Code != "password_reset_required" {
			t.Fatalf("the thief's password on process %d after the revert: %d %s, want 403 password_reset_required", i, r.StatusCode, r.Body)
		}
		r = from(t, api, thiefAddr2, http.MethodPost, "/v1/sessions", map[string]string{"login": owned, "password": "another wrong guess"})
		if p := r.Problem(t); r.StatusCode != http.StatusUnauthorized || p.Code != "invalid_credentials" {
			t.Fatalf("a wrong password on process %d after the revert: %d %s, want 401 as ever", i, r.StatusCode, r.Body)
		}
	}

	// The reset link comes, though the budget was spent before.
	mails := mp.WaitFor(t, owned, spent+1)
	if mails[0].Subject != "Reset your shelf password" {
		t.Fatalf("after the revert the owner's newest mail is %q, not a reset link", mails[0].Subject)
	}
	reset := testkit.TokenIn(t, mails[0].Text, "reset")
	r = from(t, api0, ownerAddr, http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": ownerSecret})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("the owner's reset: %d %s, want 201 with a session", r.StatusCode, r.Body)
	}
	r.JSON(t, &s)
	for i, api := range apis {
		if got := account(t, api.As(s.Token)); got.Email != owned || got.PendingEmail != "" || got.EmailVerified == nil || !*got.EmailVerified {
			t.Fatalf("the owner's account through the reset's session on process %d: %+v", i, got)
		}
	}
	// A login with the new password works at once, from any address.
	for i, addr := range []string{ownerAddr, newAddr} {
		if r := from(t, apis[i], addr, http.MethodPost, "/v1/sessions", map[string]string{"login": n, "password": ownerSecret}); r.StatusCode != http.StatusCreated {
			t.Fatalf("the owner's login from %s on process %d: %d %s", addr, i, r.StatusCode, r.Body)
		}
	}
	// The thief's password and sessions are dead on both processes.
	for i, api := range apis {
		if r := stolen[i].Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the thief's session on process %d after the reset: %d", i, r.StatusCode)
		}
		if r := from(t, api, thiefAddr3, http.MethodPost, "/v1/sessions", map[string]string{"login": n, "password": thiefSecret}); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the thief's password on process %d after the reset: %d %s", i, r.StatusCode, r.Body)
		}
	}
	// The thief's address is free again; the owner's is not.
	mustSignup(t, api0, name("later"), taken)
	if r := signup(api1, name("squat"), owned); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the owner's address: %d %s", r.StatusCode, r.Body)
	}
}
