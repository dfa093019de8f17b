//go:build integration

package e2e

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// searchAll pages through GET /v1/users?q= as api with limit, checking no
// page is longer than limit and no account comes twice, and returns the
// accounts found, by id.
func searchAll(t *testing.T, api *testkit.API, q string, limit int) map[string]userBody {
	t.Helper()
	return foundOnce(t, api, "/v1/users?q="+url.QueryEscape(q), limit, func(userBody) bool { return true })
}

// foundOnce pages through the accounts a search at path lists as api with
// limit, failing when one comes twice or shown says it shows what it may
// not, and returns them by id.
func foundOnce(t *testing.T, api *testkit.API, path string, limit int, shown func(userBody) bool) map[string]userBody {
	t.Helper()
	found := map[string]userBody{}
	for _, u := range pageAll[userBody](t, api, path, limit) {
		if _, twice := found[u.ID]; twice {
			t.Fatalf("%s: %s (%s) came twice", path, u.Username, u.ID)
		}
		if !shown(u) {
			t.Fatalf("%s: %s shows what it may not: %+v", path, u.Username, u)
		}
		found[u.ID] = u
	}
	return found
}

// finds says whether a search for q as api lists the account id.
func finds(t *testing.T, api *testkit.API, q, id string) bool {
	t.Helper()
	_, ok := searchAll(t, api, q, 20)[id]
	return ok
}

// signupApart signs up username with an email that does not hold it (so
// a search by the username finds the account by that alone) and logs in.
func signupApart(t *testing.T, api *testkit.API, username string) (userBody, *testkit.API) {
	t.Helper()
	u := mustSignup(t, api, username, name("mail")+"@example.org")
	return u, api.As(mustLogin(t, api, username).Token)
}

