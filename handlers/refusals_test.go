package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
	"shelf/tests/testkit"
)

// TestForbiddenAnswersSayWhoMay: ann, a plain user, asks for what only
// an admin, a group's manager, an item's manager or the account's owner
// may do: a search of the accounts, a membership and the closing of bob's
// group, a change of bob's item, bob's password. Each answer was 403
// forbidden "You may not do this.", the same words whatever she asked:
// nothing told a caller with curl or the console which right she lacks,
// nor whom to ask. Each must name who may (and stay 403 forbidden, as
// openapi.yaml lists it).
func TestForbiddenAnswersSayWhoMay(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	app := newMemApp(t)
	send := func(token, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		return app.checked(t, contract, token, method, path, body)
	}
	idOf := func(rec *httptest.ResponseRecorder, want int) string {
		t.Helper()
		var v struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		if rec.Code != want || json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			t.Fatalf("%d %s, want %d", rec.Code, rec.Body, want)
		}
		return v.ID + v.Token
	}
	const pw = "correct horse battery"
	bob := idOf(send("", http.MethodPost, "/v1/users", `{"username":"bob","email":"bob@example.org","password":"`+pw+`"}`), http.StatusCreated)
	bobs := idOf(send("", http.MethodPost, "/v1/sessions", `{"login":"bob","password":"`+pw+`"}`), http.StatusCreated)
	club := idOf(send(bobs, http.MethodPost, "/v1/groups", `{"name":"club"}`), http.StatusCreated)
	item := idOf(send(bobs, http.MethodPost, "/v1/content", `{"name":"notes","visibility":"public"}`), http.StatusCreated)

	for _, c := range []struct {
		method, path, body string
		says               []string
	}{
		{http.MethodGet, "/v1/users?q=bob", "", []string{"admin"}},
		{http.MethodPut, "/v1/groups/" + club + "/members/" + app.ann, `{"role":"member"}`, []string{"manager of this group"}},
		{http.MethodDelete, "/v1/groups/" + club, "", []string{"manager of this group", "admin"}},
		{http.MethodPatch, "/v1/content/" + item, `{"name":"mine"}`, []string{"manager of this item", "admin"}},
		{http.MethodDelete, "/v1/content/" + item + "/members/" + bob, "", []string{"manager of this item"}},
		{http.MethodPut, "/v1/users/" + bob + "/password", `{"currentPassword":"` + pw + `","newPassword":"another horse battery"}`, []string{"owner", "POST /v1/password-resets"}},
	} {
		p := problemOf(t, send(app.token, c.method, c.path, c.body), http.StatusForbidden, "forbidden")
		for _, words := range c.says {
			if !strings.Contains(p.Detail, words) {
				t.Errorf("%s %s: detail %q does not say %q", c.method, c.path, p.Detail, words)
			}
		}
	}
}

