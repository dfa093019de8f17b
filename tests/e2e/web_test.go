//go:build integration

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"shelf/tests/testkit"
)

// TestWebPagesAreServed: the console and the reference page come from the
// binary, with their scripts, under a content security policy that keeps
// everything on the page's origin. (Their behaviour in a browser is
// tests/browser, run by make test-browser.)
func TestWebPagesAreServed(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	for path, want := range map[string]string{
		"/":                  `<script src="/assets/console.js">`,
		"/docs":              `<script src="/assets/docs.js">`,
		"/assets/console.js": "sessionStorage",
		"/assets/docs.js":    "SwaggerUIBundle",
		"/assets/search.js":  "/v1/users?",
	} {
		r := api.Get(path)
		if r.StatusCode != http.StatusOK || !strings.Contains(string(r.Body), want) {
			t.Errorf("%s: %d, body lacks %q", path, r.StatusCode, want)
		}
		if strings.HasSuffix(path, "/") || path == "/docs" {
			if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("%s: CSP %q", path, csp)
			}
		}
	}
	if r := api.Get("/assets/nothing-here.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("missing asset: %d", r.StatusCode)
	}
}
