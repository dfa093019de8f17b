package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
)

// ProblemContentType is the media type of every error answer (RFC 9457).
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem detail with shelf's extensions: a stable
// snake_case code, the fields at fault, and the request id. A handler may
// return one as its error to answer with exactly that.
type Problem struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Detail    string         `json:"detail,omitempty"`
	Code      string         `json:"code"`
	Errors    []ProblemField `json:"errors,omitempty"`
	RequestID string         `json:"requestId,omitempty"`
	// Extensions are extra members (RFC 9457 section 3.2), e.g. suspendedAt.
	Extensions map[string]any `json:"-"`
	// header holds extra response headers (Allow, Retry-After).
	header http.Header
	// lasting: a 503 that lasts until the operator sets a feature up
	// (domain.ErrNotConfigured), which says no Retry-After.
	lasting bool
}

// MarshalJSON writes the standard members, then the extensions (which may
// not replace a standard member).
func (p Problem) MarshalJSON() ([]byte, error) {
	type plain Problem
	b, err := json.Marshal(plain(p))
	if err != nil || len(p.Extensions) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range p.Extensions {
		if t, ok := v.(time.Time); ok {
			v = stamp(t) // a problem's times are written as every answer's
		}
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// ProblemField is one entry of Problem.Errors.
type ProblemField struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// newProblem builds a problem with its type URI derived from the code.
func newProblem(status int, code, detail string, fields ...ProblemField) *Problem {
	return &Problem{
		Type:   "urn:shelf:problem:" + code,
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   code,
		Errors: fields,
	}
}

// statusOf is the one table from domain error kinds to HTTP statuses.
var statusOf = []struct {
	kind   error
	status int
	code   string
	detail string // for a bare kind: wrapped text may hold driver details
}{
	{domain.ErrInvalid, http.StatusBadRequest, "validation_failed", "The request is not valid."},
	{domain.ErrUnauthorized, http.StatusUnauthorized, "unauthorized", "A valid session is required."},
	{domain.ErrForbidden, http.StatusForbidden, "forbidden", "You may not do this."},
	{domain.ErrNotFound, http.StatusNotFound, "not_found", "Not found."},
	{domain.ErrConflict, http.StatusConflict, "conflict", "The request conflicts with the current state."},
	{domain.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "The database could not answer in time; try again."},
	{domain.ErrTooManyAttempts, http.StatusTooManyRequests, "too_many_attempts", "Too many attempts; try again later."},
}

// toProblem turns any error a handler returns into the problem to send.
// Errors it does not know are internal: their text stays in the log.
func toProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var de *domain.Error
	errors.As(err, &de)
	for _, row := range statusOf {
		if !errors.Is(err, row.kind) {
			continue
		}
		if de == nil {
			return newProblem(row.status, row.code, row.detail)
		}
		code := de.Code
		if code == "" {
			code = row.code
		}
		fields := make([]ProblemField, len(de.Fields))
		for i, f := range de.Fields {
			fields[i] = ProblemField{Field: f.Field, Code: f.Code, Message: f.Message}
		}
		p := newProblem(row.status, code, de.Message, fields...)
		p.Extensions, p.lasting = de.Details, errors.Is(err, domain.ErrNotConfigured)
		if de.RetryAfter > 0 {
			p.header = http.Header{"Retry-After": {strconv.FormatInt(retryAfterSeconds(de.RetryAfter), 10)}}
		}
		return p
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return newProblem(http.StatusServiceUnavailable, "timeout", "The request took too long; try again.")
	}
	return newProblem(http.StatusInternalServerError, "internal", "Something went wrong on our side; the request id identifies it in our logs.")
}

// StatusClientClosedRequest is nginx's status for a request whose client
// went away before the answer. No one reads it; it is what the access log
// and the metrics record, so that a client hanging up is not counted as the
// server failing (it would pollute 5xx rates and alerts).
const StatusClientClosedRequest = 499

// clientGone reports whether r's client disconnected: net/http cancels the
// request's context when it sees the connection close (a body read that
// fails for that reason included). A deadline that passed is not this: the
// context then says DeadlineExceeded, and the answer stays a 503.
func clientGone(r *http.Request) bool {
	return errors.Is(r.Context().Err(), context.Canceled)
}

// writeError answers with the problem for err and logs 5xx answers once,
// with the cause. When the client has gone, whatever err is (the store's
// call was cut short, the body stopped arriving), the answer is 499, logged
// at info.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if clientGone(r) {
		requestLog(r).Info().Err(err).Int("status", StatusClientClosedRequest).Msg("client closed the request")
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	p := toProblem(err)
	if p.Status >= 500 {
		requestLog(r).Error().Err(err).Int("status", p.Status).Msg("request failed")
	}
	if hint := notAnIDHint(r); hint != "" && p.Status == http.StatusNotFound && p.Code == "not_found" {
		q := *p
		q.Detail += " " + hint
		p = &q
	}
	writeProblem(w, r, p)
}

// notAnIDHint says, for a 404, that a path parameter taking a user's or
// a group's id holds something else (a username, a group name: the
// likeliest mistake, /v1/users/alice/library) and where that name's id is
// read; "" when every such parameter has its kind's prefix.
func notAnIDHint(r *http.Request) string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return ""
	}
	pattern := rc.RoutePattern()
	for i, key := range rc.URLParams.Keys {
		v := rc.URLParams.Values[i]
		var user, group bool
		switch {
		case key == "principalId":
			user, group = true, true
		case key == "userId", key == "id" && strings.HasPrefix(pattern, "/v1/users/{id}"):
			user = true
		case key == "id" && strings.HasPrefix(pattern, "/v1/groups/{id}"):
			group = true
		}
		if v == "" || (!user && !group) ||
			(user && strings.HasPrefix(v, domain.UserIDPrefix)) || (group && strings.HasPrefix(v, domain.GroupIDPrefix)) {
			continue
		}
		q := strconv.Quote(v)
		byUsername := "GET /v1/users/by-username/" + url.PathEscape(v)
		byName := "GET /v1/groups/by-name/" + url.PathEscape(v)
		switch {
		case user && group:
			return q + " is not a user's id (u_...) nor a group's (g_...): a username's id is read at " + byUsername + ", a group name's at " + byName + "."
		case user:
			return q + " is not a user's id (u_...): a username's id is read at " + byUsername + "."
		default:
			return q + " is not a group's id (g_...): a group name's id is read at " + byName + "."
		}
	}
	return ""
}

// writeProblem writes p as application/problem+json, with the request id.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	out := *p
	out.RequestID = RequestID(r.Context())
	for k, vs := range p.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	// Every 503 says when to come back: it means "try again", whatever
	// produced it (an unavailable node, a timeout, a signup that expired),
	// but for a feature the operator has not set up: a client that waits
	// and tries again gets the same answer until he does.
	if out.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" && !out.lasting {
		w.Header().Set("Retry-After", "1")
	}
	if out.Status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shelf"`)
	}
	w.Header().Set("Content-Type", ProblemContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(out.Status)
	_ = json.NewEncoder(w).Encode(out)
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts a handlerFunc: a returned error is answered by writeError.
func handle(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			writeError(w, r, err)
		}
	}
}
