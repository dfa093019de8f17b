//go:build integration

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"shelf/tests/testkit"
)

// The tests of this file send input that could mean two things to the
// real service (docs/design/api-conventions.md): each is refused naming
// the field, and nothing of it is stored.

// wantField fails unless r is a 400 naming only field, with code.
func wantField(t *testing.T, r *testkit.Response, field, code string) {
	t.Helper()
	p := r.Problem(t)
	if r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != field || p.Errors[0].Code != code {
		t.Errorf("%s %s: %d %s; want 400 naming %s (%s)", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Body, field, code)
	}
}

// TestInvisibleCharactersAreRefusedInEveryField: every field people read
// refuses characters that show as nothing (one code, invalid_characters,
// naming the field), through the real service; emoji sequences, whose
// joiners and selectors are such characters too, are stored as sent.
func TestInvisibleCharactersAreRefusedInEveryField(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, as := m.member(t)
	item := createContent(t, as, "plain", "private")
	for _, tc := range []struct {
		method, path string
		api          *testkit.API
		body         map[string]any
		field        string
	}{
		{http.MethodPost, "/v1/content", as, map[string]any{"name": "a\u3164", "visibility": "private"}, "name"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"description": "one\u2028two"}, "description"},
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": name("grp"), "displayName": "\u115Fx"}, "displayName"},
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": name("grp"), "description": "x\uFFA0"}, "description"},
		{http.MethodPatch, "/v1/users/" + u.ID, as, map[string]any{"displayName": "Ann\u034FLee"}, "displayName"},
		{http.MethodPatch, "/v1/users/" + u.ID, as, map[string]any{"email": "ann\u2800@example.org"}, "email"},
		{http.MethodPost, "/v1/users/" + u.ID + "/suspension", m.admin, map[string]any{"reason": "spam\u2029again"}, "reason"},
	} {
		wantField(t, tc.api.Send(tc.method, tc.path, tc.body), tc.field, "invalid_characters")
	}
	if r := m.admin.Get("/v1/users/" + u.ID + "/suspension"); r.StatusCode != http.StatusNotFound {
		t.Errorf("the refused suspension was made: %d %s", r.StatusCode, r.Body)
	}
	var c contentBody
	as.Get("/v1/content/"+item.ID).JSON(t, &c)
	if c.Description != "" {
		t.Errorf("the refused description was stored: %q", c.Description)
	}

	emoji := "👩🏽‍💻 ❤️ 🏳️‍🌈 1️⃣ 🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"
	r := as.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]any{"displayName": emoji})
	var me userBody
	if r.JSON(t, &me); r.StatusCode != http.StatusOK || me.DisplayName != emoji {
		t.Errorf("emoji display name: %d %s", r.StatusCode, r.Body)
	}
	r = as.Send(http.MethodPatch, "/v1/content/"+item.ID, map[string]any{"name": emoji, "description": emoji + "\nsecond line"})
	if r.JSON(t, &c); r.StatusCode != http.StatusOK || c.Name != emoji || c.Description != emoji+"\nsecond line" {
		t.Errorf("emoji content name: %d %s", r.StatusCode, r.Body)
	}
}

