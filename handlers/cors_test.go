package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func corsRouter(origins []string) http.Handler {
	return NewRouter(Deps{Logger: zerolog.Nop(), Ready: readyFunc(func() error { return nil }),
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: time.Second, CORSOrigins: origins})
}

func TestCORS(t *testing.T) {
	t.Parallel()
	h := corsRouter([]string{"https://app.example.org"})
	// Preflight from an allowed origin.
	req := httptest.NewRequest(http.MethodOptions, "/v1/users", nil)
	req.Header.Set("Origin", "https://app.example.org")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 300 || rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example.org" ||
		rec.Header().Get("Access-Control-Allow-Methods") != "POST" || rec.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight: %d %v", rec.Code, rec.Header())
	}
	// A simple request: the origin is echoed and the request id exposed.
	req = httptest.NewRequest(http.MethodGet, "/healthz", nil)
	req.Header.Set("Origin", "https://app.example.org")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example.org" || rec.Header().Get("Access-Control-Expose-Headers") == "" {
		t.Fatalf("simple request: %v", rec.Header())
	}
	// Another origin gets no CORS headers.
	req = httptest.NewRequest(http.MethodGet, "/healthz", nil)
	req.Header.Set("Origin", "https://evil.example.net")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin allowed: %v", rec.Header())
	}
	// Without configured origins there are no CORS headers at all.
	rec = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodGet, "/healthz", nil)
	req.Header.Set("Origin", "https://app.example.org")
	corsRouter(nil).ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS without configuration: %v", rec.Header())
	}
}
