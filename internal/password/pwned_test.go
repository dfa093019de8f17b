package password

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRange is a local Pwned Passwords range server: it knows breached
// passwords by their SHA-1, answers GET /range/{prefix} as the real API
// does (upper-case suffixes, CRLF, padding lines of count 0 when asked),
// and records the paths it was asked for.
type fakeRange struct {
	mu       sync.Mutex
	breached map[string]int // full SHA-1, upper case -> count
	asked    []string
	padding  []string // the Add-Padding header of each request
}

func sha1Hex(pw string) string {
	sum := sha1.Sum([]byte(pw))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

func (f *fakeRange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, r.URL.Path)
	f.padding = append(f.padding, r.Header.Get("Add-Padding"))
	prefix, ok := strings.CutPrefix(r.URL.Path, "/range/")
	if !ok || len(prefix) != 5 {
		http.NotFound(w, r)
		return
	}
	var b strings.Builder
	for h, n := range f.breached {
		if strings.HasPrefix(h, prefix) {
			fmt.Fprintf(&b, "%s:%d\r\n", h[5:], n)
		}
	}
	if r.Header.Get("Add-Padding") == "true" {
		for i := range 3 {
			fmt.Fprintf(&b, "%035X:0\r\n", i+1)
		}
	}
	fmt.Fprint(w, strings.TrimSuffix(b.String(), "\r\n"))
}

func TestPwnedFindsBreachedPasswords(t *testing.T) {
	t.Parallel()
	f := &fakeRange{breached: map[string]int{sha1Hex("hunter2hunter2"): 1234, sha1Hex("P@ssword!"): 1}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := NewPwned(srv.URL+"/", time.Minute)
	for pw, want := range map[string]int{"hunter2hunter2": 1234, "P@ssword!": 1, "a never breached phrase": 0} {
		n, err := p.Breaches(context.Background(), pw)
		if err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", pw, n, err, want)
		}
	}
	// k-anonymity: the server saw 5 hex digits of each hash, asked for
	// padding, and never the password or the rest of its hash.
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, path := range f.asked {
		if len(path) != len("/range/")+5 || f.padding[i] != "true" {
			t.Errorf("asked %q (Add-Padding %q)", path, f.padding[i])
		}
	}
	if want := "/range/" + sha1Hex("hunter2hunter2")[:5]; !slices.Contains(f.asked, want) {
		t.Errorf("asked %v, not %s", f.asked, want)
	}
}

// TestPwnedFailures: every way the API can fail is an error, never "not
// breached" (the caller's SHELF_HIBP_FAIL decides what it means).
func TestPwnedFailures(t *testing.T) {
	t.Parallel()
	suffix := sha1Hex("hunter2hunter2")[5:]
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "oops", http.StatusInternalServerError) }},
		{"429", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) }},
		{"an HTML page", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "<html><body>Service unavailable</body></html>")
		}},
		{"an empty body", func(w http.ResponseWriter, r *http.Request) {}},
		{"a short hash", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, suffix[:30]+":3\r\n") }},
		{"no count", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, suffix+"\r\n") }},
		{"a count that is no number", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, suffix+":many\r\n") }},
		{"a hash that is no hex", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, strings.Repeat("Z", 35)+":1\r\n")
		}},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			line := strings.Repeat("0", 35) + ":0\r\n"
			fmt.Fprint(w, strings.Repeat(line, maxRangeBytes/len(line)+2))
		}},
		{"a line too long", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("A", 70000)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			n, err := NewPwned(srv.URL, time.Minute).Breaches(context.Background(), "hunter2hunter2")
			if err == nil {
				t.Fatalf("no error (count %d)", n)
			}
		})
	}
}

// TestPwnedTimeout: an API that does not answer within SHELF_HIBP_TIMEOUT
// is an error (the handler holds the answer until the client gives up).
func TestPwnedTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	_, err := NewPwned(srv.URL, 50*time.Millisecond).Breaches(context.Background(), "hunter2hunter2")
	var timeout interface{ Timeout() bool }
	if !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

// TestPwnedUnreachable: nothing listens there.
func TestPwnedUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if _, err := NewPwned(url, time.Minute).Breaches(context.Background(), "hunter2hunter2"); err == nil {
		t.Fatal("no error")
	}
}

// TestPwnedStopsWithTheRequest: a request whose client went away stops
// asking.
func TestPwnedStopsWithTheRequest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewPwned(srv.URL, time.Minute).Breaches(ctx, "hunter2hunter2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
