package handlers

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/zerolog"

	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/internal/metrics"
)

// Deps is everything the router needs; internal/app builds it.
type Deps struct {
	Logger zerolog.Logger
	// Ready answers /readyz.
	Ready ReadyChecker
	// OpenAPI is the contract served at /openapi.yaml.
	OpenAPI []byte
	// MaxBodyBytes bounds request bodies (413 above).
	MaxBodyBytes int64
	// RequestTimeout bounds one request's work.
	RequestTimeout time.Duration
	// TrustedProxies may set X-Forwarded-For.
	TrustedProxies []netip.Prefix
	// Accounts is signup, login and sessions.
	Accounts *accounts.Service
	// RateLimitPerMinute bounds, per client IP, signups, logins and their
	// second steps, account changes, mail requests and the mailed links'
	// confirmations, and people searches, each kind its own bucket (0: off).
	RateLimitPerMinute int
	// Moderation is suspensions.
	Moderation *moderation.Service
	// Groups is groups and their members.
	Groups *groups.Service
	// Contents is content, sharing and libraries.
	Contents *library.Service
	// Lifecycle deletes accounts, closes groups, rebuilds libraries and
	// reads the jobs that finish them.
	Lifecycle *lifecycle.Service
	// Metrics, when set, counts requests and serves /metrics.
	Metrics *metrics.Metrics
	// MetricsElsewhere: /metrics is served on a listener of its own
	// (SHELF_METRICS_ADDR), not by this router, which still counts.
	MetricsElsewhere bool
	// CORSOrigins may call the API from browsers (empty: no CORS headers).
	CORSOrigins []string
}

// NewRouter builds the whole HTTP API.
func NewRouter(d Deps) *chi.Mux {
	r := chi.NewRouter()
	r.Use(secureHeaders)
	if len(d.CORSOrigins) > 0 {
		r.Use(corsFor(d.CORSOrigins))
	}
	r.Use(
		frame(d.Logger, d.TrustedProxies, d.RequestTimeout, d.Metrics),
		recoverer,
		limitBody(d.MaxBodyBytes),
		routeDecoded,
		// HEAD works wherever GET does (RFC 9110): the GET handler runs and
		// net/http drops its body.
		middleware.GetHead,
	)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, newProblem(http.StatusNotFound, "not_found", notFoundDetail(r.URL.Path)))
	})
	r.MethodNotAllowed(methodNotAllowed(r))

	health := &Health{ready: d.Ready}
	r.Get("/healthz", health.live)
	r.Get("/readyz", handle(health.readyz))
	r.Get("/openapi.yaml", serveOpenAPI(d.OpenAPI))
	r.Get("/docs", servePage("docs.html"))
	r.Get("/", servePage("index.html"))
	r.Method(http.MethodGet, "/assets/*", serveAssets())
	if d.Metrics != nil && !d.MetricsElsewhere {
		r.Method(http.MethodGet, "/metrics", d.Metrics.Handler())
	}

	// One tree: the API's routes carry their /v1 (v1 below), so a request
	// is routed once and its pattern read as it was registered (a mounted
	// sub-router routes again and joins the patterns, about 3 µs of CPU a
	// request).
	r.Group(func(r chi.Router) {
		r.Use(decodedParams, authenticate(d.Accounts))
		routeAccounts(r, d)
		routeModeration(r, d)
		routeAudit(r, d)
		routeGroups(r, d)
		routeContent(r, d)
		jobs := &Jobs{lifecycle: d.Lifecycle}
		r.Get(v1+"/jobs/{id}", handle(jobs.get))
		// Each rebuild is a job of its own that rewrites the whole
		// library in the job worker: limited per client address, so one
		// session (a stolen one too) cannot queue them faster than the
		// workers run them, holding back every deletion and closing.
		rebuildLimit := NewRateLimiter(d.RateLimitPerMinute)
		r.With(rebuildLimit.Middleware).Post(v1+"/admin/libraries/{principalId}/rebuild", handle(jobs.rebuild))
	})
	return r
}

