//go:build integration

package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/tests/testkit"
)

func TestNormalizationCollisions(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), nil)
	base := name("Norm")
	mustSignup(t, api, base, base+"@Example.org")
	cases := []struct {
		name, username, email, field string
	}{
		{"username differing in case", strings.ToLower(base), name("n") + "x@example.org", "username"},
		{"username in upper case", strings.ToUpper(base), name("n") + "y@example.org", "username"},
		{"email differing in case", name("norm"), strings.ToUpper(base) + "@EXAMPLE.ORG", "email"},
		{"email in fullwidth (NFKC)", name("norm"), base + "@ｅｘａｍｐｌｅ.org", "email"},
	}
	for _, tc := range cases {
		r := signup(api, tc.username, tc.email)
		if r.StatusCode != http.StatusConflict || !hasTaken(t, r, tc.field) {
			t.Errorf("%s: %d %s", tc.name, r.StatusCode, r.Body)
		}
	}
	// Full case folding: ß folds to ss.
	street := name("strasse")
	mustSignup(t, api, name("fold"), street+"@example.org")
	r := signup(api, name("fold"), strings.Replace(street, "ss", "ß", 1)+"@example.org")
	if r.StatusCode != http.StatusConflict || !hasTaken(t, r, "email") {
		t.Errorf("ß vs ss: %d %s", r.StatusCode, r.Body)
	}
}

