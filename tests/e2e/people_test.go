//go:build integration

package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"shelf/tests/testkit"
)

// peopleAll pages through GET /v1/people?prefix= as api with limit,
// checking no account comes twice and none shows an email, a status or
// roles, and returns the accounts found, by id.
func peopleAll(t *testing.T, api *testkit.API, prefix string, limit int) map[string]userBody {
	t.Helper()
	return foundOnce(t, api, "/v1/people?prefix="+url.QueryEscape(prefix), limit, func(u userBody) bool {
		return u.Email == "" && u.Status == "" && u.Roles == nil
	})
}

// TestPeopleSearchFindsUsernamesByTheirStart: any session finds the
// active and suspended accounts whose username starts with the prefix,
// case-insensitively, as strangers see them, and nobody else: not an
// account whose email starts so, nor one that holds the prefix further
// in, nor a signup that never answered, nor one renamed away or deleted;
// pages of any size list each once.
func TestPeopleSearchFindsUsernamesByTheirStart(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	start := name("Pq") + "x"
	var want []string
	var first userBody
	for i := range 9 {
		u := mustSignup(t, m.api, start+name("m"), name("plain")+"@example.org")
		if i == 0 {
			first = u
		}
		want = append(want, u.ID)
	}
	mustSignup(t, m.api, name("plain"), strings.ToLower(start)+"@example.org") // the email starts so
	mustSignup(t, m.api, "a"+start, name("plain")+"@example.org")              // the prefix further in
	suspended := want[2]
	if r := m.suspend(suspended, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	m.app.Accounts.Hooks.AfterCommit = func() error { return errCrash }
	if r := signup(m.api, start+"stopped", name("p")+"@example.org"); r.StatusCode != http.StatusInternalServerError {
		t.Fatalf("the stopped signup: %d %s", r.StatusCode, r.Body)
	}
	m.app.Accounts.Hooks.AfterCommit = nil
	renamed, renamedAPI := signupApart(t, m.api, start+"leaving")
	gone, _ := signupApart(t, m.api, start+"gone")
	if r := renamedAPI.Send(http.MethodPatch, "/v1/users/"+renamed.ID, map[string]string{"username": name("elsewhere"), "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("rename: %d %s", r.StatusCode, r.Body)
	}
	if r := adminDeleteAndFinish(t, m.admin, gone.ID); r.StatusCode != http.StatusAccepted {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	_, member := m.member(t)
	slices.Sort(want)
	for _, limit := range []int{1, 4, 100} {
		for _, prefix := range []string{start, strings.ToUpper(start), strings.ToLower(start)} {
			if got := foundIDs(peopleAll(t, member, prefix, limit)); !slices.Equal(got, want) {
				t.Fatalf("limit %d, %q: found %v, want %v", limit, prefix, got, want)
			}
		}
	}
	// Two characters, the shortest start, finds them too; the whole name
	// finds one.
	if found := peopleAll(t, member, start[:2], 100); len(found) < len(want) {
		t.Fatalf("%q: %d found, want at least %d", start[:2], len(found), len(want))
	}
	whole := peopleAll(t, m.admin, first.Username, 20)
	if len(whole) != 1 || whole[first.ID].Username != first.Username {
		t.Fatalf("by its whole name: %v", foundIDs(whole))
	}
}

// TestPeopleSearchRefusesWhatItCannotAnswer: no session 401; each
// malformed parameter a 400 naming it.
func TestPeopleSearchRefusesWhatItCannotAnswer(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	_, member := m.member(t)
	if r := m.api.Get("/v1/people?prefix=ab"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d %s", r.StatusCode, r.Body)
	}
	for _, tc := range []struct{ query, field, code string }{
		{"", "prefix", "required"},
		{"?prefix=a", "prefix", "format"},
		{"?prefix=" + strings.Repeat("a", 33), "prefix", "format"},
		{"?prefix=al%40example", "prefix", "format"},
		{"?prefix=%C3%A5l", "prefix", "format"},
		{"?prefix=ab&prefix=ac", "prefix", "duplicate"},
		{"?prefix=ab&limit=0", "limit", "range"},
		{"?prefix=ab&cursor=nonsense", "cursor", "invalid"},
	} {
		r := member.Get("/v1/people" + tc.query)
		p := r.Problem(t)
		if r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != tc.field || p.Errors[0].Code != tc.code {
			t.Errorf("%q: %d %s, want 400 naming %s (%s)", tc.query, r.StatusCode, r.Body, tc.field, tc.code)
		}
	}
}

// TestPeopleSearchIsLimitedPerAddress: past the limit a minute, 429 with
// Retry-After, for a session too.
func TestPeopleSearchIsLimitedPerAddress(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), map[string]string{"SHELF_RATE_LIMIT_PER_MINUTE": "3"})
	_, member := newUser(t, api, "limited")
	codes := []int{}
	for range 5 {
		codes = append(codes, member.Get("/v1/people?prefix=li").StatusCode)
	}
	if !slices.Equal(codes[:3], []int{200, 200, 200}) || codes[4] != http.StatusTooManyRequests {
		t.Fatalf("answers %v, want three 200s and then 429", codes)
	}
	if r := member.Get("/v1/people?prefix=li"); r.Header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After: %d %v", r.StatusCode, r.Header)
	}
}
