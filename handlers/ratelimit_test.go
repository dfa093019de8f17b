package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// fakeClock lets tests move the limiter's time without sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestLimiter returns a limiter on a fake clock and the handler chain a
// request goes through: the real frame (so the real client-IP code
// runs), the limiter, and a handler answering 204.
func newTestLimiter(perMinute int) (*RateLimiter, *fakeClock, http.Handler) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	l := NewRateLimiter(perMinute)
	l.now = clock.Now
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return l, clock, frame(zerolog.Nop(), nil, 0, nil)(l.Middleware(next))
}

func doFrom(h http.Handler, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/auth/login", nil)
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestRateLimiterLimitsPerIP(t *testing.T) {
	t.Parallel()
	const perMinute = 5
	_, clock, h := newTestLimiter(perMinute)
	const ip = "203.0.113.7:5000"

	for i := range perMinute {
		if rec := doFrom(h, ip); rec.Code != http.StatusNoContent {
			t.Fatalf("request %d: status %d, want 204", i+1, rec.Code)
		}
	}

	rec := doFrom(h, ip)
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("request %d: status %d, want 429", perMinute+1, rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != ProblemContentType {
		t.Errorf("Content-Type %q, want %q", ct, ProblemContentType)
	}
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || retry < 1 {
		t.Errorf("Retry-After %q, want whole seconds >= 1", rec.Header().Get("Retry-After"))
	}
	if want := 60 / perMinute; retry != want {
		t.Errorf("Retry-After %d, want %d", retry, want)
	}
	var p Problem
	if err := json.NewDecoder(rec.Body).Decode(&p); err != nil {
		t.Fatalf("decode problem: %v", err)
	}
	if p.Code != "rate_limited" || p.Status != http.StatusTooManyRequests {
		t.Errorf("problem code %q status %d, want rate_limited 429", p.Code, p.Status)
	}
	if !strings.Contains(p.Detail, strconv.Itoa(perMinute)+" a minute") || !strings.Contains(p.Detail, "Retry in 12 seconds") {
		t.Errorf("detail %q does not give the limit and the wait", p.Detail)
	}
	if p.RequestID == "" || p.RequestID != rec.Header().Get(RequestIDHeader) {
		t.Errorf("problem requestId %q, header %q", p.RequestID, rec.Header().Get(RequestIDHeader))
	}

	if rec := doFrom(h, "198.51.100.9:6000"); rec.Code != http.StatusNoContent {
		t.Errorf("other IP: status %d, want 204", rec.Code)
	}

	// Refused requests must not have cost tokens: one interval later exactly
	// one more request passes.
	clock.Advance(60 * time.Second / perMinute)
	if rec := doFrom(h, ip); rec.Code != http.StatusNoContent {
		t.Fatalf("after refill: status %d, want 204", rec.Code)
	}
	if rec := doFrom(h, ip); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("second after refill: status %d, want 429", rec.Code)
	}
}

func TestRateLimiterAllowReportsWait(t *testing.T) {
	t.Parallel()
	l, clock, _ := newTestLimiter(5)
	ip := netip.MustParseAddr("192.0.2.1")
	for range 5 {
		if ok, _ := l.Allow(ip); !ok {
			t.Fatal("refused within the burst")
		}
	}
	if ok, wait := l.Allow(ip); ok || wait != 12*time.Second {
		t.Fatalf("Allow = %v, %v; want false, 12s", ok, wait)
	}
	clock.Advance(5 * time.Second)
	if ok, wait := l.Allow(ip); ok || wait != 7*time.Second {
		t.Fatalf("Allow after 5s = %v, %v; want false, 7s", ok, wait)
	}
	// An IPv4-mapped IPv6 address is the same client as the plain IPv4 one.
	if ok, _ := l.Allow(netip.MustParseAddr("::ffff:192.0.2.1")); ok {
		t.Fatal("IPv4-mapped form of a limited address was let through")
	}
}

func TestRateLimiterRetryAfterRoundsUp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d    time.Duration
		want int64
	}{
		{0, 1},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{60 * time.Second / 7, 9},
		{12 * time.Second, 12},
	}
	for _, tc := range cases {
		if got := retryAfterSeconds(tc.d); got != tc.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestRateLimiterKeysIPv6BySlash64(t *testing.T) {
	t.Parallel()
	_, _, h := newTestLimiter(2)
	sameNet := []string{"[2001:db8:1:2::1]:5000", "[2001:db8:1:2:ffff:ffff:ffff:fffe]:5001"}
	for _, remote := range sameNet {
		if rec := doFrom(h, remote); rec.Code != http.StatusNoContent {
			t.Fatalf("%s: status %d, want 204", remote, rec.Code)
		}
	}
	for _, remote := range sameNet {
		if rec := doFrom(h, remote); rec.Code != http.StatusTooManyRequests {
			t.Errorf("%s: status %d, want 429 (same /64 shares a bucket)", remote, rec.Code)
		}
	}
	if rec := doFrom(h, "[2001:db8:1:3::1]:5000"); rec.Code != http.StatusNoContent {
		t.Errorf("other /64: status %d, want 204", rec.Code)
	}
}

// TestOneLineSharesABucket: a client address is an IPv4 address or an
// IPv6 /64, and a home line is often a /56, 256 /64s: one line drove a
// limited route (a signup, a login, a mail request) at 256 addresses'
// pace. A /56 now has a bucket of its own too, linePerAddress times an
// address's: past it every /64 of the line is refused, another line is
// not.
func TestOneLineSharesABucket(t *testing.T) {
	t.Parallel()
	_, _, h := newTestLimiter(2)
	for i := range 2 * linePerAddress {
		remote := fmt.Sprintf("[2001:db8:1:1%02x::1]:5000", i/2)
		if rec := doFrom(h, remote); rec.Code != http.StatusNoContent {
			t.Fatalf("request %d of the line (%s): status %d, want 204", i+1, remote, rec.Code)
		}
	}
	if rec := doFrom(h, "[2001:db8:1:1ff::1]:5000"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "8 from its /56 together") {
		t.Errorf("a fresh /64 of the same /56 past the line's bucket: status %d %s, want 429 with Retry-After, naming the /56's limit", rec.Code, rec.Body)
	}
	if rec := doFrom(h, "[2001:db8:1:200::1]:5000"); rec.Code != http.StatusNoContent {
		t.Errorf("another /56: status %d, want 204", rec.Code)
	}
}

func TestRateLimiterUnknownClientsShareABucket(t *testing.T) {
	t.Parallel()
	l, _, h := newTestLimiter(1)
	if rec := doFrom(h, "not-an-address"); rec.Code != http.StatusNoContent {
		t.Fatalf("first unknown: status %d, want 204", rec.Code)
	}
	if rec := doFrom(h, "also bogus"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("second unknown: status %d, want 429", rec.Code)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.buckets["unknown"]; !ok || len(l.buckets) != 1 {
		t.Errorf("buckets %v, want only \"unknown\"", keys(l.buckets))
	}
}

func TestRateLimiterDisabled(t *testing.T) {
	t.Parallel()
	for _, perMinute := range []int{0, -1} {
		l, _, h := newTestLimiter(perMinute)
		for i := range 1000 {
			if rec := doFrom(h, "203.0.113.7:5000"); rec.Code != http.StatusNoContent {
				t.Fatalf("perMinute %d, request %d: status %d, want 204", perMinute, i+1, rec.Code)
			}
		}
		if ok, wait := l.Allow(netip.MustParseAddr("203.0.113.7")); !ok || wait != 0 {
			t.Errorf("perMinute %d: Allow = %v, %v; want true, 0", perMinute, ok, wait)
		}
	}
}

func TestRateLimiterSweepsIdleBuckets(t *testing.T) {
	t.Parallel()
	l, clock, h := newTestLimiter(3)
	for i := range 10 {
		doFrom(h, fmt.Sprintf("192.0.2.%d:5000", i+1))
	}
	doFrom(h, "[2001:db8::1]:5000") // its /64's bucket and its /56's
	if n := bucketCount(l); n != 12 {
		t.Fatalf("%d buckets, want 12", n)
	}

	// Within a minute of the last sweep nothing is dropped.
	clock.Advance(30 * time.Second)
	doFrom(h, "198.51.100.1:5000")
	if n := bucketCount(l); n != 13 {
		t.Fatalf("%d buckets before the idle limit, want 13", n)
	}

	// Past the idle limit for the first twelve but not for the one from 30s
	// ago, which is still live.
	clock.Advance(l.idle - 30*time.Second + time.Second)
	doFrom(h, "198.51.100.1:5000")
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.buckets["198.51.100.1"]; !ok || len(l.buckets) != 1 {
		t.Errorf("buckets %v after the sweep, want only 198.51.100.1", keys(l.buckets))
	}
}

func TestRateLimiterConcurrent(t *testing.T) {
	t.Parallel()
	const (
		perMinute  = 7
		ips        = 20
		goroutines = 32
		rounds     = 3
	)
	l, _, _ := newTestLimiter(perMinute)
	frozen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l.now = func() time.Time { return frozen }

	var passed [ips]atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := ClientIP(r.Context()).As4()
		passed[ip[3]-1].Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	h := frame(zerolog.Nop(), nil, 0, nil)(l.Middleware(next))

	var refused atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds * ips {
				ip := (g + r) % ips
				rec := doFrom(h, fmt.Sprintf("192.0.2.%d:%d", ip+1, 1000+g))
				switch rec.Code {
				case http.StatusNoContent:
				case http.StatusTooManyRequests:
					refused.Add(1)
				default:
					t.Errorf("status %d", rec.Code)
				}
			}
		})
	}
	wg.Wait()

	for i := range passed {
		if n := passed[i].Load(); n != perMinute {
			t.Errorf("192.0.2.%d: %d requests passed, want %d", i+1, n, perMinute)
		}
	}
	if want := int64(goroutines*rounds*ips - ips*perMinute); refused.Load() != want {
		t.Errorf("%d refused, want %d", refused.Load(), want)
	}
	if n := bucketCount(l); n != ips {
		t.Errorf("%d buckets, want %d", n, ips)
	}
}