// TestFieldLengthsHaveOneCode: a field's length rule answers with one
// code, the limit in its message, for a value just over the limit and for
// one far over it (or empty) alike; the transport adds no code of its own.
func TestFieldLengthsHaveOneCode(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, as := m.member(t)
	item := createContent(t, as, "plain", "private")
	group := mustPostGroup(t, as, name("len"), 0)
	for _, tc := range []struct {
		method, path string
		api          *testkit.API
		body         map[string]any
		field, code  string
		limit        string // in the message: the bounds, or the values allowed
	}{
		{http.MethodPost, "/v1/content", as, map[string]any{"name": "", "visibility": "private"}, "name", "length", "1-200"},
		{http.MethodPost, "/v1/content", as, map[string]any{"name": strings.Repeat("n", 201), "visibility": "private"}, "name", "length", "1-200"},
		{http.MethodPost, "/v1/content", as, map[string]any{"name": strings.Repeat("n", 3000), "visibility": "private"}, "name", "length", "1-200"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"description": strings.Repeat("d", 5001)}, "description", "too_long", "5000"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"description": strings.Repeat("d", 30000)}, "description", "too_long", "5000"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"visibility": strings.Repeat("v", 40)}, "visibility", "oneof", "public, loggedin or private"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"link": "https://example.org/" + strings.Repeat("l", 5000)}, "link", "format", "2048"},
		{http.MethodPut, "/v1/content/" + item.ID + "/members/" + m.id, as, map[string]any{"role": ""}, "role", "oneof", "viewer or manager"},
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": strings.Repeat("g", 300)}, "name", "format", "3-32"},
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": name("len"), "displayName": strings.Repeat("g", 2000)}, "displayName", "length", "1-64"},
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": name("len"), "description": strings.Repeat("g", 9000)}, "description", "too_long", "1000"},
		{http.MethodPut, "/v1/groups/" + group.ID + "/members/" + m.id, as, map[string]any{"role": strings.Repeat("r", 100)}, "role", "oneof", "member manager"},
		{http.MethodPatch, "/v1/users/" + u.ID, as, map[string]any{"username": strings.Repeat("u", 300)}, "username", "format", "3-32"},
		{http.MethodPut, "/v1/users/" + u.ID + "/password", as, map[string]any{"currentPassword": testPassword, "newPassword": strings.Repeat("p", 2000)}, "newPassword", "too_long", "128"},
		{http.MethodPut, "/v1/users/" + u.ID + "/password", as, map[string]any{"currentPassword": "", "newPassword": testPassword + "!"}, "currentPassword", "length", "1-1024"},
		{http.MethodPost, "/v1/sessions", m.api, map[string]any{"login": "", "password": testPassword}, "login", "length", "1-1024"},
		{http.MethodPost, "/v1/sessions", m.api, map[string]any{"login": strings.Repeat("l", 2000), "password": testPassword}, "login", "length", "1-1024"},
		{http.MethodPost, "/v1/users/" + u.ID + "/suspension", m.admin, map[string]any{"reason": strings.Repeat("r", 3000)}, "reason", "length", "1-500"},
		{http.MethodPost, "/v1/users/" + u.ID + "/suspension", m.admin, map[string]any{"reason": ""}, "reason", "length", "1-500"},
	} {
		r := tc.api.Send(tc.method, tc.path, tc.body)
		wantField(t, r, tc.field, tc.code)
		if p := r.Problem(t); len(p.Errors) == 1 && !strings.Contains(p.Errors[0].Message, tc.limit) {
			t.Errorf("%s %s, %s: the message %q does not give the limit %q", tc.method, tc.path, tc.field, p.Errors[0].Message, tc.limit)
		}
	}
}

// TestWhiteSpaceAtEitherEndIsRefusedInEveryField: one rule for
// every text field: white space at either end is refused (400 untrimmed,
// naming the field), never trimmed away, so the schema's maxLength counts
// what is stored. A group displayName of a space and 64 letters, which
// the schema forbids, is refused, and 64 letters alone are accepted.
// Nothing refused is stored.
func TestWhiteSpaceAtEitherEndIsRefusedInEveryField(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, as := m.member(t)
	item := createContent(t, as, "plain", "private")
	letters := strings.Repeat("a", 64)
	fresh := name("trim")
	for _, tc := range []struct {
		method, path string
		api          *testkit.API
		body         map[string]any
		field        string
	}{
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": name("trim"), "displayName": " " + letters}, "displayName"},
		{http.MethodPost, "/v1/groups", as, map[string]any{"name": name("trim"), "description": "two\nlines\n"}, "description"},
		{http.MethodPost, "/v1/content", as, map[string]any{"name": " " + strings.Repeat("n", 200), "visibility": "private"}, "name"},
		{http.MethodPost, "/v1/content", as, map[string]any{"name": "x", "visibility": "private", "link": "https://example.org/\u00A0"}, "link"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"description": "\tindented"}, "description"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"link": " https://example.org/"}, "link"},
		{http.MethodPatch, "/v1/content/" + item.ID, as, map[string]any{"link": " "}, "link"},
		{http.MethodPatch, "/v1/users/" + u.ID, as, map[string]any{"displayName": letters + "\u3000"}, "displayName"},
		{http.MethodPost, "/v1/users", m.api, map[string]any{"username": fresh, "email": " " + fresh + "@example.org", "password": testPassword}, "email"},
		{http.MethodPost, "/v1/users/" + u.ID + "/suspension", m.admin, map[string]any{"reason": "spam "}, "reason"},
	} {
		wantField(t, tc.api.Send(tc.method, tc.path, tc.body), tc.field, "untrimmed")
	}
	if r := m.admin.Get("/v1/users/" + u.ID + "/suspension"); r.StatusCode != http.StatusNotFound {
		t.Errorf("the refused suspension was made: %d %s", r.StatusCode, r.Body)
	}
	if r := m.admin.Get("/v1/users/by-username/" + fresh); r.StatusCode != http.StatusNotFound {
		t.Errorf("the refused signup was made: %d %s", r.StatusCode, r.Body)
	}
	var c contentBody
	as.Get("/v1/content/"+item.ID).JSON(t, &c)
	if c.Description != "" || c.Link != "" {
		t.Errorf("a refused description or link was stored: %+v", c)
	}
	// At the schema's maxLength with no space around: accepted as sent.
	g := postGroup(as, map[string]any{"name": name("trim"), "displayName": letters})
	var got groupResp
	if g.JSON(t, &got); g.StatusCode != http.StatusCreated || got.DisplayName != letters {
		t.Errorf("a displayName of 64 letters: %d %s", g.StatusCode, g.Body)
	}
}

