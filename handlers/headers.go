package handlers

import (
	"net/http"
	"strings"
)

// answerCSP is the policy of every answer that is not a page (JSON,
// problems, YAML, metrics, scripts): a browser that opens one as a
// document runs and loads nothing from it, and no other site frames it.
const answerCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// pageCSP is the policy of the HTML pages (the console, /docs): scripts,
// styles and fetches from this origin only. Swagger UI sets inline styles
// and shows images from data: URLs (hence those two), and Try-it-out
// fetches this origin's API (default-src covers connect-src). No page may
// be framed by another site (clickjacking), and forms post only here.
const pageCSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; worker-src 'self' blob:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// secureHeaders puts on every answer, before any handler writes it, what
// a browser needs to keep it to itself: no framing (X-Frame-Options for
// browsers without CSP's frame-ancestors), no Referer telling the sites
// a page links to where it came from, no content sniffing, and no storing
// in any cache
// (/v1/me carries the email, sessions carry device names; a shared or a
// back-button cache must not keep them). Pages replace the CSP with
// pageCSP (setPageHeaders).
//
// Five constant headers do not need a library: unrolled/secure would add
// a dependency for them and still leave Cache-Control to us.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for name, value := range answerHeaders {
			h[name] = value
		}
		next.ServeHTTP(w, r)
	})
}

// answerHeaders are secureHeaders' headers, canonical names to values made
// once: every request shares the slices instead of allocating five
// (Header.Set replaces a slice and Header.Add appends beyond its capacity
// of one, so no answer changes another's).
var answerHeaders = http.Header{
	"Content-Security-Policy": {answerCSP},
	"X-Frame-Options":         {"DENY"},
	"Referrer-Policy":         {"no-referrer"},
	"X-Content-Type-Options":  {"nosniff"},
	"Cache-Control":           {"no-store"},
}

// setPageHeaders marks an answer as an HTML page with the pages' CSP.
func setPageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
}

// isPage says whether a file of web/ is an HTML page.
func isPage(name string) bool {
	return strings.HasSuffix(name, ".html")
}
