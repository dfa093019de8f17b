package password

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shelf/tests/testkit"
)

func TestPwnedFindsBreachedPasswords(t *testing.T) {
	t.Parallel()
	f := testkit.StartPwnedRange(t)
	f.Breach("hunter2hunter2", 1234)
	f.Breach("P@ssword!", 1)
	p := NewPwned(f.URL+"/", time.Minute)
	for _, tc := range []struct {
		pw   string
		want int
	}{{"hunter2hunter2", 1234}, {"P@ssword!", 1}, {"a never breached phrase", 0}} {
		n, err := p.Breaches(context.Background(), tc.pw)
		if err != nil || n != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.pw, n, err, tc.want)
		}
	}
	// k-anonymity: the server saw 5 hex digits of each hash, asked for
	// padding, and never the password or the rest of its hash.
	asked := f.Asked()
	for _, a := range asked {
		if len(a.Path) != len("/range/")+5 || a.AddPadding != "true" {
			t.Errorf("asked %+v", a)
		}
	}
	if want := "/range/" + testkit.PwnedSHA1("hunter2hunter2")[:5]; len(asked) != 3 || asked[0].Path != want {
		t.Errorf("asked %v, first not %s", asked, want)
	}
}

// TestPwnedFailures: every way the API can fail is an error, never "not
// breached" (the caller's SHELF_HIBP_FAIL decides what it means).
func TestPwnedFailures(t *testing.T) {
	t.Parallel()
	suffix := testkit.PwnedSHA1("hunter2hunter2")[5:]
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

// TestPwnedErrorsHoldNoPartOfTheHash: a failed request's error is logged
// (SHELF_HIBP_FAIL=open: "logs it", docs/design/passwords.md), beside the
// request's id and so its route (PUT /v1/users/{id}/password names the
// account). net/http's error names the URL asked, whose last segment is
// the first 5 hex digits of the new password's SHA-1: 20 bits that cut a
// guesser's list of candidates a millionfold, for a password chosen
// with as few as 10^6 guesses. Whatever fails (no answer in time,
// nothing listening, the request ended), the error names the API, not
// the range, and stays a timeout or a cancellation where it was one.
func TestPwnedErrorsHoldNoPartOfTheHash(t *testing.T) {
	t.Parallel()
	const pw = "hunter2hunter2"
	prefix := testkit.PwnedSHA1(pw)[:5]
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hung.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		url  string
		ctx  context.Context
		is   func(error) bool
	}{
		{"no answer in time", hung.URL, context.Background(), func(err error) bool {
			var timeout interface{ Timeout() bool }
			return errors.As(err, &timeout) && timeout.Timeout()
		}},
		{"nothing listening", gone.URL, context.Background(), func(err error) bool { return err != nil }},
		{"the request ended", hung.URL, canceled, func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		_, err := NewPwned(tc.url, 50*time.Millisecond).Breaches(tc.ctx, pw)
		if !tc.is(err) {
			t.Errorf("%s: err = %v, not the failure it was", tc.name, err)
		}
		if err != nil && strings.Contains(strings.ToUpper(err.Error()), prefix) {
			t.Errorf("%s: the error names the range of the password's hash: %v", tc.name, err)
		}
	}
}
