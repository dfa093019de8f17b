package lean

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Handler serves the measured operations on net/http's own mux, as little
// as an HTTP service can do: no middleware, no logging, no metrics.
func Handler(s *Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		u, err := s.GetUser(r.Context(), r.PathValue("id"))
		reply(w, http.StatusOK, u, err)
	})
	library := func(w http.ResponseWriter, r *http.Request) {
		c, err := s.Authenticate(r.Context(), bearer(r))
		if err != nil {
			reply(w, 0, nil, err)
			return
		}
		p, err := s.Library(r.Context(), c, r.PathValue("id"), r.URL.Query().Get("order"), r.URL.Query().Get("cursor"), limit(r))
		reply(w, http.StatusOK, p, err)
	}
	// One pattern for both: net/http's mux refuses the pair as ambiguous.
	mux.HandleFunc("GET /v1/users/{id}/{sub}", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("id") == "by-username":
			u, err := s.ByUsername(r.Context(), r.PathValue("sub"))
			reply(w, http.StatusOK, u, err)
		case r.PathValue("sub") == "library":
			library(w, r)
		default:
			http.NotFound(w, r)
		}
	})
	mux.HandleFunc("GET /v1/groups/{id}/library", library)
	mux.HandleFunc("GET /v1/suspensions", func(w http.ResponseWriter, r *http.Request) {
		c, err := s.Authenticate(r.Context(), bearer(r))
		if err != nil {
			reply(w, 0, nil, err)
			return
		}
		p, err := s.Suspended(r.Context(), c, r.URL.Query().Get("cursor"), limit(r))
		reply(w, http.StatusOK, p, err)
	})
	mux.HandleFunc("POST /v1/users", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Username, Email, Password string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u, err := s.Signup(r.Context(), in.Username, in.Email, in.Password)
		reply(w, http.StatusCreated, u, err)
	})
	mux.HandleFunc("POST /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Login, Password string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sess, err := s.Login(r.Context(), in.Login, in.Password)
		reply(w, http.StatusCreated, sess, err)
	})
	return mux
}

func bearer(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func limit(r *http.Request) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && n <= 100 {
		return n
	}
	return 20
}

// reply writes v as JSON with status, or the error's status.
func reply(w http.ResponseWriter, status int, v any, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, "not found", http.StatusNotFound)
	case errors.Is(err, ErrUnauthorized):
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(wireOf(v))
	}
}