// foundIDs are the keys of found, sorted.
func foundIDs(found map[string]userBody) []string {
	out := make([]string, 0, len(found))
	for id := range found {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TestSearchFindsUsersByPartOfANameOrEmail: a moderator's search finds
// the active and suspended accounts whose username or email holds the
// query, case-insensitively, each with its email and status, and nobody
// else: not a signup that never answered, not an account that holds the
// query's grams but not the query; pages of any size list each once.
func TestSearchFindsUsersByPartOfANameOrEmail(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	var want []string
	for i := range 23 {
		n := name("QxMarlow")
		email := name("plain") + "@example.org"
		if i%2 == 1 { // found by the email
			n, email = name("plain"), name("x")+"@QXMARLOW.example"
		}
		want = append(want, mustSignup(t, m.api, n, email).ID)
	}
	// The query's grams (qxm, arl, low ...) without the query.
	for range 5 {
		mustSignup(t, m.api, name("qxmaxarlow"), name("plain")+"@example.org")
	}
	suspended := want[4]
	if r := m.suspend(suspended, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	// A signup stopped after committing its names: its account row is
	// written, pending, with its grams.
	m.app.Accounts.Hooks.AfterCommit = func() error { return errCrash }
	if r := signup(m.api, name("qxmarlow"), name("p")+"@example.org"); r.StatusCode != http.StatusInternalServerError {
		t.Fatalf("the stopped signup: %d %s", r.StatusCode, r.Body)
	}
	m.app.Accounts.Hooks.AfterCommit = nil
	slices.Sort(want)
	for _, limit := range []int{1, 4, 20, 100} {
		found := searchAll(t, m.admin, "QXmArLoW", limit)
		if got := foundIDs(found); !slices.Equal(got, want) {
			t.Fatalf("limit %d: found %d accounts %v, want %d %v", limit, len(got), got, len(want), want)
		}
		for id, u := range found {
			wantStatus := "active"
			if id == suspended {
				wantStatus = "suspended"
			}
			if u.Email == "" || u.Status != wantStatus {
				t.Fatalf("limit %d: %s shows email %q status %q", limit, u.Username, u.Email, u.Status)
			}
		}
	}
	// Three characters, one gram: the shortest query.
	if found := searchAll(t, m.admin, "QXM", 100); len(found) != len(want)+5 {
		t.Fatalf("qxm: %d found, want %d", len(found), len(want)+5)
	}
	if found := searchAll(t, m.admin, "nobody-at-all", 20); len(found) != 0 {
		t.Fatalf("an unknown name finds %v", foundIDs(found))
	}
}

// TestSearchFollowsRenamesAndDeletions: an account is found by the names
// it holds now, never by ones it left: a new username, not the old one; a
// new email once confirmed, not while it is only asked for; nothing once
// deleted.
func TestSearchFollowsRenamesAndDeletions(t *testing.T) {
	t.Parallel()
	// Mail to Mailpit: the link that confirms the new email is read there.
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	a, api := newMailApp(t, db, mp, nil)
	m := withAdmin(t, a, api, db)
	oldName := name("oldname")
	u, userAPI := signupApart(t, m.api, oldName)
	other, _ := newUser(t, m.api, "gone")
	found := func(q string) bool { t.Helper(); return finds(t, m.admin, q, u.ID) }
	if !found(u.Username) || !found(strings.ToUpper(u.Email)) {
		t.Fatal("not found by its own names")
	}
	renamed := name("fresh")
	if r := userAPI.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"username": renamed, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("rename: %d %s", r.StatusCode, r.Body)
	}
	if found(u.Username) || !found(renamed) {
		t.Fatalf("after the rename: by the old name %v, by the new %v", found(u.Username), found(renamed))
	}
	if !found(strings.TrimSuffix(u.Email, "@example.org") + "@") {
		t.Fatal("not found by its email after the rename")
	}
	// An email asked for is not the account's until it is confirmed.
	asked := name("asked") + "@elsewhere.example"
	if r := userAPI.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"email": asked, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("email change: %d %s", r.StatusCode, r.Body)
	}
	if found(asked) {
		t.Fatal("found by an email only asked for")
	}
	token := testkit.TokenIn(t, mp.WaitFor(t, asked, 1)[0].Text, "verify")
	if r := m.api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": token}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming the new email: %d %s", r.StatusCode, r.Body)
	}
	if !found(asked) || !found(strings.ToUpper(asked)) {
		t.Fatal("not found by its new email once confirmed")
	}
	if found(u.Email) {
		t.Fatal("still found by the email it left")
	}
	if r := adminDeleteAndFinish(t, m.admin, other.ID); r.StatusCode != http.StatusAccepted {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	for _, q := range []string{other.Username, other.Email, "gone"} {
		if _, ok := searchAll(t, m.admin, q, 20)[other.ID]; ok {
			t.Fatalf("the deleted account is found by %q", q)
		}
	}
}

// TestSearchRefusesWhatItCannotAnswer: no session 401, a non-admin 403;
// each malformed parameter a 400 naming it.
func TestSearchRefusesWhatItCannotAnswer(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	_, plain := m.member(t)
	if r := m.api.Get("/v1/users?q=abc"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d %s", r.StatusCode, r.Body)
	}
	if r := plain.Get("/v1/users?q=abc"); r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "forbidden" {
		t.Fatalf("a non-admin: %d %s", r.StatusCode, r.Body)
	}
	for _, tc := range []struct{ query, field, code string }{
		{"", "q", "required"},
		{"?limit=5", "q", "required"},
		{"?q=ab", "q", "too_short"},
		{"?q=e%CC%81x", "q", "too_short"}, // three characters, two once composed
		{"?q=" + strings.Repeat("a", 255), "q", "too_long"},
		{"?q=%FF%FEabc", "q", "format"},
		{"?q=abc&q=abd", "q", "duplicate"},
		{"?q=abc&limit=0", "limit", "range"},
		{"?q=abc&cursor=nonsense", "cursor", "invalid"},
		{"?q=abc&cursor=%", "query", "malformed"},
	} {
		r := m.admin.Get("/v1/users" + tc.query)
		p := r.Problem(t)
		if r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != tc.field || p.Errors[0].Code != tc.code {
			t.Errorf("%q: %d %s, want 400 naming %s (%s)", tc.query, r.StatusCode, r.Body, tc.field, tc.code)
		}
	}
}

