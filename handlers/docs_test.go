package handlers

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"shelf"
	"shelf/internal/metrics"
)

// TestDocsTryItOutCallsThePageOrigin: /docs works wherever the
// server is. Swagger UI resolves the document's server URLs against the
// address it fetched /openapi.yaml from, and Try-it-out calls the result;
// the page's CSP lets it fetch 'self' only. So for a page opened at any
// address (localhost, 127.0.0.1, another port, a deployment behind TLS)
// every server of the served document must resolve to that page's own
// origin, and the CSP must name no host of its own that would stand in
// for 'self'.
func TestDocsTryItOutCallsThePageOrigin(t *testing.T) {
	t.Parallel()
	h := NewRouter(Deps{Logger: zerolog.Nop(), Ready: readyFunc(func() error { return nil }),
		OpenAPI: shelf.OpenAPI, MaxBodyBytes: 1 << 20, RequestTimeout: time.Second, Metrics: metrics.New()})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
		return rec
	}
	var doc struct {
		Servers []struct {
			URL string `yaml:"url"`
		} `yaml:"servers"`
	}
	if err := yaml.NewDecoder(bytes.NewReader(get("/openapi.yaml").Body.Bytes())).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) == 0 {
		t.Fatal("the document names no server: Swagger UI would offer none to Try-it-out")
	}
	for _, page := range []string{"http://localhost:8080", "http://127.0.0.1:18090", "http://[::1]:9000", "https://shelf.example.org"} {
		spec, _ := url.Parse(page + "/openapi.yaml")
		for _, s := range doc.Servers {
			ref, err := url.Parse(s.URL)
			if err != nil {
				t.Fatalf("server %q: %v", s.URL, err)
			}
			if got := spec.ResolveReference(ref); got.Scheme+"://"+got.Host != page {
				t.Errorf("a page at %s would Try-it-out against %s (server %q): its CSP refuses another origin", page, got, s.URL)
			}
		}
	}
	csp := get("/docs").Header().Get("Content-Security-Policy")
	for _, directive := range strings.Split(csp, ";") {
		name, _, _ := strings.Cut(strings.TrimSpace(directive), " ")
		if name == "connect-src" || (name == "default-src" && strings.Contains(directive, "://")) {
			t.Errorf("page CSP %q: %q narrows fetches to a fixed address", csp, directive)
		}
	}
	if !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("page CSP %q: Try-it-out needs fetches to the page's own origin", csp)
	}
}
