package testkit

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// PwnedRange is a local Pwned Passwords range API (Have I Been Pwned):
// GET /range/{5 hex digits} lists the other 35 digits of every breached
// password's SHA-1 that starts with them, with counts, in upper case and
// CRLF as the real one; padding lines of count 0 when asked (Add-Padding).
// It records what it was asked, and fails on demand.
type PwnedRange struct {
	// URL is its address, SHELF_HIBP_URL.
	URL string

	mu       sync.Mutex
	breached map[string]int // full SHA-1, upper case -> count
	asked    []PwnedAsk
	status   int
}

// PwnedAsk is one request it answered.
type PwnedAsk struct {
	Path       string
	AddPadding string
}

// StartPwnedRange starts one, stopped with the test.
func StartPwnedRange(t testing.TB) *PwnedRange {
	t.Helper()
	p := &PwnedRange{breached: map[string]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// PwnedSHA1 is the upper-case hex SHA-1 of password, as the API spells it.
func PwnedSHA1(password string) string {
	sum := sha1.Sum([]byte(password))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// Breach records that breaches held password count times.
func (p *PwnedRange) Breach(password string, count int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.breached[PwnedSHA1(password)] = count
}

// FailWith makes every later answer this status with no range (0: answer
// again).
func (p *PwnedRange) FailWith(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status = status
}

// Asked lists the requests it answered, in order.
func (p *PwnedRange) Asked() []PwnedAsk {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PwnedAsk(nil), p.asked...)
}

func (p *PwnedRange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, PwnedAsk{Path: r.URL.Path, AddPadding: r.Header.Get("Add-Padding")})
	if p.status != 0 {
		http.Error(w, "failing on purpose", p.status)
		return
	}
	prefix, ok := strings.CutPrefix(r.URL.Path, "/range/")
	if !ok || len(prefix) != 5 || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	var lines []string
	for h, n := range p.breached {
		if strings.HasPrefix(h, strings.ToUpper(prefix)) {
			lines = append(lines, fmt.Sprintf("%s:%d", h[5:], n))
		}
	}
	if r.Header.Get("Add-Padding") == "true" {
		for i := range 3 {
			lines = append(lines, fmt.Sprintf("%035X:0", i+1))
		}
	}
	fmt.Fprint(w, strings.Join(lines, "\r\n"))
}
