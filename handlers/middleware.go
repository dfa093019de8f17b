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
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/metrics"
)

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-Id"

type ctxKey int

// requestKey holds the request's requestInfo.
const requestKey ctxKey = 0

// requestInfo is what frame worked out about a request.
type requestInfo struct {
	id string
	ip netip.Addr
	// logger is the process's logger; lines about the request get the
	// id and the address when they are written (RequestLogger), so a
	// request that logs nothing but its access line copies no logger.
	logger *zerolog.Logger
}

// frameCtx is a context and its requestInfo in one allocation
// (context.WithValue would take another).
type frameCtx struct {
	context.Context
	info requestInfo
}

// Value is the requestInfo for requestKey, and ctx's values otherwise.
func (c *frameCtx) Value(key any) any {
	if key == any(requestKey) {
		return &c.info
	}
	return c.Context.Value(key)
}

// infoOf is the requestInfo frame put on ctx (nil outside a request).
func infoOf(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestKey).(*requestInfo)
	return info
}

// RequestID returns the id of the request ctx belongs to ("" outside one).
func RequestID(ctx context.Context) string {
	if info := infoOf(ctx); info != nil {
		return info.id
	}
	return ""
}

// ClientIP returns the caller's address as frame worked it out.
func ClientIP(ctx context.Context) netip.Addr {
	if info := infoOf(ctx); info != nil {
		return info.ip
	}
	return netip.Addr{}
}

// RequestLogger is the logger for lines about the request ctx belongs to:
// each carries the request id and the client's address. Outside a request
// it is false.
func RequestLogger(ctx context.Context) (zerolog.Logger, bool) {
	info := infoOf(ctx)
	if info == nil {
		return zerolog.Nop(), false
	}
	return info.logger.Hook(requestFields{id: info.id, ip: ipText(info.ip)}), true
}

// requestLog is RequestLogger for a handler's request (a no-op logger
// outside frame).
func requestLog(r *http.Request) *zerolog.Logger {
	l, _ := RequestLogger(r.Context())
	return &l
}

// ipText is ip as logs and sessions record it ("" when unknown).
func ipText(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	return ip.String()
}