// TestIndexUsersWritesTheGramsOfOlderAccounts: an account row from before
// migrations 019 and 030 (no grams, no username prefixes) is not found by
// either search; `api admin index-users --dry-run` counts it and changes
// nothing; the run writes its grams and prefixes and both searches find
// it; a second run finds nothing to do.
func TestIndexUsersWritesTheGramsOfOlderAccounts(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	old, _ := m.member(t)
	fresh, _ := m.member(t)
	if err := m.db.Session.Query(`UPDATE users SET search_grams = null, username_prefixes = null WHERE id = ? IF EXISTS`, nil).Bind(old.ID).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	byPrefix := func() bool { _, ok := peopleAll(t, m.admin, old.Username, 20)[old.ID]; return ok }
	if byPrefix() {
		t.Fatal("found by its username's start before the index")
	}
	found := func() map[string]userBody { return searchAll(t, m.admin, "member", 20) }
	if f := found(); len(f) != 1 || f[fresh.ID].ID == "" {
		t.Fatalf("before the index: found %v, want the fresh account alone", foundIDs(f))
	}
	out, err := runAdminOn(m.db, "index-users", "--dry-run")
	if err != nil || !strings.Contains(out, "3 read, 1 without their search grams or prefixes (dry run") {
		t.Fatalf("dry run: %q %v", out, err)
	}
	if f := found(); len(f) != 1 {
		t.Fatalf("the dry run wrote: %v", foundIDs(f))
	}
	out, err = runAdminOn(m.db, "index-users")
	if err != nil || !strings.Contains(out, "1 without their search grams or prefixes, 1 written") {
		t.Fatalf("run: %q %v", out, err)
	}
	if f := found(); len(f) != 2 || f[old.ID].ID == "" {
		t.Fatalf("after the index: %v", foundIDs(f))
	}
	if !byPrefix() {
		t.Fatal("not found by its username's start after the index")
	}
	if out, err = runAdminOn(m.db, "index-users"); err != nil || !strings.Contains(out, "0 without their search grams or prefixes, 0 written") {
		t.Fatalf("second run: %q %v", out, err)
	}
}

// TestSearchFollowsTheRowUnderFaults: the grams are the row's own cells,
// so the row's rule for lost and late compare-and-sets is the search's.
// A rename whose answer is lost after it applied is settled by the
// read-back: the new name is found, the old is not. A rename attempt held
// back (a hung node's queue) while the rename goes on, applies and is
// followed by another, lands after both: its condition is an old version,
// so it changes nothing, and no name it carried is found.
func TestSearchFollowsTheRowUnderFaults(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	first := name("lostfirst")
	u, as := signupApart(t, m.api, first)
	rename := func(to string) {
		t.Helper()
		if r := as.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"username": to, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
			t.Fatalf("rename to %s: %d %s", to, r.StatusCode, r.Body)
		}
	}
	// The people search reads the row's username prefixes, written by
	// the same compare-and-sets: it must say what the moderators' says.
	foundAs := func(q string) bool {
		t.Helper()
		byGrams := finds(t, m.admin, q, u.ID)
		if _, byPrefix := peopleAll(t, m.admin, q, 20)[u.ID]; byPrefix != byGrams {
			t.Fatalf("%s: found by its grams %v, by its prefixes %v", q, byGrams, byPrefix)
		}
		return byGrams
	}

	faults(m.app).Set(onceFault("users.update", faultinject.AfterLWT))
	second := name("lostsecond")
	rename(second)
	faults(m.app).Set(nil)
	if foundAs(first) || !foundAs(second) {
		t.Fatalf("after a rename whose answer was lost: by %s %v, by %s %v", first, foundAs(first), second, foundAs(second))
	}

	var mu sync.Mutex
	held := false
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		mu.Lock()
		defer mu.Unlock()
		if stmt == "users.update" && at == faultinject.BeforeLWT && !held {
			held = true
			return faultinject.ErrHoldWrite
		}
		return nil
	})
	third := name("heldthird")
	rename(third)
	faults(m.app).Set(nil)
	fourth := name("lastfourth")
	rename(fourth)
	if err := faults(m.app).LandHeld(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{first, second, third} {
		if foundAs(q) {
			t.Fatalf("found by %s after the held attempt landed", q)
		}
	}
	if !foundAs(fourth) {
		t.Fatalf("not found by its name %s", fourth)
	}
}