func TestSignupValidation(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), nil)
	ok := name("valid")
	cases := []struct {
		name        string
		body        map[string]any
		field, code string
	}{
		{"username too short", map[string]any{"username": "ab", "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"username too long", map[string]any{"username": strings.Repeat("a", 33), "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"username starts with a dot", map[string]any{"username": ".abc", "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"username with a space", map[string]any{"username": "ab cd", "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"username not ASCII", map[string]any{"username": "jöhn", "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"username with a zero-width space", map[string]any{"username": "al\u200bice", "email": ok + "@example.org", "password": testPassword}, "username", "invalid_characters"},
		{"email with a bidi override", map[string]any{"username": ok, "email": "a\u202eb@example.org", "password": testPassword}, "email", "invalid_characters"},
		{"email with a zero-width joiner", map[string]any{"username": ok, "email": "ab\u200d@example.org", "password": testPassword}, "email", "invalid_characters"},
		{"email without @", map[string]any{"username": ok, "email": "example.org", "password": testPassword}, "email", "format"},
		{"email with a display name", map[string]any{"username": ok, "email": "Al <al@example.org>", "password": testPassword}, "email", "format"},
		{"email without a domain dot", map[string]any{"username": ok, "email": "al@localhost", "password": testPassword}, "email", "format"},
		{"email too long", map[string]any{"username": ok, "email": strings.Repeat("a", 250) + "@example.org", "password": testPassword}, "email", "too_long"},
		{"password too short", map[string]any{"username": ok, "email": ok + "@example.org", "password": "short"}, "password", "too_short"},
		{"password too long", map[string]any{"username": ok, "email": ok + "@example.org", "password": strings.Repeat("p", 129)}, "password", "too_long"},
		{"password is the username", map[string]any{"username": ok + "pass", "email": ok + "@example.org", "password": strings.ToUpper(ok + "pass")}, "password", "same_as_identifier"},
		{"password is the email", map[string]any{"username": ok, "email": ok + "@example.org", "password": ok + "@Example.org"}, "password", "same_as_identifier"},
		{"display name too long", map[string]any{"username": ok, "email": ok + "@example.org", "password": testPassword, "displayName": strings.Repeat("d", 65)}, "displayName", "length"},
		{"missing password", map[string]any{"username": ok, "email": ok + "@example.org"}, "password", "required"},
		// One code per rule whatever the input's length
		// (docs/design/api-conventions.md).
		{"username empty", map[string]any{"username": "", "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"username of 300 characters", map[string]any{"username": strings.Repeat("a", 300), "email": ok + "@example.org", "password": testPassword}, "username", "format"},
		{"email of 2000 characters", map[string]any{"username": ok, "email": strings.Repeat("a", 2000) + "@example.org", "password": testPassword}, "email", "too_long"},
		{"password empty", map[string]any{"username": ok, "email": ok + "@example.org", "password": ""}, "password", "too_short"},
		{"password of 2000 characters", map[string]any{"username": ok, "email": ok + "@example.org", "password": strings.Repeat("p", 2000)}, "password", "too_long"},
		{"display name blank", map[string]any{"username": ok, "email": ok + "@example.org", "password": testPassword, "displayName": " "}, "displayName", "untrimmed"},
		{"display name empty (the schema's minLength 1; absent means the username)", map[string]any{"username": ok, "email": ok + "@example.org", "password": testPassword, "displayName": ""}, "displayName", "length"},
		{"display name of 2000 characters", map[string]any{"username": ok, "email": ok + "@example.org", "password": testPassword, "displayName": strings.Repeat("d", 2000)}, "displayName", "length"},
		{"password not a string", map[string]any{"username": ok, "email": ok + "@example.org", "password": 12345678}, "password", "wrong_type"},
	}
	for _, tc := range cases {
		r := api.Send(http.MethodPost, "/v1/users", tc.body)
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s", tc.name, r.StatusCode, r.Body)
			continue
		}
		found := false
		for _, f := range r.Problem(t).Errors {
			found = found || (f.Field == tc.field && f.Code == tc.code)
		}
		if !found {
			t.Errorf("%s: errors do not name %s/%s: %s", tc.name, tc.field, tc.code, r.Body)
		}
	}
	// Nothing was half-written: the valid names are still free.
	mustSignup(t, api, ok, ok+"@example.org")
}

func TestLoginAndSessions(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), nil)
	u, e := name("Login"), name("login")+"@example.org"
	created := mustSignup(t, api, u, e)
	if created.Email != e || !strings.HasPrefix(created.ID, "u_") || created.Status != "active" || created.Roles == nil {
		t.Fatalf("created %+v", created)
	}

	byName := mustLogin(t, api, strings.ToUpper(u))
	byEmail := mustLogin(t, api, strings.ToUpper(e))
	if byName.User.ID != created.ID || byEmail.User.ID != created.ID || byName.Token == byEmail.Token ||
		// The token names its account (one round trip reads both), then 32 random bytes.
		!strings.HasPrefix(byName.Token, created.ID+".") || len(byName.Token) != len(created.ID)+1+43 {
		t.Fatalf("sessions %+v %+v", byName, byEmail)
	}

	// An unknown login and a wrong password get the same answer.
	unknown := login(api, name("nobody"), testPassword)
	wrong := login(api, u, "wrong password!")
	pu, pw := unknown.Problem(t), wrong.Problem(t)
	if unknown.StatusCode != http.StatusUnauthorized || wrong.StatusCode != http.StatusUnauthorized ||
		pu.Code != "invalid_credentials" || pu.Code != pw.Code || pu.Detail != pw.Detail || pu.Title != pw.Title {
		t.Fatalf("unknown %d %s / wrong %d %s", unknown.StatusCode, unknown.Body, wrong.StatusCode, wrong.Body)
	}

	me := api.As(byName.Token).Get("/v1/me")
	var mine userBody
	me.JSON(t, &mine)
	if me.StatusCode != http.StatusOK || mine.ID != created.ID || mine.Email != e {
		t.Fatalf("/v1/me: %d %s", me.StatusCode, me.Body)
	}
	// Others see no email.
	var public userBody
	api.Get("/v1/users/"+created.ID).JSON(t, &public)
	if public.Email != "" || public.Username != u {
		t.Fatalf("anonymous view %+v", public)
	}
	api.Get("/v1/users/by-username/"+strings.ToLower(u)).JSON(t, &public)
	if public.ID != created.ID || public.Email != "" {
		t.Fatalf("by-username %+v", public)
	}
	if r := api.As(byName.Token).Get("/v1/users/by-email/" + e); r.StatusCode != http.StatusForbidden {
		t.Fatalf("by-email as a non-admin: %d", r.StatusCode)
	}
	if r := api.Get("/v1/users/by-email/" + e); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("by-email anonymous: %d", r.StatusCode)
	}

	// Logout ends that session only.
	if r := api.As(byName.Token).Do(http.MethodDelete, "/v1/sessions/current", "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(byName.Token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized || r.Problem(t).Code != "unauthorized" {
		t.Fatalf("after logout: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(byEmail.Token).Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the other session died too: %d", r.StatusCode)
	}
	for _, bad := range []string{"Bearer", "Basic abc", "Bearer nonsense-token"} {
		r := api.Do(http.MethodGet, "/v1/me", "", nil, "Authorization", bad)
		if r.StatusCode != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("Authorization %q: %d", bad, r.StatusCode)
		}
	}
	if r := api.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/v1/me anonymous: %d", r.StatusCode)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	// 6 s, not 1: a row with an n-second TTL lives between n-1 and n
	// seconds (Cassandra counts from the whole second of its write), and
	// the store rounds what is left down to whole seconds, so a 1 s
	// session could be gone a millisecond after its login, and a 3 s one
	// a second after, before a login and a read under -race had answered.
	_, api := newTestApp(t, testkit.PackageDB(t), map[string]string{"SHELF_SESSION_TTL": "6s"})
	u := name("expiry")
	mustSignup(t, api, u, u+"@example.org")
	s := mustLogin(t, api, u)
	if r := api.As(s.Token).Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("fresh session: %d", r.StatusCode)
	}
	time.Sleep(6500 * time.Millisecond)
	if r := api.As(s.Token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired session: %d %s", r.StatusCode, r.Body)
	}
}

