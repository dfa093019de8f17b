package handlers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/metrics"
)

// instantProfiles answers every profile read at once: what is left of
// GET /v1/users/{id} is shelf's own work, without the driver's.
type instantProfiles struct {
	accounts.UserStore // nil: only Profile is read
	p                  domain.Profile
}

func (s instantProfiles) Profile(context.Context, string) (domain.Profile, error) { return s.p, nil }

// BenchmarkProfileRead is an anonymous GET /v1/users/{id} through the
// whole router as cmd/api builds it (the frame, the headers, the session
// check, the handler, the JSON), the store answering at once;
// BenchmarkProfileReadLean is what the lean server of make bench does for
// it (net/http's mux, the row as JSON). The difference is shelf's own work
// on the way in and out, a part of the API CPU per request that lean has
// not (docs/benchmarks.md).
func BenchmarkProfileRead(b *testing.B) {
	id := domain.NewID(domain.UserIDPrefix)
	users := instantProfiles{p: domain.Profile{ID: id, Username: "ada", DisplayName: "Ada Lovelace",
		Status: domain.StatusActive, CreatedAt: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}}
	router := NewRouter(Deps{
		Logger:         zerolog.New(io.Discard).With().Timestamp().Logger(),
		Ready:          readyFunc(func() error { return nil }),
		OpenAPI:        []byte("openapi: 3.1.0\n"),
		MaxBodyBytes:   1 << 20,
		RequestTimeout: 3 * time.Second,
		Accounts:       accounts.New(accounts.Config{}, nil, users, nil, nil, nil),
		Metrics:        metrics.New(),
	})
	req := httptest.NewRequest(http.MethodGet, "/v1/users/"+id, nil)
	req.RemoteAddr = "192.0.2.7:40000"
	req.Header.Set("User-Agent", "bench")
	serveLoop(b, router, req)
}

func BenchmarkProfileReadLean(b *testing.B) {
	type user struct {
		ID          string    `json:"id"`
		Username    string    `json:"username"`
		DisplayName string    `json:"displayName"`
		Status      string    `json:"status"`
		CreatedAt   time.Time `json:"createdAt"`
	}
	id := domain.NewID(domain.UserIDPrefix)
	u := user{ID: id, Username: "ada", DisplayName: "Ada Lovelace", Status: "active", CreatedAt: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != id {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(u)
	})
	serveLoop(b, mux, httptest.NewRequest(http.MethodGet, "/v1/users/"+id, nil))
}

// serveLoop serves req with h once and fails unless it is answered 200
// with the profile, then serves it again for as long as b measures.
func serveLoop(b *testing.B, h http.Handler, req *http.Request) {
	b.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"username":"ada"`) {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