// TestASuspendedLoginSaysUntilWhen: ann's account is suspended, for a
// week and then until lifted, and she logs in with her password. The
// answer was 403 suspended "This account is suspended.": its until and
// reason stood only in extension members, which a caller with curl or a
// client generated without them never reads, and nothing said whether to
// wait (how long) or to ask a moderator. The detail must say since when,
// until when (or until an admin lifts it), and the reason given.
func TestASuspendedLoginSaysUntilWhen(t *testing.T) {
	t.Parallel()
	var st *memstore.Store
	app := newMemApp(t, func(s *memstore.Store, _ *accounts.Config) { st = s })
	ctx := context.Background()
	at := st.Now()
	for _, c := range []struct {
		until time.Time
		says  []string
	}{
		{at.Add(7 * 24 * time.Hour), []string{"since 2026-11-01T12:00:00Z", "until 2026-11-08T12:00:00Z", "log in again then", "spam"}},
		{time.Time{}, []string{"since 2026-11-01T12:00:00Z", "until an admin lifts it", "spam"}},
	} {
		u, err := st.Users().Get(ctx, app.ann)
		if err != nil {
			t.Fatal(err)
		}
		u.Status, u.Version = domain.StatusSuspended, u.Version+1
		u.Suspension = &domain.Suspension{UserID: u.ID, Username: u.Username, Reason: "spam", SuspendedAt: at, SuspendedBy: "u_admin", Until: c.until}
		if ok, err := st.Users().Update(ctx, u); !ok || err != nil {
			t.Fatalf("suspending ann: %v %v", ok, err)
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/sessions", strings.NewReader(`{"login":"ann","password":"correct horse battery"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		p := problemOf(t, rec, http.StatusForbidden, "suspended")
		for _, words := range c.says {
			if !strings.Contains(p.Detail, words) {
				t.Errorf("suspended until %v: detail %q does not say %q", c.until, p.Detail, words)
			}
		}
	}
}

// TestConflictsSayHowToGetPast: ann's group is full (maxMembers 1: her
// alone) and she adds bob; ann, the only manager of her item, leaves it.
// The answers were 409 group_full "The group has as many members as its
// maxMembers allows." and 409 last_manager "The item would be left
// without a manager.": true, but neither said what would let the request
// through (a group's maxMembers is fixed when it is made, so only a
// removal makes room; an item keeps a manager, so another must be made
// one first). Each must say it.
func TestConflictsSayHowToGetPast(t *testing.T) {
	t.Parallel()
	app := newMemApp(t)
	idOf := func(rec *httptest.ResponseRecorder) string {
		t.Helper()
		var v struct {
			ID string `json:"id"`
		}
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			t.Fatalf("%d %s, want 201", rec.Code, rec.Body)
		}
		return v.ID
	}
	bob := idOf(app.do(http.MethodPost, "/v1/users", `{"username":"bob","email":"bob@example.org","password":"correct horse battery"}`))
	club := idOf(app.do(http.MethodPost, "/v1/groups", `{"name":"club","maxMembers":1}`))
	item := idOf(app.do(http.MethodPost, "/v1/content", `{"name":"notes","visibility":"public"}`))

	for _, c := range []struct {
		method, path, body, code string
		says                     []string
	}{
		{http.MethodPut, "/v1/groups/" + club + "/members/" + bob, `{"role":"member"}`, "group_full", []string{"remove a member"}},
		{http.MethodDelete, "/v1/content/" + item + "/members/" + app.ann, "", "last_manager", []string{"manager first", "PUT /v1/content/{id}/members/"}},
	} {
		p := problemOf(t, app.do(c.method, c.path, c.body), http.StatusConflict, c.code)
		for _, words := range c.says {
			if !strings.Contains(p.Detail, words) {
				t.Errorf("%s %s: detail %q does not say %q", c.method, c.path, p.Detail, words)
			}
		}
	}
}

// TestALockedLoginSaysTheResetLetsTheOwnerIn: ann's login takes wrong
// passwords until its throttle refuses (two a window here). The answer,
// 429 too_many_attempts with Retry-After, said only "Try again in N
// seconds": an owner locked out by a stranger's guesses was told to wait
// out the window, though a reset by mail is not counted by the login's
// tiers and logs her in at once (docs/design/throttle.md, "Only the
// guesser pays"). A client with curl or an SDK, with no console's
// "Forgot your password?" beside it, must be told.
func TestALockedLoginSaysTheResetLetsTheOwnerIn(t *testing.T) {
	t.Parallel()
	app := newMemApp(t, func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts(), PerAddress: 2, PerLogin: 2, Window: time.Hour}
	})
	login := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/sessions", strings.NewReader(`{"login":"ann","password":"wrong horse battery"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		return rec
	}
	for range 2 {
		if rec := login(); rec.Code != http.StatusUnauthorized {
			t.Fatalf("a wrong password: %d %s, want 401", rec.Code, rec.Body)
		}
	}
	rec := login()
	p := problemOf(t, rec, http.StatusTooManyRequests, "too_many_attempts")
	if rec.Header().Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	for _, words := range []string{"Try again in", "POST /v1/password-resets"} {
		if !strings.Contains(p.Detail, words) {
			t.Errorf("detail %q does not say %q", p.Detail, words)
		}
	}
}