// v1 is the prefix of every API route.
const v1 = "/v1"

// routeAccounts serves signup, login, sessions and account changes.
func routeAccounts(r chi.Router, d Deps) {
	users := &Users{accounts: d.Accounts, lifecycle: d.Lifecycle}
	sessions := &Sessions{accounts: d.Accounts}
	signupLimit := NewRateLimiter(d.RateLimitPerMinute)
	loginLimit := NewRateLimiter(d.RateLimitPerMinute)
	// A change's 409 says whether an email is taken: limited like signups,
	// so nobody probes for accounts through it.
	changeLimit := NewRateLimiter(d.RateLimitPerMinute)
	r.With(signupLimit.Middleware).Post(v1+"/users", handle(users.signup))
	r.Get(v1+"/users", handle(users.search))
	// People by the start of a username, for any session: limited per
	// address like signups, so nobody reads the whole directory at speed.
	peopleLimit := NewRateLimiter(d.RateLimitPerMinute)
	r.With(peopleLimit.Middleware).Get(v1+"/people", handle(users.people))
	r.Get(v1+"/users/{id}", handle(users.get))
	r.With(changeLimit.Middleware).Patch(v1+"/users/{id}", handle(users.update))
	// A deletion, either way, is limited like a change: the owner's checks
	// the current password, and a repeat of a finished one (an admin's)
	// writes a sweep's entry and wakes the job worker.
	r.With(changeLimit.Middleware).Delete(v1+"/users/{id}", handle(users.remove))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/deletion", handle(users.deletion))
	// The per-account throttle (domain) counts wrong current passwords;
	// this outer bucket bounds what one address sends at all.
	r.With(changeLimit.Middleware).Put(v1+"/users/{id}/password", handle(users.changePassword))
	r.Get(v1+"/users/by-username/{username}", handle(users.getByUsername))
	r.Get(v1+"/users/by-email/{email}", handle(users.getByEmail))
	r.With(loginLimit.Middleware).Post(v1+"/sessions", handle(sessions.login))
	r.Delete(v1+"/sessions/current", handle(sessions.logout))
	r.Get(v1+"/users/{id}/sessions", handle(sessions.list))
	r.Delete(v1+"/users/{id}/sessions", handle(sessions.revokeAll))
	r.Delete(v1+"/users/{id}/sessions/{sessionId}", handle(sessions.revoke))
	r.Get(v1+"/me", handle(users.me))
	// Codes are counted by the domain's throttle, like passwords; these
	// outer buckets bound what one address sends at all.
	factors := &Factors{accounts: d.Accounts}
	r.With(loginLimit.Middleware).Post(v1+"/sessions/second-factor", handle(factors.secondFactor))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/factors", handle(factors.enrol))
	r.Get(v1+"/users/{id}/factors", handle(factors.list))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/factors/{factorId}/confirmation", handle(factors.confirm))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/factors/{factorId}/removal", handle(factors.remove))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/recovery-codes", handle(factors.recoveryCodes))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/passkeys", handle(factors.beginPasskey))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/passkeys/{factorId}/registration", handle(factors.finishPasskey))
	r.With(changeLimit.Middleware).Post(v1+"/users/{id}/passkey-challenges", handle(factors.passkeyChallenge))
	routeMail(r, d)
}

