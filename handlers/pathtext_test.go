package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain/accounts"
	"shelf/sdk/shelfclient"
	"shelf/tests/memstore"
)

// plainHasher stores a password as itself: these tests check the
// transport, not argon2id.
type plainHasher struct{}

func (plainHasher) Hash(_ context.Context, pw string) (string, error) { return "plain:" + pw, nil }
func (plainHasher) Verify(_ context.Context, pw, phc string) (bool, bool, error) {
	return phc == "plain:"+pw, false, nil
}
func (plainHasher) Burn(context.Context, string) error { return nil }

type nopWarnings struct{}

func (nopWarnings) Warn(context.Context, string, ...string) {}

// memAccounts is the accounts service on the memory store (the fake the
// store contract proves against Cassandra), its work after an answer
// done at once.
func memAccounts() *accounts.Service {
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	return accounts.New(accounts.Config{ClaimLease: 30 * time.Second, SessionTTL: time.Hour, SeenInterval: time.Hour,
		Now: st.Now, Background: func(f func()) { f() }}, st.Claims(), st.Users(), st.Sessions(), plainHasher{}, nopWarnings{})
}

// TestAddressesInPathsAreDecodedOnce: GET /v1/users/by-email/{email}
// reads the address the client percent-encoded, decoded once. An address
// may hold a '%' (it is atext: a%41b@example.org is an address, not
// aAb@example.org), which a client sends as %25; net/url decodes it into
// the path, and decoding the parameter again read a%41b as aAb, answering
// another account, and c%zz as no address at all (404 for an account that
// exists). Called through the generated SDK, as an admin's tool calls it.
func TestAddressesInPathsAreDecodedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := memAccounts()
	const pw = "correct horse battery"
	ids := map[string]string{}
	for i, email := range []string{"root@example.org", "a%41b@example.org", "aAb@example.org", "c%zz@example.org", "d/e@example.org", "f%2Fg@example.org"} {
		u, err := acc.Signup(ctx, accounts.SignupInput{Username: "user" + string(rune('a'+i)), Email: email, Password: pw})
		if err != nil {
			t.Fatalf("signup %s: %v", email, err)
		}
		ids[email] = u.ID
	}
	if _, err := acc.SetAdmin(ctx, "usera", true); err != nil { // root@example.org, never verified: by username
		t.Fatal(err)
	}
	login, err := acc.Login(ctx, "root@example.org", pw, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewRouter(Deps{Logger: zerolog.Nop(), Ready: readyFunc(func() error { return nil }),
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second, Accounts: acc}))
	t.Cleanup(srv.Close)
	client, err := shelfclient.NewClientWithResponses(srv.URL, shelfclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+login.Token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	for email, id := range ids {
		resp, err := client.GetUserByEmailWithResponse(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		if resp.JSON200 == nil || resp.JSON200.Id != id {
			t.Errorf("%s (sent as %s): %d %s, want %s", email, resp.HTTPResponse.Request.URL.EscapedPath(), resp.StatusCode(), resp.Body, id)
		}
	}
}

// TestWrongMethodOnAnEscapedPathSaysWhatItAllows: a 405 lists in Allow
// the methods of the path as chi routed it. For a path holding an escaped
// '/' (an address d/e@example.org, sent as d%2Fe@example.org) chi routes
// on the escaped path, and the list was made from the decoded one, where
// the '/' splits the segment and nothing matches: Allow was empty.
func TestWrongMethodOnAnEscapedPathSaysWhatItAllows(t *testing.T) {
	t.Parallel()
	h := corsRouter(nil)
	for _, path := range []string{"/v1/users/by-email/de@example.org", "/v1/users/by-email/d%2Fe@example.org"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, path, nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("PUT %s: %d, Allow %q, want 405 and GET, HEAD", path, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

// TestEscapedPathsRouteAsTheirDecodedForm: a path is routed as net/http
// decodes it, one segment at a time, so a character sent percent-escaped
// (u%5F for u_, %63 for c, %75sers for users) reaches the resource the
// unescaped path reaches. chi routed the escaped path whenever net/url
// kept it (any escape net/url would not write itself) and handed the
// parameters on still escaped: GET /v1/users/u%5F... looked up the id
// "u%5F..." and answered 404 for an account that exists. An escaped '/'
// stays inside its segment: it never reaches another route.
func TestEscapedPathsRouteAsTheirDecodedForm(t *testing.T) {
	t.Parallel()
	app := newMemApp(t)
	rec := app.do(http.MethodPost, "/v1/content", `{"name":"Notes","description":"","visibility":"private"}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	var item struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &item); err != nil {
		t.Fatal(err)
	}
	ann, content := strings.TrimPrefix(app.ann, "u_"), strings.TrimPrefix(item.ID, "c_")
	for _, tc := range []struct{ path, want string }{
		{"/v1/users/u%5F" + ann, `"id":"` + app.ann + `"`},
		{"/v1/users/%75_" + ann, `"id":"` + app.ann + `"`},
		{"/v1/%75sers/u_" + ann, `"id":"` + app.ann + `"`},
		{"/v1/users/by-username/%61nn", `"id":"` + app.ann + `"`},
		{"/v1/content/%63_" + content, `"id":"` + item.ID + `"`},
		{"/v1/content/c%5F" + content + "/members", `"principalId":"` + app.ann + `"`},
		{"/v1/users/u%5f" + ann + "/library", `"id":"` + item.ID + `"`},
	} {
		if rec := app.do(http.MethodGet, tc.path, ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: %d %s, want 200 with %s", tc.path, rec.Code, rec.Body, tc.want)
		}
	}
	// Two parameters, each escaped: the share's removal finds both.
	if rec := app.do(http.MethodDelete, "/v1/content/c%5F"+content+"/members/%75_"+ann, ""); rec.Code == http.StatusNotFound {
		t.Errorf("DELETE with escaped ids: %d %s", rec.Code, rec.Body)
	}
	// An escaped '/' is part of the id, not a step to /v1/users/{id}/sessions.
	for _, path := range []string{"/v1/users/u_" + ann + "%2Fsessions", "/v1/users/u%5F" + ann + "%2fsessions"} {
		if rec := app.do(http.MethodGet, path, ""); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d %s, want 404", path, rec.Code, rec.Body)
		}
	}
}