func TestPasswordChange(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), nil)
	u := name("pw")
	created := mustSignup(t, api, u, u+"@example.org")
	s1, s2 := mustLogin(t, api, u), mustLogin(t, api, u)
	path := "/v1/users/" + created.ID + "/password"
	if r := api.As(s1.Token).Send(http.MethodPut, path, map[string]string{"currentPassword": "wrong password", "newPassword": "a new passphrase"}); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong current password: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(s1.Token).Send(http.MethodPut, path, map[string]string{"currentPassword": testPassword, "newPassword": "short"}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("short new password: %d %s", r.StatusCode, r.Body)
	}
	other := name("pw")
	os := mustSignup(t, api, other, other+"@example.org")
	if r := api.As(s1.Token).Send(http.MethodPut, "/v1/users/"+os.ID+"/password", map[string]string{"currentPassword": testPassword, "newPassword": "a new passphrase"}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("someone else's password: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(s1.Token).Send(http.MethodPut, path, map[string]string{"currentPassword": testPassword, "newPassword": "a new passphrase"}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("change: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(s1.Token).Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the changing session was revoked: %d", r.StatusCode)
	}
	if r := api.As(s2.Token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another session survived the change: %d", r.StatusCode)
	}
	if r := login(api, u, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("old password still works: %d", r.StatusCode)
	}
	if r := login(api, u, "a new passphrase"); r.StatusCode != http.StatusCreated {
		t.Fatalf("new password: %d", r.StatusCode)
	}
}

