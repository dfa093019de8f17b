package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/metrics"
)

// surfaceRouter is the real router with metrics and a logger the test
// reads; no services (the requests below need none).
func surfaceRouter(logs *bytes.Buffer, m *metrics.Metrics) http.Handler {
	return NewRouter(Deps{Logger: zerolog.New(logs), Ready: readyFunc(func() error { return nil }),
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: time.Second, Metrics: m})
}

// TestEveryAnswerCarriesSecurityHeaders (docs/design/api-conventions.md): API answers,
// problems, pages and files all say no framing, no referrer, no sniffing
// and no storing; every HTML page has a CSP that allows no framing and no
// script but the origin's own, /assets/docs.html included.
func TestEveryAnswerCarriesSecurityHeaders(t *testing.T) {
	t.Parallel()
	h := surfaceRouter(&bytes.Buffer{}, metrics.New())
	cases := []struct {
		path, auth string
		status     int
		html       bool
	}{
		{"/v1/nowhere", "", http.StatusNotFound, false},
		{"/v1/me", "Basic eA==", http.StatusUnauthorized, false},
		{"/healthz", "", http.StatusOK, false},
		{"/openapi.yaml", "", http.StatusOK, false},
		{"/metrics", "", http.StatusOK, false},
		{"/assets/console.js", "", http.StatusOK, false},
		{"/", "", http.StatusOK, true},
		{"/docs", "", http.StatusOK, true},
		{"/assets/docs.html", "", http.StatusOK, true},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s: %d, want %d", c.path, rec.Code, c.status)
			continue
		}
		hdr := rec.Header()
		for name, want := range map[string]string{
			"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
			"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
		} {
			if got := hdr.Get(name); got != want {
				t.Errorf("%s: %s %q, want %q", c.path, name, got, want)
			}
		}
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q allows framing", c.path, csp)
		}
		isHTML := strings.HasPrefix(hdr.Get("Content-Type"), "text/html")
		if isHTML != c.html {
			t.Errorf("%s: Content-Type %q", c.path, hdr.Get("Content-Type"))
		}
		if c.html && (!strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "script-src") || strings.Contains(csp, "*")) {
			t.Errorf("%s: page CSP %q: want scripts from the origin only", c.path, csp)
		}
		if !c.html && !strings.HasPrefix(csp, "default-src 'none'") && c.path != "/assets/console.js" {
			t.Errorf("%s: CSP %q: an answer that is not a page runs nothing", c.path, csp)
		}
	}
}

// TestHugeMethodDoesNotGrowMetrics (methodLabel): a request with a
// 50 KB method is counted under method="other"; the scrape stays the size
// it was after a request with a plain unknown method.
func TestHugeMethodDoesNotGrowMetrics(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	m := metrics.New()
	h := surfaceRouter(&logs, m)
	scrape := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	send := func(method string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/v1/me", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Fatalf("%.20s...: %d, want 405", method, rec.Code)
		}
	}
	send("BREW")
	scrape() // the scrape's own series exist from here on
	before := scrape()
	huge := strings.Repeat("X", 50<<10)
	send(huge)
	send(huge + "Y")
	after := scrape()
	if strings.Contains(after, "XXXX") || strings.Contains(after, "BREW") {
		t.Fatalf("a request method became a label value (scrape of %d bytes)", len(after))
	}
	if len(after) > len(before)+1024 {
		t.Errorf("the scrape grew from %d to %d bytes after two requests of known series", len(before), len(after))
	}
	if !strings.Contains(after, `method="other"`) {
		t.Errorf("unknown methods are not counted as other")
	}
	if strings.Contains(logs.String(), "XXXX") {
		t.Errorf("the access log took the 50 KB method")
	}
}

// TestAccessLogRedactsEmails: an address in a path
// (the admins' lookup by email, or one typed where an id belongs) is not
// written to the access log.
func TestAccessLogRedactsEmails(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := surfaceRouter(&logs, nil)
	for _, path := range []string{"/v1/users/by-email/alice.secret@example.org", "/v1/users/by-email/alice.secret%40example.org",
		"/v1/users/alice.secret@example.org/sessions", "/nowhere/alice.secret@example.org"} {
		logs.Reset()
		// A malformed Authorization header: answered 401 before any
		// service is asked (there are none here), and logged like any.
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Basic eA==")
		h.ServeHTTP(httptest.NewRecorder(), req)
		lines := logLines(t, &logs)
		access := lines[len(lines)-1]
		if strings.Contains(logs.String(), "alice.secret") {
			t.Errorf("%s: the address is in the log: %s", path, logs.String())
		}
		if p, _ := access["path"].(string); !strings.Contains(p, "[redacted]") {
			t.Errorf("%s: access line path %q", path, p)
		}
	}
}

// TestAccessLogRedactsAnAddressWithAnAtNFKCFolds: an address whose "@"
// is a fullwidth or small commercial at (U+FF20, U+FE6B) is an address
// all the same: NormalizeEmail folds it to "@" by NFKC, so the admins'
// lookup by email finds the account by it. The access log redacted only
// a segment with "@" and wrote these paths as sent.
func TestAccessLogRedactsAnAddressWithAnAtNFKCFolds(t *testing.T) {
	t.Parallel()
	if _, key, fe := domain.NormalizeEmail("alice.secret\uff20example.org"); fe != nil || key != "alice.secret@example.org" {
		t.Fatalf("the wide at is not read as an address's: %q, %v", key, fe)
	}
	var logs bytes.Buffer
	h := surfaceRouter(&logs, nil)
	// U+FF20 and U+FE6B, percent-encoded as a client sends them.
	for _, path := range []string{"/v1/users/by-email/alice.secret%EF%BC%A0example.org", "/v1/users/by-email/alice.secret%EF%B9%ABexample.org",
		"/v1/users/alice.secret%EF%BC%A0example.org/sessions"} {
		logs.Reset()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Basic eA==")
		h.ServeHTTP(httptest.NewRecorder(), req)
		if strings.Contains(logs.String(), "alice.secret") {
			t.Errorf("%q: the address is in the log: %s", path, logs.String())
		}
	}
}

// TestRolesShownToTheUserAndAdminsOnly: who the admins
// are is not shown to everyone who can read an account.
func TestRolesShownToTheUserAndAdminsOnly(t *testing.T) {
	t.Parallel()
	u := domain.Shown{ID: "u_aaaaaaaaaaaaaaaaaaaaaaaaaa", Username: "root", DisplayName: "root", Email: "root@example.org",
		Roles: []string{"admin"}, Status: domain.StatusActive}
	for _, c := range []struct {
		full bool
		want string
	}{{false, ""}, {true, `"roles":["admin"]`}} {
		body, err := json.Marshal(toUserResponse(accounts.UserView{User: u, Full: c.full}))
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" && strings.Contains(string(body), `"roles"`) {
			t.Errorf("a stranger sees the roles: %s", body)
		}
		if c.want != "" && !strings.Contains(string(body), c.want) {
			t.Errorf("the user or an admin sees %s, want %s", body, c.want)
		}
	}
	u.Roles = nil
	if body, _ := json.Marshal(toUserResponse(accounts.UserView{User: u, Full: true})); !strings.Contains(string(body), `"roles":[]`) {
		t.Errorf("no roles, seen by the user: %s, want an empty list", body)
	}
}
