package handlers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"shelf/internal/metrics"
)

// BenchmarkFrame is what the frame adds to a request that does nothing:
// the id, the deadline, the logger, the metrics and the access line.
func BenchmarkFrame(b *testing.B) {
	m := metrics.New()
	r := chi.NewRouter()
	r.Use(frame(zerolog.New(io.Discard), nil, 3*time.Second, m))
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	req := httptest.NewRequest(http.MethodGet, "/things/42", nil)
	b.ReportAllocs()
	for b.Loop() {
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
}

func BenchmarkNoFrame(b *testing.B) {
	r := chi.NewRouter()
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	req := httptest.NewRequest(http.MethodGet, "/things/42", nil)
	b.ReportAllocs()
	for b.Loop() {
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
}
