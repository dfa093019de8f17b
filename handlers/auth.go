package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"shelf/domain"
	"shelf/domain/accounts"
)

const principalKey ctxKey = iota + 100

// principal returns the caller put on the context by authenticate
// (anonymous when there is none).
func principal(ctx context.Context) domain.Principal {
	p, _ := ctx.Value(principalKey).(domain.Principal)
	return p
}

// authenticate turns `Authorization: Bearer <token>` into the caller: the
// session and its account read at once (accounts.Authenticate), no cache
// (a revoked session must stop working at once). No header means an
// anonymous caller; a header that is malformed, or a token that is
// unknown, expired or revoked, or whose account may no longer use it
// (suspended, its password changed, being deleted: but for finishing that
// deletion, finishesOwnDeletion), is answered 401 on any route, so a
// client learns its token is bad instead of silently seeing less. More
// than one Authorization header is a 400.
func authenticate(acc *accounts.Service) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.Header.Values("Authorization")) > 1 {
				// Which one counts would depend on who reads it: a proxy
				// may check the second while shelf acts on the first.
				writeProblem(w, r, newProblem(http.StatusBadRequest, "malformed_authorization",
					"The request has more than one Authorization header; send one."))
				return
			}
			header := r.Header.Get("Authorization")
			if header == "" {
				next.ServeHTTP(w, r)
				return
			}
			scheme, token, ok := strings.Cut(header, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
				writeProblem(w, r, newProblem(http.StatusUnauthorized, "unauthorized",
					"The Authorization header must be `Bearer <token>`."))
				return
			}
			p, err := acc.Authenticate(r.Context(), strings.TrimSpace(token))
			if errors.Is(err, accounts.ErrDeletionSession) && finishesOwnDeletion(r, p.UserID) {
				// The retry of a user's own deletion, finishing it.
				err = nil
			}
			if err != nil {
				writeError(w, r, err)
				return
			}
			p.From = origin(r)
			p.From.Session = domain.SessionID(p.Session.TokenHash)
			ctx := accounts.WithSession(context.WithValue(r.Context(), principalKey, p), p.Session.TokenHash)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// finishesOwnDeletion reports whether r is a user's request to delete
// their own account (DELETE /v1/users/{id} or POST
// /v1/users/{id}/deletion): the one request a session of an account being
// deleted may still make, to finish it.
func finishesOwnDeletion(r *http.Request, userID string) bool {
	return (r.Method == http.MethodDelete && r.URL.Path == "/v1/users/"+userID) ||
		(r.Method == http.MethodPost && r.URL.Path == "/v1/users/"+userID+"/deletion")
}

// requestClient is who sent r, as the request frame believes: its user
// agent and address (see ClientIP).
func requestClient(r *http.Request) accounts.Client {
	return accounts.Client{UserAgent: r.UserAgent(), IP: ipText(ClientIP(r.Context()))}
}
