package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body == "" {
			req.Body = http.NoBody
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		app.router.ServeHTTP(rec, req)
		if err := contract.Check(req, rec.Result(), rec.Body.Bytes()); err != nil {
			t.Errorf("%s %s: %v", method, path, err)
		}
		return rec
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