func TestRenames(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, nil)
	u := name("ren")
	created := mustSignup(t, api, u, u+"@example.org")
	s := mustLogin(t, api, u)
	me := api.As(s.Token)
	path := "/v1/users/" + created.ID

	// A new email is only asked for (docs/design/email-change.md): the
	// account keeps its own until the new one is confirmed.
	renamed, newEmail := name("Ren"), name("ren")+"@example.org"
	r := me.Send(http.MethodPatch, path, map[string]string{"username": renamed, "email": newEmail, "displayName": "Ren É", "currentPassword": testPassword})
	var after accountBody
	r.JSON(t, &after)
	if r.StatusCode != http.StatusOK || after.Username != renamed || after.Email != u+"@example.org" || after.PendingEmail != newEmail || after.DisplayName != "Ren É" ||
		after.HeldUsername != u {
		t.Fatalf("rename: %d %s", r.StatusCode, r.Body)
	}
	mustLogin(t, api, renamed)
	mustLogin(t, api, u+"@example.org")
	if r := login(api, newEmail, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the email asked for logs in: %d", r.StatusCode)
	}
	if r := login(api, u, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the old username still logs in: %d", r.StatusCode)
	}
	// The old username is held for the account (docs/design/renames.md).
	if r := signup(api, u, name("ren")+"@example.org"); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the username the rename left: %d %s", r.StatusCode, r.Body)
	}
	if r := signup(api, name("ren"), newEmail); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the email asked for: %d %s", r.StatusCode, r.Body)
	}

	// Only a change of case: no new claim, the display form changes.
	upper := strings.ToUpper(renamed)
	if r := me.Send(http.MethodPatch, path, map[string]string{"username": upper, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("case change: %d %s", r.StatusCode, r.Body)
	}
	taker := name("ren")
	mustSignup(t, api, taker, taker+"@example.org")
	if r := me.Send(http.MethodPatch, path, map[string]string{"username": taker, "currentPassword": testPassword}); r.StatusCode != http.StatusConflict || !hasTaken(t, r, "username") {
		t.Fatalf("rename to a taken name: %d %s", r.StatusCode, r.Body)
	}
	// Back to the name held for it: no claim to win, and the name left
	// is free at once.
	if r := me.Send(http.MethodPatch, path, map[string]string{"username": u, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("rename back to the name held: %d %s", r.StatusCode, r.Body)
	}
	mustSignup(t, api, renamed, name("ren")+"@example.org")
	if r := me.Send(http.MethodPatch, path, map[string]any{}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty patch: %d", r.StatusCode)
	}
	if r := api.Send(http.MethodPatch, path, map[string]string{"displayName": "x"}); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous patch: %d", r.StatusCode)
	}
	other := name("ren")
	o := mustSignup(t, api, other, other+"@example.org")
	if r := me.Send(http.MethodPatch, "/v1/users/"+o.ID, map[string]string{"displayName": "x"}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("patching someone else: %d", r.StatusCode)
	}
	checkClaimsConsistent(t, db)
}

// TestRenameRaces: two users rename to the same name at once, many rounds:
// one wins, the loser gets 409 and keeps its old name; and one user
// renaming concurrently to different names ends with one of them, every
// other released.
func TestRenameRaces(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, nil)
	type acct struct {
		user userBody
		tok  string
	}
	mk := func() acct {
		u := name("rr")
		b := mustSignup(t, api, u, u+"@example.org")
		return acct{b, mustLogin(t, api, u).Token}
	}
	a, b := mk(), mk()
	for round := 0; round < 20; round++ {
		target := name("rrt")
		res := make([]*testkit.Response, 2)
		var wg sync.WaitGroup
		for i, who := range []acct{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = api.As(who.tok).Send(http.MethodPatch, "/v1/users/"+who.user.ID, map[string]string{"username": target, "currentPassword": testPassword})
			}()
		}
		wg.Wait()
		wins := 0
		for i, r := range res {
			who := []*acct{&a, &b}[i]
			switch r.StatusCode {
			case http.StatusOK:
				wins++
				r.JSON(t, &who.user)
			case http.StatusConflict:
				var now userBody
				api.Get("/v1/users/"+who.user.ID).JSON(t, &now)
				if now.Username != who.user.Username {
					t.Fatalf("round %d: the loser's name changed from %s to %s", round, who.user.Username, now.Username)
				}
				mustLogin(t, api, who.user.Username)
			default:
				t.Fatalf("round %d: %d %s", round, r.StatusCode, r.Body)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d renames to %s won, want 1", round, wins, target)
		}
	}

	// One user, several renames at once to different names.
	targets := []string{name("multi"), name("multi"), name("multi"), name("multi")}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[string]bool{}
	for _, target := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := api.As(a.tok).Send(http.MethodPatch, "/v1/users/"+a.user.ID, map[string]string{"username": target, "currentPassword": testPassword})
			switch r.StatusCode {
			case http.StatusOK:
				mu.Lock()
				won[target] = true
				mu.Unlock()
			case http.StatusConflict:
			default:
				t.Errorf("rename to %s: %d %s", target, r.StatusCode, r.Body)
			}
		}()
	}
	wg.Wait()
	// It ends with one of the names whose rename answered 200, and logs in
	// by it; the claims of the others are released (checkClaimsConsistent:
	// no claim held by the user but its name's).
	var now userBody
	api.Get("/v1/users/"+a.user.ID).JSON(t, &now)
	if !won[now.Username] {
		t.Fatalf("after renames to %v (200: %v) the user is named %q, none of the winners", targets, won, now.Username)
	}
	mustLogin(t, api, now.Username)
	checkClaimsConsistent(t, db)
}