// TestAnExpiredLinkSaysWhatIsLeftToDo: ann asks for another address; the
// new address's "not me" link outlives its day, then the old address's
// revert link its week. Each was refused 400 invalid_token (token:
// expired) "it has expired; ask for a new mail", the words of a
// verification or a reset link: no route mails a new revert or "not me"
// link, so a caller following them had nowhere to go. Each must say what
// the expiry leaves: the request it answered is gone too; the change is
// no longer undone by a link.
func TestAnExpiredLinkSaysWhatIsLeftToDo(t *testing.T) {
	t.Parallel()
	var st *memstore.Store
	app := newMemApp(t, func(s *memstore.Store, _ *accounts.Config) { st = s })
	if rec := app.do(http.MethodPatch, "/v1/users/"+app.ann, `{"email":"ann@example.net","currentPassword":"correct horse battery"}`); rec.Code != http.StatusOK {
		t.Fatalf("asking for a new address: %d %s", rec.Code, rec.Body)
	}
	refuse, revert := app.mail.token("refuse-email", "ann@example.net"), app.mail.token("revert-email", "ann@example.org")
	if refuse == "" || revert == "" {
		t.Fatalf("links: not me %q, revert %q", refuse, revert)
	}
	post := func(path, token string) Problem {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		p := problemOf(t, rec, http.StatusBadRequest, "invalid_token")
		if len(p.Errors) != 1 || p.Errors[0].Field != "token" || p.Errors[0].Code != "expired" {
			t.Errorf("%s: errors %+v, want one naming token, code expired", path, p.Errors)
		}
		if strings.Contains(p.Detail, "new mail") {
			t.Errorf("%s: detail %q sends the caller for a mail no route sends", path, p.Detail)
		}
		return p
	}
	st.Advance(24*time.Hour + time.Second)
	if p := post("/v1/email-changes/refusal", refuse); !strings.Contains(p.Detail, "nothing is left to refuse") {
		t.Errorf("the not-me link: detail %q does not say nothing is left to refuse", p.Detail)
	}
	st.Advance(6 * 24 * time.Hour)
	if p := post("/v1/email-changes/revert", revert); !strings.Contains(p.Detail, "no longer be undone") {
		t.Errorf("the revert link: detail %q does not say the change can no longer be undone by it", p.Detail)
	}
}