// routeMail serves email verification, password reset, the revert
// links of the notices (an email change, a new factor) and the "not me"
// link of an email change's verification: no session (the
// link in the mail is the credential; a verification request's optional
// session only decides whose mail budget it spends). Requests are limited per client IP
// (429); the domain limits the mails per address (beyond it, answered the
// same and nothing sent: a 429 would say the address was asked for).
func routeMail(r chi.Router, d Deps) {
	m := &Mail{accounts: d.Accounts}
	requestLimit := NewRateLimiter(d.RateLimitPerMinute)
	confirmLimit := NewRateLimiter(d.RateLimitPerMinute)
	r.With(requestLimit.Middleware).Post(v1+"/email-verifications", handle(m.requestVerification))
	r.With(confirmLimit.Middleware).Post(v1+"/email-verifications/confirm", handle(m.confirmEmail))
	r.With(requestLimit.Middleware).Post(v1+"/password-resets", handle(m.requestReset))
	r.With(confirmLimit.Middleware).Post(v1+"/password-resets/confirm", handle(m.confirmReset))
	changes := &EmailChanges{accounts: d.Accounts}
	r.With(confirmLimit.Middleware).Post(v1+"/email-changes/revert", handle(changes.revert))
	r.With(confirmLimit.Middleware).Post(v1+"/email-changes/refusal", handle(changes.refuse))
	factors := &Factors{accounts: d.Accounts}
	r.With(confirmLimit.Middleware).Post(v1+"/factor-additions/revert", handle(factors.revert))
}

// routeModeration serves suspensions, the suspended list and the
// moderation history.
func routeModeration(r chi.Router, d Deps) {
	m := &Moderation{moderation: d.Moderation}
	r.Post(v1+"/users/{id}/suspension", handle(m.suspend))
	r.Get(v1+"/users/{id}/suspension", handle(m.get))
	r.Delete(v1+"/users/{id}/suspension", handle(m.unsuspend))
	r.Get(v1+"/suspensions", handle(m.list))
	r.Get(v1+"/users/{id}/moderation-history", handle(m.history))
}

// routeAudit serves the audit of admin actions on accounts.
func routeAudit(r chi.Router, d Deps) {
	a := &Audit{accounts: d.Accounts}
	r.Get(v1+"/users/{id}/audit", handle(a.list))
	r.Get(v1+"/audit", handle(a.all))
}

// routeGroups serves groups and their members.
func routeGroups(r chi.Router, d Deps) {
	g := &Groups{groups: d.Groups, lifecycle: d.Lifecycle, grantLimit: NewRateLimiter(d.RateLimitPerMinute)}
	r.Post(v1+"/groups", handle(g.create))
	r.Get(v1+"/groups/{id}", handle(g.get))
	// A closing, either way, is limited per client address: a manager's
	// checks the current password (the account's own password throttle
	// counts too), and a repeat of a finished one, by whoever closed it
	// or an admin, writes a sweep's entry and wakes the job worker.
	closeLimit := NewRateLimiter(d.RateLimitPerMinute)
	r.With(closeLimit.Middleware).Delete(v1+"/groups/{id}", handle(g.close))
	r.With(closeLimit.Middleware).Post(v1+"/groups/{id}/closing", handle(g.closing))
	r.Get(v1+"/groups/by-name/{name}", handle(g.getByName))
	r.Get(v1+"/users/{id}/groups", handle(g.listOfUser))
	r.Get(v1+"/groups/{id}/members", handle(g.listMembers))
	r.Put(v1+"/groups/{id}/members/{userId}", handle(g.setMember))
	r.Delete(v1+"/groups/{id}/members/{userId}", handle(g.removeMember))
}

// routeContent serves content, sharing and libraries.
func routeContent(r chi.Router, d Deps) {
	c := &Contents{contents: d.Contents}
	r.Post(v1+"/content", handle(c.create))
	r.Get(v1+"/content/{id}", handle(c.get))
	r.Patch(v1+"/content/{id}", handle(c.update))
	r.Delete(v1+"/content/{id}", handle(c.delete))
	r.Get(v1+"/content/{id}/members", handle(c.members))
	r.Put(v1+"/content/{id}/members/{principalId}", handle(c.share))
	r.Delete(v1+"/content/{id}/members/{principalId}", handle(c.unshare))
	r.Get(v1+"/users/{id}/library", handle(c.userLibrary))
	r.Get(v1+"/groups/{id}/library", handle(c.groupLibrary))
}