// TestWholeNumbersWrittenWithAFraction: maxMembers 2540.0 is an integer
// as JSON Schema counts it (and as some JSON libraries write it): the
// group is created with 2540; 2540.5 is wrong_type and creates nothing.
func TestWholeNumbersWrittenWithAFraction(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	_, as := newUser(t, api, "whole")
	groupName := name("whole")
	r := as.Do(http.MethodPost, "/v1/groups", "application/json", []byte(`{"name":"`+groupName+`","maxMembers":2540.0}`))
	var g groupResp
	if r.JSON(t, &g); r.StatusCode != http.StatusCreated || g.MaxMembers == nil || *g.MaxMembers != 2540 {
		t.Fatalf("maxMembers 2540.0: %d %s", r.StatusCode, r.Body)
	}
	fraction := name("whole")
	r = as.Do(http.MethodPost, "/v1/groups", "application/json", []byte(`{"name":"`+fraction+`","maxMembers":2540.5}`))
	wantField(t, r, "maxMembers", "wrong_type")
	if r := as.Get("/v1/groups/by-name/" + fraction); r.StatusCode != http.StatusNotFound {
		t.Fatalf("maxMembers 2540.5 created the group: %d %s", r.StatusCode, r.Body)
	}
	if r := as.Do(http.MethodPost, "/v1/groups", "application/json", []byte(`{"name":"`+fraction+`"}`)); r.StatusCode != http.StatusCreated {
		t.Fatalf("the name of the refused group is not free: %d %s", r.StatusCode, r.Body)
	}
}

// TestTextThatIsNotUTF8IsNotStored: a body with bytes that are not UTF-8,
// or a lone surrogate escape, is 400 (not stored with U+FFFD in their
// place); a body that says another charset is 415; nothing is created.
func TestTextThatIsNotUTF8IsNotStored(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	u, as := newUser(t, api, "utf")
	for _, tc := range []struct {
		contentType, body string
		status            int
	}{
		{"application/json", "{\"name\":\"ab\xffcd\",\"visibility\":\"private\"}", http.StatusBadRequest},
		{"application/json", `{"name":"ab\ud800cd","visibility":"private"}`, http.StatusBadRequest},
		{"application/json", `{"name":"ab\udc00","visibility":"private"}`, http.StatusBadRequest},
		{"application/json; charset=iso-8859-1", "{\"name\":\"caf\xe9\",\"visibility\":\"private\"}", http.StatusUnsupportedMediaType},
	} {
		r := as.Do(http.MethodPost, "/v1/content", tc.contentType, []byte(tc.body))
		if r.StatusCode != tc.status {
			t.Errorf("%s %q: %d %s", tc.contentType, tc.body, r.StatusCode, r.Body)
		}
	}
	var lib struct{ Items []struct{ Name string } }
	as.Get("/v1/users/"+u.ID+"/library").JSON(t, &lib)
	if len(lib.Items) != 0 {
		t.Fatalf("refused bodies created %+v", lib.Items)
	}
}

// TestQueriesThatMeanTwoThings: a query string that does not parse, a
// limit not written as the contract writes it, or a parameter given twice
// is 400 naming it, never read leniently.
func TestQueriesThatMeanTwoThings(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	u, as := newUser(t, api, "query")
	path := "/v1/users/" + u.ID + "/library?"
	for query, field := range map[string]string{
		"%zz":                       "query",
		"limit=5&%zz":               "query",
		"limit=+5":                  "limit",
		"limit=05":                  "limit",
		"limit=5&limit=6":           "limit",
		"cursor=a&cursor=b":         "cursor",
		"order=asc":                 "order",
		"order=OLDEST":              "order",
		"order=":                    "order",
		"order=oldest&order=oldest": "order",
	} {
		r := as.Get(path + query)
		p := r.Problem(t)
		if r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != field {
			t.Errorf("?%s: %d %s; want 400 naming %s", query, r.StatusCode, r.Body, field)
		}
	}
	for _, ok := range []string{"limit=5", "order=oldest&limit=5", "order=newest"} {
		if r := as.Get(path + ok); r.StatusCode != http.StatusOK {
			t.Errorf("?%s: %d %s", ok, r.StatusCode, r.Body)
		}
	}
}
