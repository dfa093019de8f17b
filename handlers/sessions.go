package handlers

import (
	"net/http"
	"time"

	"shelf/domain/accounts"
)

// Sessions serves login and logout.
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
	ExpiresAt time.Time    `json:"expiresAt"`
	User      userResponse `json:"user"`
}

// login serves POST /v1/sessions: a session for a username or email and password.
func (h *Sessions) login(w http.ResponseWriter, r *http.Request) error {
	var req loginRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := h.accounts.Login(r.Context(), *req.Login, *req.Password)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, sessionResponse{
		Token: res.Token, ExpiresAt: res.ExpiresAt.UTC(),
		User: toUserResponse(accounts.UserView{User: res.User, Full: true}),
	})
	return nil
}

// logout serves DELETE /v1/sessions/current: end the caller's session.
func (h *Sessions) logout(w http.ResponseWriter, r *http.Request) error {
	if err := h.accounts.Logout(r.Context(), principal(r.Context())); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
