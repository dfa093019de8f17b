package handlers

import (
	"net/http"

	"github.com/go-chi/cors"
)

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
