//go:build integration

package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"shelf/internal/app"
	"shelf/tests/testkit"
)

// sessionInfoBody is the SessionInfo schema as tests read it.
type sessionInfoBody struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	LastSeenAt time.Time `json:"lastSeenAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	UserAgent  string    `json:"userAgent"`
	ClientIP   string    `json:"clientIp"`
	MadeWith   []string  `json:"madeWith"`
	Current    bool      `json:"current"`
}

type sessionListBody struct {
	Items      []sessionInfoBody `json:"items"`
	NextCursor string            `json:"nextCursor"`
}

// loginFrom logs in with a User-Agent and any other headers, and returns
// the token.
func loginFrom(t *testing.T, api *testkit.API, loginName, userAgent string, header ...string) string {
	t.Helper()
	body := `{"login":"` + loginName + `","password":"` + testPassword + `"}`
	r := api.Do(http.MethodPost, "/v1/sessions", "application/json", []byte(body), append([]string{"User-Agent", userAgent}, header...)...)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("login %s: %d %s", loginName, r.StatusCode, r.Body)
	}
	var s sessionBody
	r.JSON(t, &s)
	return s.Token
}

// sessionsOf pages through userID's sessions, limit at a time, as api's
// caller; every page but the last must carry nextCursor.
func sessionsOf(t *testing.T, api *testkit.API, userID string, limit int) []sessionInfoBody {
	t.Helper()
	var all []sessionInfoBody
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/v1/users/" + userID + "/sessions?limit=" + itoa(limit)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := api.Get(path)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.StatusCode, r.Body)
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q", path, r.Header.Get("Cache-Control"))
		}
		var page sessionListBody
		r.JSON(t, &page)
		if len(page.Items) > limit {
			t.Fatalf("a page of %d items at limit %d", len(page.Items), limit)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		cursor = page.NextCursor
	}
}

// sessionIDs are the ids of a list, in its order.
func sessionIDs(l []sessionInfoBody) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.ID
	}
	return out
}

// currentSession is the id of the session of api's token, from its list.
func currentSession(t *testing.T, api *testkit.API, userID string) string {
	t.Helper()
	for _, s := range sessionsOf(t, api, userID, 100) {
		if s.Current {
			return s.ID
		}
	}
	t.Fatal("no session of the list is the current one")
	return ""
}

// sessionWorld is an app on the package's keyspace with an admin logged in.
type sessionWorld struct {
	app   *app.App
	api   *testkit.API
	admin *testkit.API
}

func newSessionWorld(t *testing.T, env map[string]string) *sessionWorld {
	t.Helper()
	a, api := newTestApp(t, testkit.PackageDB(t), env)
	n := name("sessadmin")
	mustSignup(t, api, n, n+"@example.org")
	if _, err := a.Accounts.SetAdmin(context.Background(), n, true); err != nil {
		t.Fatal(err)
	}
	return &sessionWorld{app: a, api: api, admin: api.As(mustLogin(t, api, n).Token)}
}

// TestMySessionsListEachLogin: every login is listed, newest first, with
// when it was made and last seen, when it expires, the client that made
// it (the user agent cleaned and cut to 256 characters, the address as
// the request frame believes it) and which one is asking; paging at any
// limit lists the same, and the ids are neither the tokens nor usable as
// one.
func TestMySessionsListEachLogin(t *testing.T) {
	t.Parallel()
	w := newSessionWorld(t, nil)
	n := name("mine")
	u := mustSignup(t, w.api, n, n+"@example.org")
	long := "Mozilla/5.0\u202e(evil)\u200b\t" + strings.Repeat("é", 300)
	agents := []string{"first-client/1.0", "second-client/2.0", long}
	var tokens []string
	for _, ua := range agents {
		// An untrusted peer's X-Forwarded-For is not believed.
		tokens = append(tokens, loginFrom(t, w.api, n, ua, "X-Forwarded-For", "203.0.113.9"))
		time.Sleep(2 * time.Millisecond) // distinct createdAt
	}
	as := w.api.As(tokens[2])
	list := sessionsOf(t, as, u.ID, 100)
	if len(list) != 3 {
		t.Fatalf("%d sessions listed, want 3: %+v", len(list), list)
	}
	wantUA := "Mozilla/5.0(evil)" + strings.Repeat("é", 256-len("Mozilla/5.0(evil)"))
	for i, s := range list {
		agent := []string{wantUA, agents[1], agents[0]}[i]
		if s.UserAgent != agent {
			t.Errorf("session %d: userAgent %q, want %q", i, s.UserAgent, agent)
		}
		if s.Current != (i == 0) {
			t.Errorf("session %d: current %v", i, s.Current)
		}
		if s.ClientIP != "127.0.0.1" {
			t.Errorf("session %d: clientIp %q, want the peer's (X-Forwarded-For of an untrusted peer believed?)", i, s.ClientIP)
		}
		if !s.LastSeenAt.Equal(s.CreatedAt) || s.ExpiresAt.Sub(s.CreatedAt) != 24*time.Hour {
			t.Errorf("session %d: created %v, last seen %v, expires %v", i, s.CreatedAt, s.LastSeenAt, s.ExpiresAt)
		}
		if !strings.HasPrefix(s.ID, "s_") || len(s.ID) != 28 {
			t.Errorf("session %d: id %q", i, s.ID)
		}
		for _, tok := range tokens {
			_, secret, _ := strings.Cut(tok, ".")
			if strings.Contains(tok, s.ID[2:]) || strings.Contains(s.ID, secret[:8]) {
				t.Errorf("session id %q shares a part of the token %q", s.ID, tok)
			}
		}
		if i > 0 && !list[i-1].CreatedAt.After(s.CreatedAt) {
			t.Errorf("not newest first: %v then %v", list[i-1].CreatedAt, s.CreatedAt)
		}
	}
	// An id is not a token.
	if r := w.api.As(list[0].ID).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session id used as a token: %d", r.StatusCode)
	}
	for _, limit := range []int{1, 2} {
		if got := sessionIDs(sessionsOf(t, as, u.ID, limit)); strings.Join(got, ",") != strings.Join(sessionIDs(list), ",") {
			t.Errorf("limit %d lists %v, want %v", limit, got, sessionIDs(list))
		}
	}
	// Each session sees itself as the current one; the admin sees none.
	if sessionsOf(t, w.api.As(tokens[0]), u.ID, 100)[2].Current != true {
		t.Error("the first session does not see itself as current")
	}
	for _, s := range sessionsOf(t, w.admin, u.ID, 100) {
		if s.Current {
			t.Errorf("the admin's list marks %s current", s.ID)
		}
	}

	// Behind a trusted proxy the nearest untrusted hop is the client.
	_, proxied := newTestApp(t, testkit.PackageDB(t), map[string]string{"SHELF_TRUSTED_PROXIES": "127.0.0.1/32"})
	tok := loginFrom(t, proxied, n, "", "X-Forwarded-For", "198.51.100.7, 203.0.113.9")
	for _, s := range sessionsOf(t, proxied.As(tok), u.ID, 100) {
		if s.Current && (s.ClientIP != "203.0.113.9" || s.UserAgent != "") {
			t.Errorf("behind a trusted proxy: clientIp %q, userAgent %q", s.ClientIP, s.UserAgent)
		}
	}
}

// TestRevokingSessions: one session by its id (another, or the caller's
// own), every other one (keep=current), and, by an admin, all of a
// user's; each revoked session stops working at once and leaves the list;
// a revoked id is 404 from then on.
func TestRevokingSessions(t *testing.T) {
	t.Parallel()
	w := newSessionWorld(t, nil)
	n := name("revoke")
	u := mustSignup(t, w.api, n, n+"@example.org")
	var as []*testkit.API
	for i := 0; i < 4; i++ {
		as = append(as, w.api.As(mustLogin(t, w.api, n).Token))
	}
	ids := make([]string, len(as))
	for i, c := range as {
		ids[i] = currentSession(t, c, u.ID)
	}
	one := "/v1/users/" + u.ID + "/sessions/" + ids[1]
	if r := as[0].Do(http.MethodDelete, one, "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke one: %d %s", r.StatusCode, r.Body)
	}
	if r := as[1].Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked session still works: %d", r.StatusCode)
	}
	if r := as[0].Do(http.MethodDelete, one, "", nil); r.StatusCode != http.StatusNotFound || r.Problem(t).Code != "not_found" {
		t.Fatalf("revoking it again: %d %s", r.StatusCode, r.Body)
	}
	if got := len(sessionsOf(t, as[0], u.ID, 100)); got != 3 {
		t.Fatalf("%d sessions listed after one revocation, want 3", got)
	}
	// Sign out everywhere else.
	if r := as[0].Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions?keep=current", "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke the others: %d %s", r.StatusCode, r.Body)
	}
	for i, c := range as {
		if r := c.Get("/v1/me"); (r.StatusCode == http.StatusOK) != (i == 0) {
			t.Errorf("session %d after keep=current: %d", i, r.StatusCode)
		}
	}
	if l := sessionsOf(t, as[0], u.ID, 100); len(l) != 1 || l[0].ID != ids[0] || !l[0].Current {
		t.Fatalf("after keep=current: %+v", l)
	}
	// Its own, by id.
	if r := as[0].Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions/"+ids[0], "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke the current one by id: %d %s", r.StatusCode, r.Body)
	}
	if r := as[0].Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the current session revoked by id still works: %d", r.StatusCode)
	}
	// An admin ends every session of a user, seeing them first; keep
	// changes nothing for an admin.
	for _, keep := range []string{"", "?keep=current"} {
		a, b := w.api.As(mustLogin(t, w.api, n).Token), w.api.As(mustLogin(t, w.api, n).Token)
		if got := len(sessionsOf(t, w.admin, u.ID, 1)); got != 2 {
			t.Fatalf("the admin lists %d sessions, want 2", got)
		}
		if r := w.admin.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions"+keep, "", nil); r.StatusCode != http.StatusNoContent {
			t.Fatalf("admin revokes all%s: %d %s", keep, r.StatusCode, r.Body)
		}
		for _, c := range []*testkit.API{a, b} {
			if r := c.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a session the admin ended%s still works: %d", keep, r.StatusCode)
			}
		}
		r := w.admin.Get("/v1/users/" + u.ID + "/sessions")
		var page sessionListBody
		r.JSON(t, &page)
		if r.StatusCode != http.StatusOK || len(page.Items) != 0 || page.NextCursor != "" || !strings.Contains(string(r.Body), `"items":[]`) {
			t.Fatalf("after the admin ended them: %d %s", r.StatusCode, r.Body)
		}
		if r := w.admin.Get("/v1/me"); r.StatusCode != http.StatusOK {
			t.Fatalf("the admin's own session was ended: %d", r.StatusCode)
		}
	}
	// Revoking all is idempotent.
	if r := w.admin.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions", "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("revoking none: %d %s", r.StatusCode, r.Body)
	}
}

// TestSessionRoutesRefuse: who may not, and input that is not valid, each
// answered as openapi.yaml says, naming the field at fault.
func TestSessionRoutesRefuse(t *testing.T) {
	t.Parallel()
	w := newSessionWorld(t, nil)
	owner, ownerAPI := newUser(t, w.api, "owned")
	_, stranger := newUser(t, w.api, "stranger")
	sid := currentSession(t, ownerAPI, owner.ID)
	base := "/v1/users/" + owner.ID + "/sessions"
	routes := []struct{ method, path string }{
		{http.MethodGet, base}, {http.MethodDelete, base}, {http.MethodDelete, base + "/" + sid},
	}
	for _, rt := range routes {
		if r := w.api.Do(rt.method, rt.path, "", nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous %s %s: %d", rt.method, rt.path, r.StatusCode)
		}
		if r := stranger.Do(rt.method, rt.path, "", nil); r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "forbidden" {
			t.Errorf("another user's %s %s: %d %s", rt.method, rt.path, r.StatusCode, r.Body)
		}
	}
	if r := ownerAPI.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the refusals ended the owner's session: %d", r.StatusCode)
	}
	for _, path := range []string{
		"/v1/users/u_nope/sessions",                       // malformed user id
		"/v1/users/u_aaaaaaaaaaaaaaaaaaaaaaaaaa/sessions", // no such user (admin)
		"/v1/users/u_aaaaaaaaaaaaaaaaaaaaaaaaaa/sessions/" + sid,
	} {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			if strings.Count(path, "/") == 5 && method == http.MethodGet {
				continue // no GET of one session
			}
			if r := w.admin.Do(method, path, "", nil); r.StatusCode != http.StatusNotFound {
				t.Errorf("admin %s %s: %d %s", method, path, r.StatusCode, r.Body)
			}
		}
	}
	for _, bad := range []string{"s_nope", "s_aaaaaaaaaaaaaaaaaaaaaaaaaa", "current"} {
		if r := ownerAPI.Do(http.MethodDelete, base+"/"+bad, "", nil); r.StatusCode != http.StatusNotFound || r.Problem(t).Code != "not_found" {
			t.Errorf("revoke %s: %d %s", bad, r.StatusCode, r.Body)
		}
	}
	for _, c := range []struct {
		method, query, field, code string
	}{
		{http.MethodGet, "?cursor=nonsense", "cursor", "invalid"},
		{http.MethodGet, "?cursor=" + cursorOf("12|s_aaaaaaaaaaaaaaaaaaaaaaaaaa|x"), "cursor", "invalid"},
		{http.MethodGet, "?cursor=" + cursorOf("012|s_aaaaaaaaaaaaaaaaaaaaaaaaaa"), "cursor", "invalid"},
		{http.MethodGet, "?cursor=" + cursorOf("12|u_aaaaaaaaaaaaaaaaaaaaaaaaaa"), "cursor", "invalid"},
		{http.MethodGet, "?limit=0", "limit", "range"},
		{http.MethodGet, "?limit=101", "limit", "range"},
		{http.MethodGet, "?limit=1&limit=2", "limit", "duplicate"},
		{http.MethodGet, "?%zz", "query", "malformed"},
		{http.MethodDelete, "?keep=all", "keep", "oneof"},
		{http.MethodDelete, "?keep=", "keep", "oneof"},
		{http.MethodDelete, "?keep=current&keep=current", "keep", "duplicate"},
		{http.MethodDelete, "?%zz", "query", "malformed"},
	} {
		r := ownerAPI.Do(c.method, base+c.query, "", nil)
		p := r.Problem(t)
		if r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != c.field || p.Errors[0].Code != c.code {
			t.Errorf("%s %s: %d %s", c.method, c.query, r.StatusCode, r.Body)
		}
	}
	if r := ownerAPI.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("a refused revocation ended the session: %d", r.StatusCode)
	}
}

// cursorOf makes a cursor as the server encodes them, from its fields.
func cursorOf(fields string) string { return base64.RawURLEncoding.EncodeToString([]byte(fields)) }
