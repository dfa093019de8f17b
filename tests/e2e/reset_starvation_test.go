//go:build integration

package e2e

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// TestAThiefWhoKeepsChangingThePasswordCannotStaleTheOwnersLinks: a
// thief with a session and the password changes the password, spends the
// owner's address's mail budget with reset requests (their links reach
// her mailbox), and changes the password again (its notice, of the
// account's own budget, goes out), so the owner's own reset request in
// the hour is held back. Every link in her mailbox still works
// (a reset link goes stale only with a recovery): the newest resets the
// password on a real node, ends the thief's session on both processes,
// and makes the other links stale.
func TestAThiefWhoKeepsChangingThePasswordCannotStaleTheOwnersLinks(t *testing.T) {
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
		ownerAddr   = "203.0.113.5"
		ownerSecret = "the owner's fresh passphrase 7"
	)
	n := name("starved")
	owned := n + "@example.org"
	u, _ := verifiedUser(t, api0, mp, n)
	path := "/v1/users/" + u.ID

	r := from(t, api1, thiefAddr, http.MethodPost, "/v1/sessions", map[string]string{"login": n, "password": testPassword})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("the thief's login: %d %s", r.StatusCode, r.Body)
	}
	var s sessionBody
	r.JSON(t, &s)
	stolen := []*testkit.API{api0.As(s.Token), api1.As(s.Token)}
	current := testPassword
	change := func(next string) {
		t.Helper()
		if r := stolen[0].Send(http.MethodPut, path+"/password", map[string]string{"currentPassword": current, "newPassword": next}); r.StatusCode != http.StatusNoContent {
			t.Fatalf("the thief's password change: %d %s", r.StatusCode, r.Body)
		}
		current = next
	}
	change("the thief's first passphrase 1")
	for i := range 6 {
		if r := from(t, apis[i%2], thiefAddr, http.MethodPost, "/v1/password-resets", map[string]string{"email": owned}); r.StatusCode != http.StatusAccepted {
			t.Fatalf("reset request %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	// The verification and four links, anyone's budget's five for the
	// hour, and the first change's notice, of the account's own budget.
	spent := mp.WaitFor(t, owned, 6)
	change("the thief's second passphrase 2")
	told := len(mp.WaitFor(t, owned, len(spent)+1)) // its notice: the account's own budget
	if r := from(t, api0, ownerAddr, http.MethodPost, "/v1/password-resets", map[string]string{"email": owned}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the owner's request: %d %s", r.StatusCode, r.Body)
	}
	time.Sleep(time.Second) // a mail that went out would be in Mailpit by now
	if got := len(mp.Messages(t, owned)); got != told {
		t.Fatalf("the owner's request went out past the spent budget (%d mails, %d before): the test no longer shows the attack", got, told)
	}

	reset := testkit.TokenIn(t, spent[0].Text, "reset")
	r = from(t, api1, ownerAddr, http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": ownerSecret})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("the owner's reset with a link mailed before the thief's second change: %d %s, want 201", r.StatusCode, r.Body)
	}
	for i, api := range apis {
		if r := stolen[i].Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the thief's session on process %d after the owner's reset: %d", i, r.StatusCode)
		}
		if r := from(t, api, thiefAddr, http.MethodPost, "/v1/sessions", map[string]string{"login": n, "password": current}); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the thief's password on process %d after the owner's reset: %d %s", i, r.StatusCode, r.Body)
		}
	}
	older := testkit.TokenIn(t, spent[1].Text, "reset")
	r = api0.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": older, "newPassword": "someone else's passphrase 3"})
	refusedToken(t, r, "stale", "a link mailed before the owner's reset")
}
