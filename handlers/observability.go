package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/cors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shelf/internal/metrics"
)

// measure counts every request by route pattern (not path: ids would make
// the series unbounded), method and status, and times it.
func measure(m *metrics.Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			ctx, trips := metrics.WithTrips(r.Context())
			next.ServeHTTP(ww, r.WithContext(ctx))
			route := "unmatched"
			if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.RoutePattern() != "" {
				route = rctx.RoutePattern()
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			m.HTTPRequests.WithLabelValues(route, r.Method, strconv.Itoa(status)).Inc()
			m.HTTPDuration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
			m.RoundTrips.WithLabelValues(route, r.Method).Observe(float64(trips.Count()))
		})
	}
}

// serveMetrics serves the registry in the Prometheus text format.
func serveMetrics(m *metrics.Metrics) http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// corsFor lets browser front ends on the listed origins call the API. The
// API authenticates with a bearer token, never a cookie, so credentials
// (cookies) are not allowed: a page on another origin gets nothing it
// could not already send itself. Preflights are answered here, before
// routing.
func corsFor(origins []string) func(http.Handler) http.Handler {
	return cors.Handler(cors.Options{
		AllowedOrigins:   origins,
		AllowedMethods:   []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders:   []string{"Authorization", "Content-Type", "X-Request-Id"},
		ExposedHeaders:   []string{"X-Request-Id", "Location", "Retry-After"},
		AllowCredentials: false,
		MaxAge:           600,
	})
}
