package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestEveryUnavailableAnswerSaysWhenToRetry: a 503 from any source — a
// bare unavailable, a domain error of that kind with its own code (a
// signup that expired), a timeout — carries Retry-After
// (docs/design/api-conventions.md).
func TestEveryUnavailableAnswerSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	expired := &domain.Error{Kind: domain.ErrUnavailable, Code: "signup_expired", Message: "Try again."}
	for _, err := range []error{
		domain.ErrUnavailable,
		fmt.Errorf("signup: %w", expired),
		context.DeadlineExceeded,
	} {
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest(http.MethodGet, "/v1/me", nil), err)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("%v: %d, Retry-After %q", err, w.Code, w.Header().Get("Retry-After"))
		}
	}
}

// TestAFeatureNotSetUpSaysNoRetryAfter: mail, second factors and passkeys
// the operator has not set up answered 503 with Retry-After: 1, which a
// client honouring it (or an SDK's retry) took for "back in a second" and
// asked again, every second, until the operator set them up. They answer
// 503 with their code and words, and no Retry-After.
func TestAFeatureNotSetUpSaysNoRetryAfter(t *testing.T) {
	t.Parallel()
	for code, off := range map[string]error{"mail_off": accounts.ErrMailOff, "factors_off": accounts.ErrFactorsOff,
		"passkeys_off": accounts.ErrPasskeysOff} {
		err := fmt.Errorf("a route: %w", off)
		w := httptest.NewRecorder()
		writeError(w, httptest.NewRequest(http.MethodGet, "/v1/me", nil), err)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "" || !strings.Contains(w.Body.String(), code) {
			t.Errorf("%s: %d, Retry-After %q, %s; want 503 naming it, no Retry-After", code, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
}

type notReady struct{ err error }

func (n notReady) CheckReady(context.Context) error { return n.err }

// TestReadyzKeepsInternalTextInTheLog: the reason a node is not ready is
// logged, never sent (docs/design/api-conventions.md).
func TestReadyzKeepsInternalTextInTheLog(t *testing.T) {
	t.Parallel()
	secret := "dial tcp 10.1.2.3:9042: connection refused"
	for _, err := range []error{errors.New(secret), fmt.Errorf("%w: migration 005 of 006 (%s)", domain.ErrSchemaBehind, secret)} {
		h := &Health{ready: notReady{err}}
		w := httptest.NewRecorder()
		handle(h.readyz)(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "10.1.2.3") || strings.Contains(w.Body.String(), "005") {
			t.Errorf("%v: %d %s", err, w.Code, w.Body.String())
		}
	}
}

// TestListQueryMustParse: a list whose query string does not parse is
// refused with 400 naming the query, not read as the first page
// (docs/design/api-conventions.md).
func TestListQueryMustParse(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"cursor=%%%x", "limit=5&cursor=%zz", "a=%"} {
		r := httptest.NewRequest(http.MethodGet, "/v1/suspensions", nil)
		r.URL.RawQuery = q
		_, _, err := pageParams(r)
		var p *Problem
		if !errors.As(err, &p) || p.Status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "query" {
			t.Errorf("?%s: %v", q, err)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/suspensions?limit=7&cursor=abc", nil)
	if cursor, n, err := pageParams(r); cursor != "abc" || n != 7 || err != nil {
		t.Errorf("a good query: %q %d %v", cursor, n, err)
	}
}
