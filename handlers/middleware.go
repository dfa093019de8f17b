package handlers

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"
	"github.com/rs/zerolog/hlog"
)

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-Id"

type ctxKey int

const (
	requestIDKey ctxKey = iota
	clientIPKey
)

// RequestID returns the id of the request ctx belongs to ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// ClientIP returns the caller's address as requestContext worked it out.
func ClientIP(ctx context.Context) netip.Addr {
	ip, _ := ctx.Value(clientIPKey).(netip.Addr)
	return ip
}

// incomingIDRE accepts a caller's own request id when it is short and plain.
var incomingIDRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{8,128}$`)

// requestContext gives every request an id (the caller's X-Request-Id if it
// is sane, else a new random one), echoes it in the response header, and
// works out the client IP: the connection's address, unless that address is
// a trusted proxy, in which case the nearest untrusted X-Forwarded-For entry.
// It also puts a logger with the request id on the context.
func requestContext(logger zerolog.Logger, trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get(RequestIDHeader)
			if !incomingIDRE.MatchString(id) {
				id = newRequestID()
			}
			w.Header().Set(RequestIDHeader, id)
			ip := clientIP(r, trusted)
			l := logger.With().Str("requestId", id).Str("ip", ip.String()).Logger()
			ctx := context.WithValue(r.Context(), requestIDKey, id)
			ctx = context.WithValue(ctx, clientIPKey, ip)
			ctx = l.WithContext(ctx)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// newRequestID is 24 hex digits: this process's random prefix, then a
// counter. Unique without asking the system for randomness per request (a
// request id names a request in the logs; it guards nothing).
func newRequestID() string {
	var b [12]byte
	copy(b[:4], requestIDPrefix[:])
	binary.BigEndian.PutUint64(b[4:], requestCount.Add(1))
	return hex.EncodeToString(b[:])
}

var (
	requestIDPrefix = func() (p [4]byte) { _, _ = rand.Read(p[:]); return p }()
	requestCount    atomic.Uint64
)

// clientIP never believes X-Forwarded-For from an untrusted peer: a caller
// could otherwise pick any address (and dodge per-IP rate limits).
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	peer = peer.Unmap()
	if !isTrusted(peer, trusted) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer // a malformed chain: trust nothing further
		}
		hop = hop.Unmap()
		if !isTrusted(hop, trusted) {
			return hop
		}
	}
	return peer
}

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// accessLog logs one line per request: method, route pattern, path, status,
// bytes, duration.
func accessLog() func(http.Handler) http.Handler {
	return hlog.AccessHandler(func(r *http.Request, status, size int, duration time.Duration) {
		pattern := ""
		if rctx := chi.RouteContext(r.Context()); rctx != nil {
			pattern = rctx.RoutePattern()
		}
		hlog.FromRequest(r).Info().
			Str("method", r.Method).
			Str("route", pattern).
			Str("path", r.URL.Path).
			Int("status", status).
			Int("bytes", size).
			Float64("durationMs", float64(duration.Microseconds())/1000).
			Msg("request")
	})
}

// recoverer turns a panic into a logged 500 problem, so one bad request
// never takes the process down. A panic is a bug even when the client has
// gone meanwhile, so it stays a 500 (writeError's 499 is for errors). An
// http.ErrAbortHandler goes on to net/http, which drops the connection
// without logging.
func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler { //nolint:errorlint // the sentinel is compared, as net/http does
				panic(rec)
			}
			hlog.FromRequest(r).Error().Interface("panic", rec).Bytes("stack", debug.Stack()).Msg("panic in handler")
			writeProblem(w, r, newProblem(http.StatusInternalServerError, "internal",
				"Something went wrong on our side; the request id identifies it in our logs."))
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody refuses bodies over max bytes: at once (413) when the
// Content-Length says so, and while reading otherwise.
func limitBody(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == http.NoBody {
				next.ServeHTTP(w, r) // a request without a body: nothing to bound
				return
			}
			if r.ContentLength > max {
				writeProblem(w, r, newProblem(http.StatusRequestEntityTooLarge, "body_too_large",
					"The body is larger than "+strconv.FormatInt(max, 10)+" bytes."))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, max)
			next.ServeHTTP(w, r)
		})
	}
}

// deadline bounds the work of one request through its context.
func deadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}
