package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"shelf/domain"
)

func TestClientIPTrustsOnlyConfiguredProxies(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name, remote, xff, want string
	}{
		{"direct caller, header ignored", "203.0.113.7:5000", "1.2.3.4", "203.0.113.7"},
		{"through a trusted proxy", "10.1.2.3:5000", "198.51.100.9", "198.51.100.9"},
		{"spoofed entry left of the real one", "10.1.2.3:5000", "1.2.3.4, 198.51.100.9", "198.51.100.9"},
		{"chain of trusted proxies", "10.1.2.3:5000", "198.51.100.9, 10.9.9.9", "198.51.100.9"},
		{"malformed chain", "10.1.2.3:5000", "not-an-ip", "10.1.2.3"},
		{"trusted proxy, no header", "10.1.2.3:5000", "", "10.1.2.3"},
		{"ipv6 caller", "[2001:db8::1]:5000", "", "2001:db8::1"},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = tc.remote
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := clientIP(req, trusted).String(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDomainErrorsMapToStatuses(t *testing.T) {
	t.Parallel()
	taken := &domain.Error{Kind: domain.ErrConflict, Code: "conflict", Message: "Taken.",
		Fields: []domain.FieldError{{Field: "username", Code: "taken", Message: "is taken"}}}
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{domain.ErrNotFound, 404, "not_found"},
		{fmt.Errorf("load user: %w", domain.ErrNotFound), 404, "not_found"},
		{domain.ErrForbidden, 403, "forbidden"},
		{domain.ErrUnauthorized, 401, "unauthorized"},
		{domain.Invalid("Bad.", domain.FieldError{Field: "email", Code: "email", Message: "bad"}), 400, "validation_failed"},
		{fmt.Errorf("signup: %w", taken), 409, "conflict"},
		{domain.ErrUnavailable, 503, "unavailable"},
		{errors.New("gocql: no hosts available"), 500, "internal"},
	}
	for _, tc := range cases {
		p := toProblem(tc.err)
		if p.Status != tc.status || p.Code != tc.code {
			t.Errorf("%v: got %d %s, want %d %s", tc.err, p.Status, p.Code, tc.status, tc.code)
		}
		if p.Status == 500 && p.Detail == tc.err.Error() {
			t.Errorf("internal error text leaked: %q", p.Detail)
		}
	}
	if p := toProblem(taken); len(p.Errors) != 1 || p.Errors[0].Field != "username" || p.Errors[0].Code != "taken" {
		t.Errorf("fields lost: %+v", p.Errors)
	}
}

// TestAHugeForwardedForCostsLittle: behind a trusted proxy, the client's
// address is the nearest untrusted entry of X-Forwarded-For, read from
// its end, and a caller may send the header up to the header limit (1
// MB) for the proxy to append to. Split whole, a megabyte of commas was
// a million strings, 16 MB allocated before the rate limit or anything
// else looked at the request; read from the end, it costs the entries
// read.
func TestAHugeForwardedForCostsLittle(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "10.1.2.3:5000"
	req.Header.Add("X-Forwarded-For", strings.Repeat(",", 1<<20-100))
	req.Header.Add("X-Forwarded-For", "1.2.3.4, 198.51.100.9")
	const calls = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		if got := clientIP(req, trusted).String(); got != "198.51.100.9" {
			t.Fatalf("got %s, want 198.51.100.9", got)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 64<<10 {
		t.Fatalf("one request's address took %d bytes to read from a 1 MB X-Forwarded-For", per)
	}
}