// TestRepeatedClosingsAreLimitedPerAddress: whoever closed a group (or
// an admin) may send its closing again, and each repeat of a finished
// one writes a sweep's entry and wakes the job worker: without a limit,
// one session kept the worker sweeping an empty group. DELETE and POST
// .../closing share a limit per client address: 429 with Retry-After
// past it.
func TestRepeatedClosingsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	app := newMemAppWith(t, func(d *Deps) { d.RateLimitPerMinute = 3 })
	rec := app.do(http.MethodPost, "/v1/groups", `{"name":"club"}`)
	var club struct {
		ID string `json:"id"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &club) != nil {
		t.Fatalf("the group: %d %s", rec.Code, rec.Body)
	}
	if rec := app.do(http.MethodPost, "/v1/groups/"+club.ID+"/closing", `{"currentPassword":"correct horse battery"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("ann's closing: %d %s", rec.Code, rec.Body)
	}
	for i := range 2 {
		if rec := app.do(http.MethodDelete, "/v1/groups/"+club.ID, ""); rec.Code != http.StatusAccepted {
			t.Fatalf("repeat %d within the limit: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec = app.do(http.MethodDelete, "/v1/groups/"+club.ID, "")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a repeat past the limit: %d %s (Retry-After %q), want 429", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
}

// TestRepeatedDeletionsAreLimitedPerAddress: an admin may send the
// deletion of an account again, and each repeat of a finished one
// writes a sweep's entry and wakes the job worker, which runs every step
// of the deletion again: without a limit, one admin's session (a stolen
// one too) kept the worker sweeping a deleted account. DELETE
// /v1/users/{id} is limited per client address, in one bucket with POST
// .../deletion: 429 with Retry-After past it.
func TestRepeatedDeletionsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	var st *memstore.Store
	app := newMemAppWith(t, func(d *Deps) { d.RateLimitPerMinute = 3 }, func(s *memstore.Store, _ *accounts.Config) { st = s })
	ctx := context.Background()
	ann, err := st.Users().GetSerial(ctx, app.ann)
	if err != nil {
		t.Fatal(err)
	}
	ann.Roles, ann.Version = []string{domain.RoleAdmin}, ann.Version+1
	if ok, err := st.Users().Update(ctx, ann); err != nil || !ok {
		t.Fatalf("ann made an admin: %v %v", ok, err)
	}
	rec := app.as("", http.MethodPost, "/v1/users", `{"username":"bob","email":"bob@example.org","password":"correct horse battery"}`)
	var bob struct {
		ID string `json:"id"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &bob) != nil {
		t.Fatalf("bob's signup: %d %s", rec.Code, rec.Body)
	}
	for i := range 3 {
		if rec := app.do(http.MethodDelete, "/v1/users/"+bob.ID, ""); rec.Code != http.StatusAccepted {
			t.Fatalf("deletion %d within the limit: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec = app.do(http.MethodDelete, "/v1/users/"+bob.ID, "")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a repeat past the limit: %d %s (Retry-After %q), want 429", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
}

// TestRepeatedRebuildsAreLimitedPerAddress: each rebuild an admin asks
// for is a job of its own that rewrites the whole library in the job
// worker, one job at a time, the queue read in every pass before the
// pass ends: without a limit, one admin's session (a stolen one too)
// queued rebuilds of the largest library faster than the workers could
// run them, and every deletion and closing begun meanwhile waited behind
// them. POST /v1/admin/libraries/{id}/rebuild is limited per client
// address: 429 with Retry-After past it.
func TestRepeatedRebuildsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	var st *memstore.Store
	app := newMemAppWith(t, func(d *Deps) { d.RateLimitPerMinute = 3 }, func(s *memstore.Store, _ *accounts.Config) { st = s })
	ctx := context.Background()
	ann, err := st.Users().GetSerial(ctx, app.ann)
	if err != nil {
		t.Fatal(err)
	}
	ann.Roles, ann.Version = []string{domain.RoleAdmin}, ann.Version+1
	if ok, err := st.Users().Update(ctx, ann); err != nil || !ok {
		t.Fatalf("ann made an admin: %v %v", ok, err)
	}
	for i := range 3 {
		if rec := app.do(http.MethodPost, "/v1/admin/libraries/"+app.ann+"/rebuild", ""); rec.Code != http.StatusAccepted {
			t.Fatalf("rebuild %d within the limit: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	rec := app.do(http.MethodPost, "/v1/admin/libraries/"+app.ann+"/rebuild", "")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a rebuild past the limit: %d %s (Retry-After %q), want 429", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
}

// TestMakingAManagerAsksThePasswordAndIsLimitedPerAddress: a manager
// may remove every other member and close the group, so making one asks
// the caller's current password (a stolen session alone made the
// thief's own account a manager). Its refusal names currentPassword and
// says what to send; a plain member's add asks for nothing. Requests
// carrying a password are limited per client address, as every route
// that checks one is; those without one are not.
func TestMakingAManagerAsksThePasswordAndIsLimitedPerAddress(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	app := newMemAppWith(t, func(d *Deps) { d.RateLimitPerMinute = 1 })
	send := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		return app.checked(t, contract, app.token, method, path, body)
	}
	var ids []string
	for i, name := range []string{"bob", "cat"} {
		// Each signs up from an address of their own (signups are
		// limited per address too).
		req := newRequest("", http.MethodPost, "/v1/users", `{"username":"`+name+`","email":"`+name+`@example.org","password":"correct horse battery"}`)
		req.RemoteAddr = "198.51.100." + strconv.Itoa(i+1) + ":4000"
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		var v struct {
			ID string `json:"id"`
		}
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			t.Fatalf("%s's signup: %d %s", name, rec.Code, rec.Body)
		}
		ids = append(ids, v.ID)
	}
	bob, cat := ids[0], ids[1]
	var club struct {
		ID string `json:"id"`
	}
	if rec := send(http.MethodPost, "/v1/groups", `{"name":"club"}`); rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &club) != nil {
		t.Fatalf("the group: %d %s", rec.Code, rec.Body)
	}
	members := "/v1/groups/" + club.ID + "/members/"

	p := problemOf(t, send(http.MethodPut, members+bob, `{"role":"manager"}`), http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "currentPassword" || !strings.Contains(p.Detail, "current password") {
		t.Errorf("a manager made without a password: %+v, want a refusal naming currentPassword", p)
	}
	problemOf(t, send(http.MethodPut, members+bob, `{"role":"manager","currentPassword":"not hers"}`), http.StatusUnauthorized, "invalid_credentials")
	if rec := send(http.MethodPut, members+bob, `{"role":"manager","currentPassword":"correct horse battery"}`); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a second password from the address within the minute: %d %s, want 429 with Retry-After", rec.Code, rec.Body)
	}
	for _, who := range []string{bob, cat} {
		if rec := send(http.MethodPut, members+who, `{"role":"member"}`); rec.Code != http.StatusCreated {
			t.Errorf("a plain member's add past the limit on passwords: %d %s, want 201", rec.Code, rec.Body)
		}
	}
}

// TestASuspensionsEndLeavesRoomForTheHoldItMovesOn: bob renames himself
// (his old name held for him a week), and an admin suspends him until
// 9999-12-31T23:59:59Z, a time before year 10000 and so taken. A
// suspension moves the hold's end to its own end plus the hold's length,
// so the admin's next change of bob's account answered heldUsernameUntil
// 10000-01-07T23:59:59.000Z, which is no RFC 3339 time (openapi.yaml's
// date-time): an answer outside the contract, and in the owner's notice
// too. An until that leaves no room for the longest hold (a revert link's
// TTL, at most 20 years) is refused 400 naming until, code range; one
// before it is taken, and every answer matches openapi.yaml.
func TestASuspensionsEndLeavesRoomForTheHoldItMovesOn(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	var st *memstore.Store
	app := newMemAppWith(t, func(*Deps) {}, func(s *memstore.Store, _ *accounts.Config) { st = s })
	ctx := context.Background()
	ann, err := st.Users().GetSerial(ctx, app.ann)
	if err != nil {
		t.Fatal(err)
	}
	ann.Roles, ann.Version = []string{domain.RoleAdmin}, ann.Version+1
	if ok, err := st.Users().Update(ctx, ann); err != nil || !ok {
		t.Fatalf("ann made an admin: %v %v", ok, err)
	}
	send := func(token, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		return app.checked(t, contract, token, method, path, body)
	}
	const pw = "correct horse battery"
	var bob struct{ ID, Token string }
	if rec := send("", http.MethodPost, "/v1/users", `{"username":"bob","email":"bob@example.org","password":"`+pw+`"}`); rec.Code != http.StatusCreated ||
		json.Unmarshal(rec.Body.Bytes(), &bob) != nil {
		t.Fatalf("bob's signup: %d %s", rec.Code, rec.Body)
	}
	if rec := send("", http.MethodPost, "/v1/sessions", `{"login":"bob","password":"`+pw+`"}`); rec.Code != http.StatusCreated ||
		json.Unmarshal(rec.Body.Bytes(), &bob) != nil {
		t.Fatalf("bob's login: %d %s", rec.Code, rec.Body)
	}
	if rec := send(bob.Token, http.MethodPatch, "/v1/users/"+bob.ID, `{"username":"bobby","currentPassword":"`+pw+`"}`); rec.Code != http.StatusOK {
		t.Fatalf("bob's rename: %d %s", rec.Code, rec.Body)
	}
	p := problemOf(t, send(app.token, http.MethodPost, "/v1/users/"+bob.ID+"/suspension", `{"reason":"spam","until":"9999-12-31T23:59:59Z"}`),
		http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "until" || p.Errors[0].Code != "range" {
		t.Fatalf("errors %+v, want until range", p.Errors)
	}
	if rec := send(app.token, http.MethodPost, "/v1/users/"+bob.ID+"/suspension", `{"reason":"spam","until":"9899-12-31T23:59:59Z"}`); rec.Code != http.StatusCreated {
		t.Fatalf("a suspension until 9899: %d %s", rec.Code, rec.Body)
	}
	rec := send(app.token, http.MethodPatch, "/v1/users/"+bob.ID, `{"displayName":"Bob B"}`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"heldUsernameUntil":"9900-01-07T23:59:59.000Z"`) {
		t.Fatalf("the admin's change: %d %s", rec.Code, rec.Body)
	}
}

// TestAnUnknownLinkSaysWhatToDo: a verification or reset link whose token
// is none this service mailed (mistyped, cut short by a mail reader, or
// gone with its row) was refused "it is not a token this service mailed,
// or it has expired", with nothing to do next, though a new mail is one
// request away. It says to ask for one now; a revert link, which no route
// mails again, still sends nobody for a mail.
func TestAnUnknownLinkSaysWhatToDo(t *testing.T) {
	t.Parallel()
	app := newMemApp(t)
	for _, tc := range []struct {
		path, body string
		newMail    bool
	}{
		{"/v1/email-verifications/confirm", `{"token":"not-a-mailed-token"}`, true},
		{"/v1/password-resets/confirm", `{"token":"not-a-mailed-token","newPassword":"a quite unusual passphrase"}`, true},
		{"/v1/email-changes/revert", `{"token":"not-a-mailed-token"}`, false},
	} {
		req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		p := problemOf(t, rec, http.StatusBadRequest, "invalid_token")
		if len(p.Errors) != 1 || p.Errors[0].Field != "token" || p.Errors[0].Code != "unknown" {
			t.Errorf("%s: errors %+v, want one naming token, code unknown", tc.path, p.Errors)
		}
		if got := strings.Contains(p.Detail, "ask for a new mail"); got != tc.newMail {
			t.Errorf("%s: detail %q; says to ask for a new mail: %v, want %v", tc.path, p.Detail, got, tc.newMail)
		}
	}
}