// methodNotAllowed answers 405 with the Allow header listing what the path
// does accept (chi's own 405 sets it, but a custom handler must do it itself).
func methodNotAllowed(mux *chi.Mux) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions}
	return func(w http.ResponseWriter, r *http.Request) {
		path := routingPath(r.URL) // as chi routed it
		var allowed []string
		for _, m := range methods {
			if mux.Match(chi.NewRouteContext(), m, path) ||
				(m == http.MethodHead && slices.Contains(allowed, http.MethodGet)) {
				allowed = append(allowed, m)
			}
		}
		p := newProblem(http.StatusMethodNotAllowed, "method_not_allowed",
			r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+strings.Join(allowed, ", ")+".")
		p.header = http.Header{"Allow": {strings.Join(allowed, ", ")}}
		writeProblem(w, r, p)
	}
}

// serveOpenAPI serves the contract as YAML.
func serveOpenAPI(spec []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(spec)
	}
}

// routeDecoded routes a request on its path as net/http decodes it, a
// segment at a time, so a character sent escaped (u%5F, %63, %75sers)
// reaches what the plain path reaches. Only '/' and '%' stay escaped: an
// escaped '/' is part of its segment (an address d/e@example.org sent as
// d%2Fe@example.org), never a step to another route. net/url keeps the
// escaped form (RawPath) only when the path holds an escape it would not
// write itself; chi routed that form as it came, and a parameter then
// reached the handler still escaped (the id "u%5F...", 404).
//
// A path with an empty segment inside (/v1/users//suspension: an id left
// out, a shell variable unset) is 404 before routing, saying so: routed,
// the empty id read as one of nobody's ("No such user.") or the request
// was refused for something else first. An escaped '/' is no segment's
// end, so two sent escaped (%2F%2F) are part of a value.
func routeDecoded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := routingPath(r.URL)
		if strings.Contains(path, "//") {
			writeProblem(w, r, newProblem(http.StatusNotFound, "not_found", notFoundDetail(r.URL.Path)))
			return
		}
		if r.URL.RawPath != "" {
			chi.RouteContext(r.Context()).RoutePath = path
		}
		next.ServeHTTP(w, r)
	})
}

// routingPath is the path chi routes u on: u.Path when net/url kept no
// escaped form, else each segment of it decoded, its '%' and '/' escaped.
func routingPath(u *url.URL) string {
	if u.RawPath == "" {
		return u.Path
	}
	segments := strings.Split(u.RawPath, "/")
	for i, s := range segments {
		if d, err := url.PathUnescape(s); err == nil { // net/url keeps a RawPath only if it decodes
			segments[i] = keepSlashes.Replace(d)
		}
	}
	return strings.Join(segments, "/")
}

// keepSlashes escapes what routingPath must keep inside a segment.
var keepSlashes = strings.NewReplacer("%", "%25", "/", "%2F")

// decodedParams decodes once each path parameter of a request routed on
// routingPath's escaped form, so every handler reads its parameters as
// the client meant them (an id, an address, a username, a group name).
// Routed on r.URL.Path, they are decoded already: decoding again would
// read a '%' of the value (a%41b@example.org, sent as a%2541b@example.org)
// as an escape, another address or none.
func decodedParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawPath != "" {
			params := chi.RouteContext(r.Context()).URLParams
			for i, v := range params.Values {
				if d, err := url.PathUnescape(v); err == nil { // routingPath escapes only whole '%' and '/'
					params.Values[i] = d
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// notFoundDetail says what to do about a path no route has: one with an
// empty segment, inside or at its end, most often lost an id (a shell
// variable left unset);
// any other is looked up in the contract.
func notFoundDetail(path string) string {
	if strings.Contains(path, "//") {
		return "No resource at " + path + ": the path has an empty segment (//); is an id missing (a variable left unset)?"
	}
	if len(path) > 1 && strings.HasSuffix(path, "/") {
		return "No resource at " + path + ": the path ends with an empty segment; is an id missing (a variable left unset)?"
	}
	return "No resource at " + path + ": the routes are in /openapi.yaml, rendered at /docs."
}
