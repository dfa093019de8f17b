package handlers

import (
	"container/list"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"shelf/domain/accounts"
)

// sweepPerRequest bounds the idle buckets one request forgets: a few
// more than the two it may add, so forgetting keeps pace with the
// addresses seen, and no request walks the whole map. A whole walk once
// a minute grew with the addresses of the last minutes (a new /64 per
// request from IPv6), inside whichever request came next, under the lock
// every request takes (the throttle review).
const sweepPerRequest = 16

// RateLimiter limits requests per client IP with one token bucket per IP:
// perMinute tokens a minute, bursts of up to perMinute. perMinute <= 0
// disables it (Middleware then passes everything through).
//
// It exists so that no route that checks a secret, sends mail or tells
// whether an account exists (signup, login and its second step, account
// changes, mail requests and their links, people searches: routeAccounts,
// routeMail) can be driven at speed from one address. Buckets live only
// in this process's memory: behind several replicas each one limits on
// its own.
type RateLimiter struct {
	// perMinute is requests a minute, and the burst.
	perMinute int
	limit     rate.Limit
	// idle is how long a bucket may go unused before it is dropped: the time
	// an empty bucket takes to refill, so a dropped bucket was full and a
	// fresh one in its place behaves exactly the same.
	idle time.Duration
	// now is the clock; tests replace it to move time without sleeping.
	now func() time.Time

	// mu guards buckets and byUse, and is held across a bucket's whole
	// reserve-and-maybe-cancel so that two denied callers of one bucket
	// cannot interleave and leave it in debt (rate.Reservation.CancelAt
	// restores nothing if a later reservation came in between).
	mu      sync.Mutex
	buckets map[string]*bucket
	// byUse holds the buckets' keys, the least recently asked first.
	byUse *list.List
}

// bucket is one client's token bucket, when it was last asked, and its
// place in byUse.
type bucket struct {
	lim      *rate.Limiter
	lastSeen time.Time
	place    *list.Element
}

// NewRateLimiter returns a limiter allowing perMinute requests a minute per
// client IP (and per IPv6 /64; linePerAddress times that per IPv6 /56), in
// bursts of up to perMinute; perMinute <= 0 returns one that never limits.
func NewRateLimiter(perMinute int) *RateLimiter {
	l := &RateLimiter{
		perMinute: perMinute,
		now:       time.Now,
		buckets:   make(map[string]*bucket),
		byUse:     list.New(),
	}
	if perMinute > 0 {
		l.limit = rate.Limit(float64(perMinute) / time.Minute.Seconds())
		// A burst of n at n a minute refills in one minute whatever n is;
		// the floor keeps the "at least a minute" promise should burst and
		// rate ever be set apart.
		refill := time.Duration(float64(perMinute) / float64(l.limit) * float64(time.Second))
		l.idle = max(refill, time.Minute)
	}
	return l
}

// Middleware answers 429 problem+json with code "rate_limited" and a
// Retry-After header (whole seconds, at least 1, rounded up, computed from
// the bucket's reservation delay) when the caller's bucket is empty;
// otherwise it calls next. The key is ClientIP(r.Context()); requests whose
// ClientIP is not valid share one bucket keyed "unknown".
func (l *RateLimiter) Middleware(next http.Handler) http.Handler {
	if l.perMinute <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := l.refusal(r); p != nil {
			writeProblem(w, r, p)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refusal is Middleware's verdict on one request, for a handler that
// limits only some of a route's requests (those carrying a password):
// nil lets it pass, taking a token; otherwise the 429 to answer.
func (l *RateLimiter) refusal(r *http.Request) *Problem {
	if l.perMinute <= 0 {
		return nil
	}
	ok, wait := l.Allow(ClientIP(r.Context()))
	if ok {
		return nil
	}
	secs := retryAfterSeconds(wait)
	unit := "seconds"
	if secs == 1 {
		unit = "second"
	}
	limit := fmt.Sprintf("at most %d a minute are allowed here", l.perMinute)
	if accounts.LineKey(ClientIP(r.Context()).String()) != "" {
		limit += fmt.Sprintf(", %d from its /56 together", l.perMinute*linePerAddress)
	}
	p := newProblem(http.StatusTooManyRequests, "rate_limited", fmt.Sprintf(
		"Too many requests from your address: %s. Retry in %d %s.", limit, secs, unit))
	p.header = http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}
	return p
}

// retryAfterSeconds rounds up, so a client that waits as told is let in, and
// never says 0, which clients read as "retry at once".
func retryAfterSeconds(d time.Duration) int64 {
	return max(int64((d+time.Second-1)/time.Second), 1)
}

// Allow reports whether one more request from ip may pass now, and if not how
// long until it may (used by Middleware, exported for tests and reuse).
// A denied request costs no token, so a client hammering while limited is
// let in as soon as the bucket refills rather than pushed further back.
func (l *RateLimiter) Allow(ip netip.Addr) (ok bool, retryAfter time.Duration) {
	if l.perMinute <= 0 {
		return true, 0
	}
	key := accounts.AddressKey(ip.String())

	l.mu.Lock()
	defer l.mu.Unlock()
	// Read the clock under the lock so that, as seen by the buckets, time
	// never runs backwards between callers.
	now := l.now()
	l.sweep(now)
	res, ok, d := l.reserve(key, 1, now)
	if !ok {
		return false, d
	}
	// An IPv6 address's line (its /56, a home's 256 /64s) has a bucket too,
	// linePerAddress times an address's: one line cannot drive a route at
	// 256 addresses' pace (TestOneLineSharesABucket).
	if line := accounts.LineKey(ip.String()); line != "" {
		if _, ok, d := l.reserve(line, linePerAddress, now); !ok {
			res.CancelAt(now)
			return false, d
		}
	}
	return true, 0
}

// linePerAddress is how many addresses' requests one IPv6 line (/56) may
// send a minute: a household's or a small office's devices at once.
const linePerAddress = 4

// reserve takes a token of key's bucket (times its rate and burst) at
// now: ok with the reservation, or not and how long until one is free (a
// refused request costs nothing: its token is given back). The caller
// holds l.mu.
func (l *RateLimiter) reserve(key string, times int, now time.Time) (*rate.Reservation, bool, time.Duration) {
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.limit*rate.Limit(times), l.perMinute*times), place: l.byUse.PushBack(key)}
		l.buckets[key] = b
	} else {
		l.byUse.MoveToBack(b.place)
	}
	b.lastSeen = now
	res := b.lim.ReserveN(now, 1)
	if !res.OK() { // cannot happen with burst >= 1; fail closed for a minute
		return nil, false, time.Minute
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return nil, false, d
	}
	return res, true, 0
}

// sweep drops up to sweepPerRequest of the buckets idle for longer than
// a refill, the least recently asked first: they are full, so forgetting
// them changes no answer, and it keeps memory bounded by the clients seen
// in the last couple of minutes. The caller holds l.mu.
func (l *RateLimiter) sweep(now time.Time) {
	for range sweepPerRequest {
		oldest := l.byUse.Front()
		if oldest == nil {
			return
		}
		key := oldest.Value.(string)
		if now.Sub(l.buckets[key].lastSeen) <= l.idle {
			return
		}
		l.byUse.Remove(oldest)
		delete(l.buckets, key)
	}
}
