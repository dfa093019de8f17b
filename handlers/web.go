package handlers

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// web is the browser side: the API reference page (/docs), the console
// (/), and their scripts. web/vendor holds Swagger UI, fetched from npm by
// `make web-assets` and embedded when present.
//
//go:embed web
var web embed.FS

// webFiles is web/ as the root of /assets/.
var webFiles, _ = fs.Sub(web, "web")

// servePage serves one HTML page of web/.
func servePage(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page, err := fs.ReadFile(webFiles, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		setPageHeaders(w.Header())
		_, _ = w.Write(page)
	}
}

// serveAssets serves web/ under /assets/; a missing file is a 404 problem
// like any other. A page served from here (/assets/docs.html) has the
// pages' CSP, as it has at its own address.
func serveAssets() http.Handler {
	files := http.StripPrefix("/assets/", http.FileServer(http.FS(webFiles)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/assets/")
		if info, err := fs.Stat(webFiles, name); err != nil || info.IsDir() {
			writeProblem(w, r, newProblem(http.StatusNotFound, "not_found", "No resource at "+r.URL.Path+"."))
			return
		}
		if isPage(name) {
			setPageHeaders(w.Header())
		}
		files.ServeHTTP(w, r)
	})
}