func bucketCount(l *RateLimiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func keys(m map[string]*bucket) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestARequestForgetsAFewIdleBucketsOnly: a thousand addresses (a /64 each,
// as an IPv6 client may take a new one per request) leave a thousand
// buckets and more. Once they are idle, a request forgot them all at
// once, walking the whole map under the lock every request takes; now
// each request forgets at most sweepPerRequest of them, the oldest first,
// and the requests that follow forget the rest.
func TestARequestForgetsAFewIdleBucketsOnly(t *testing.T) {
	t.Parallel()
	l, clock, h := newTestLimiter(3)
	for i := range 1000 {
		doFrom(h, fmt.Sprintf("[2001:db8:%x::1]:5000", i))
	}
	before := bucketCount(l)
	clock.Advance(l.idle + time.Second)
	doFrom(h, "198.51.100.1:5000")
	if forgot := before + 1 - bucketCount(l); forgot != sweepPerRequest {
		t.Fatalf("one request forgot %d idle buckets, want %d", forgot, sweepPerRequest)
	}
	for range before/(sweepPerRequest-1) + 1 {
		doFrom(h, "198.51.100.1:5000")
	}
	if n := bucketCount(l); n != 1 {
		t.Errorf("%d buckets after the requests that followed, want only the live one", n)
	}
}
