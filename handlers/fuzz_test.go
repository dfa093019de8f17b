package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeJSON sends arbitrary bodies and content types through the real
// middleware and the strict decoder: the answer is 200 or a 4xx problem,
// never a 5xx, never a panic.
func FuzzDecodeJSON(f *testing.F) {
	for _, c := range []struct{ ct, body string }{
		{"application/json", `{"name":"abcd"}`},
		{"application/json", `{"name":`},
		{"application/json", `{"name":"abc","admin":true}`},
		{"application/json", `[1,2]`},
		{"application/json", `{"name":"abc"} {}`},
		{"text/plain", `{"name":"abc"}`},
		{"application/problem+json", `{"name":"abcd","age":-1}`},
		{"application/json; charset=utf-8", "{\"name\":\"\u00e9\u00e9\u00e9\"}"},
		{"", ``},
	} {
		f.Add(c.ct, c.body)
	}
	h := testRouterFor(f)
	f.Fuzz(func(t *testing.T, contentType, body string) {
		req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			return
		}
		if rec.Code < 400 || rec.Code >= 500 {
			t.Fatalf("%q %q: status %d", contentType, body, rec.Code)
		}
		var p Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Code == "" || p.Status != rec.Code {
			t.Fatalf("%q %q: not a problem: %s", contentType, body, rec.Body)
		}
	})
}