// incomingIDRE accepts a caller's own request id when it is short and plain.
var incomingIDRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{8,128}$`)

// frame is what every request goes through first (after CORS preflights),
// in one piece so that each request pays for one context and one response
// writer wrapper, not one per concern:
//   - an id: the caller's X-Request-Id if it is sane, else a new one; echoed
//     in the response header;
//   - the client IP: the connection's address, unless that is a trusted
//     proxy, in which case the nearest untrusted X-Forwarded-For entry;
//   - both on the context (RequestID, ClientIP, RequestLogger), with the
//     client (address and user agent) the domain throttles checks of
//     passwords and codes by and audits a recovery code's use with
//     (accounts.WithClient), and the request's deadline (timeout; 0:
//     none): one context value each, and one copy of the request;
//   - when the handler is done, the request counted and timed in m (by
//     route pattern, not path: ids would make the series unbounded; by
//     methodLabel, not the method sent, for the same reason) with its
//     Cassandra round trips, if m is set, and the access log line:
//     method, route pattern, path (loggedPath), status, bytes, duration.
func frame(logger zerolog.Logger, trusted []netip.Prefix, timeout time.Duration, m *metrics.Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			id := r.Header.Get(RequestIDHeader)
			if id == "" || !incomingIDRE.MatchString(id) {
				id = newRequestID()
			}
			w.Header().Set(RequestIDHeader, id)
			ip := clientIP(r, trusted)
			ipText := ipText(ip)
			ctx := r.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			ctx = &frameCtx{Context: ctx, info: requestInfo{id: id, ip: ip, logger: &logger}}
			ctx = accounts.WithClient(ctx, accounts.Client{UserAgent: r.UserAgent(), IP: ipText})
			var counted *domain.Trips
			if m != nil {
				ctx, counted = domain.CountTrips(ctx)
			}
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r.WithContext(ctx))

			took := time.Since(start)
			route := ""
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				route = rctx.RoutePattern()
			}
			method := methodLabel(r.Method)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			if m != nil {
				metricRoute := route
				if metricRoute == "" {
					metricRoute = "unmatched"
				}
				m.ObserveRequest(metricRoute, method, status, took, counted.Count())
			}
			logger.Info().
				Str("requestId", id).
				Str("ip", ipText).
				Str("method", method).
				Str("route", route).
				Str("path", loggedPath(r.URL.Path)).
				Int("status", status).
				Int("bytes", ww.BytesWritten()).
				Float64("durationMs", float64(took.Microseconds())/1000).
				Msg("request")
		})
	}
}

// knownMethods are the methods chi routes (RFC 9110's and PATCH).
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true, http.MethodTrace: true,
}

// methodLabel is the method as metrics and the access log record it: a
// known one, else "other". The caller chooses the method, any token up to
// the header limit (1 MB): as a label value, a 50 KB method would add
// series of about 1.8 MB to every later scrape (each histogram bucket
// repeats it; TestHugeMethodDoesNotGrowMetrics), and each such request
// would write as much to the log.
func methodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return "other"
}

// emailSegment is a path segment that holds an address (an at of
// domain.Ats, decoded).
var emailSegment = regexp.MustCompile(`[^/]*[` + domain.Ats + `][^/]*`)

// loggedPath is the path for the access log, with every segment that
// holds an at (domain.Ats) replaced: GET /v1/users/by-email/{email} names the address
// in its path, and an address typed where an id or a username belongs
// would be logged too. A log is read by more people, and kept longer,
// than the accounts table.
func loggedPath(path string) string {
	if !domain.NamesAnEmail(path) {
		return path
	}
	return emailSegment.ReplaceAllLiteralString(path, "[redacted]")
}

// requestFields adds the request id and client IP to every line logged
// for the request (a hook: logger.With would copy the logger's fields into
// a new 500-byte buffer per request).
type requestFields struct{ id, ip string }

func (f requestFields) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("requestId", f.id).Str("ip", f.ip)
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
	// From the end, entry by entry: the header may be as long as the
	// header limit (1 MB), and only its last entries are read
	// (TestAHugeForwardedForCostsLittle).
	values := r.Header.Values("X-Forwarded-For")
	for v := len(values) - 1; v >= 0; v-- {
		rest := values[v]
		for {
			i := strings.LastIndexByte(rest, ',')
			hop, err := netip.ParseAddr(strings.TrimSpace(rest[i+1:]))
			if err != nil {
				return peer // a malformed chain: trust nothing further
			}
			hop = hop.Unmap()
			if !isTrusted(hop, trusted) {
				return hop
			}
			if i < 0 {
				break
			}
			rest = rest[:i]
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
			requestLog(r).Error().Interface("panic", rec).Bytes("stack", debug.Stack()).Msg("panic in handler")
			writeProblem(w, r, newProblem(http.StatusInternalServerError, "internal",
				"Something went wrong on our side; the request id identifies it in our logs."))
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody bounds bodies to max bytes where they are read: decodeJSON
// answers 413 (decodeProblem) at its first read when the Content-Length
// says the body is over, and once past max otherwise. A request whose
// operation takes no body (a GET, a DELETE) never reads it, and is served
// whatever it carries: openapi.yaml has a 413 only where it has a body.
func limitBody(max int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Body == http.NoBody: // a request without a body: nothing to bound
			case r.ContentLength > max:
				r.Body = overLimit{max}
			default:
				r.Body = http.MaxBytesReader(w, r.Body, max)
			}
			next.ServeHTTP(w, r)
		})
	}
}

// overLimit is a body its Content-Length put over the limit: its first
// read fails as http.MaxBytesReader's would, before a byte is read.
type overLimit struct{ limit int64 }

func (b overLimit) Read([]byte) (int, error) { return 0, &http.MaxBytesError{Limit: b.limit} }
func (overLimit) Close() error               { return nil }
