package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTwoAuthorizationHeadersAreRefused: with two headers, which one
// counts would depend on who reads it (a proxy may check one while shelf
// acts on the other), so the request is 400 before any token is looked up.
func TestTwoAuthorizationHeadersAreRefused(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodGet, "/v1/me", nil)
	req.Header.Add("Authorization", "Bearer one")
	req.Header.Add("Authorization", "Bearer two")
	rec := httptest.NewRecorder()
	testRouter(t).ServeHTTP(rec, req)
	problemOf(t, rec, http.StatusBadRequest, "malformed_authorization")
}
