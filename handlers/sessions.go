package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Sessions serves login, logout and a user's sessions.
type Sessions struct {
	accounts *accounts.Service
}

// loginRequest is POST /v1/sessions: login is a username or an email.
// Neither has a rule but the transport's: 1-1024 characters.
type loginRequest struct {
	Login    *string `json:"login" validate:"required,length=1-1024"`
	Password *string `json:"password" validate:"required,length=1-1024"`
}

// sessionResponse is the Session schema of openapi.yaml.
type sessionResponse struct {
	Token     string       `json:"token"`
	ExpiresAt timestamp    `json:"expiresAt"`
	User      userResponse `json:"user"`
}

// login serves POST /v1/sessions: a session for a username or email and password.
func (h *Sessions) login(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := h.accounts.Login(r.Context(), *req.Login, *req.Password, requestClient(r))
	if err != nil {
		return err
	}
	writeSession(w, res)
	return nil
}

// writeSession answers a new session (a login, its second step, a
// completed reset): 201, the Session schema, never stored by a cache; or,
// for an account with a second factor, its challenge (202,
// LoginChallenge).
func writeSession(w http.ResponseWriter, res accounts.LoginResult) {
	if res.Challenge != "" {
		writeChallenge(w, res)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, sessionResponse{
		Token: res.Token, ExpiresAt: stamp(res.ExpiresAt),
		User: toUserResponse(accounts.UserView{User: res.User, Full: true}),
	})
}

// logout serves DELETE /v1/sessions/current: end the caller's session.
func (h *Sessions) logout(w http.ResponseWriter, r *http.Request) error {
	if err := h.accounts.Logout(r.Context(), principal(r.Context())); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionInfoResponse is the SessionInfo schema of openapi.yaml.
type sessionInfoResponse struct {
	ID         string    `json:"id"`
	CreatedAt  timestamp `json:"createdAt"`
	LastSeenAt timestamp `json:"lastSeenAt"`
	ExpiresAt  timestamp `json:"expiresAt"`
	UserAgent  string    `json:"userAgent,omitempty"`
	ClientIP   string    `json:"clientIp,omitempty"`
	MadeWith   []string  `json:"madeWith,omitempty"`
	Current    bool      `json:"current"`
}

func toSessionInfoResponse(v accounts.SessionView) sessionInfoResponse {
	return sessionInfoResponse{ID: v.ID(), CreatedAt: stamp(v.CreatedAt), LastSeenAt: stamp(v.Seen()),
		ExpiresAt: stamp(v.ExpiresAt), UserAgent: v.UserAgent, ClientIP: v.ClientIP, MadeWith: v.MadeWith, Current: v.Current}
}

// list serves GET /v1/users/{id}/sessions: the user's live sessions,
// newest first, paged (the user or an admin).
func (h *Sessions) list(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.accounts.ListSessions(r.Context(), principal(r.Context()), chi.URLParam(r, "id"), cursor, limit)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, toPage(page, toSessionInfoResponse))
	return nil
}

// revoke serves DELETE /v1/users/{id}/sessions/{sessionId}: end one
// session (the user or an admin).
func (h *Sessions) revoke(w http.ResponseWriter, r *http.Request) error {
	if err := h.accounts.RevokeSession(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		chi.URLParam(r, "sessionId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// errBadKeep refuses a ?keep= other than current.
var errBadKeep = domain.Invalid("keep must be current.",
	domain.FieldError{Field: "keep", Code: "oneof", Message: "must be current"})

// revokeAll serves DELETE /v1/users/{id}/sessions: end every session of
// the user (the user or an admin); ?keep=current keeps the caller's.
func (h *Sessions) revokeAll(w http.ResponseWriter, r *http.Request) error {
	q, err := listQuery(r, "keep")
	if err != nil {
		return err
	}
	if q.Has("keep") && q.Get("keep") != "current" {
		return errBadKeep
	}
	if err := h.accounts.RevokeSessions(r.Context(), principal(r.Context()), chi.URLParam(r, "id"),
		q.Has("keep")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
