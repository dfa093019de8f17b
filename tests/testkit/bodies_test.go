package testkit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestContractCheckRefusesWhatTheDocumentForbids: the body check compiled
// once per schema still refuses each kind of mismatch, through references
// (HealthStatus, the shared Error response, Problem) and formats: a
// date-time in any form but UTC with milliseconds is refused.
func TestContractCheckRefusesWhatTheDocumentForbids(t *testing.T) {
	t.Parallel()
	c, err := LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	problem := `{"type":"urn:shelf:problem:not_found","title":"Not Found","status":404,"code":"not_found","requestId":"r1"}`
	sessions := "/v1/users/u_abcdefghijklmnopqrstuvwxyz/sessions"
	session := `{"items":[{"id":"s_abcdefghijklmnopqrstuvwxyz","createdAt":"2026-11-27T10:00:00.000Z","lastSeenAt":"2026-11-27T10:00:00.000Z",` +
		`"expiresAt":"2026-11-28T10:00:00.000Z","userAgent":"Go-http-client/1.1","clientIp":"127.0.0.1","current":true}]}`
	user := `{"id":"u_abcdefghijklmnopqrstuvwxyz","username":"ann","displayName":"Ann","createdAt":"2026-11-27T10:00:00.000Z"}`
	for _, tc := range []struct {
		name, path, contentType, body string
		status                        int
		ok                            bool
	}{
		{"a health answer", "/healthz", "application/json", `{"status":"ok"}`, 200, true},
		{"a value outside the enum", "/healthz", "application/json", `{"status":"fine"}`, 200, false},
		{"a property the schema closes out", "/healthz", "application/json", `{"status":"ok","extra":1}`, 200, false},
		{"not JSON", "/healthz", "application/json", `{"status":`, 200, false},
		{"an undocumented Content-Type", "/healthz", "text/html", `<p>ok</p>`, 200, false},
		{"a problem through the shared response", "/healthz", "application/problem+json", problem, 404, true},
		{"a problem without its code", "/healthz", "application/problem+json", strings.Replace(problem, `"code":"not_found",`, "", 1), 404, false},
		{"a user", "/v1/users/u_abcdefghijklmnopqrstuvwxyz", "application/json", user, 200, true},
		{"a session", sessions, "application/json", session, 200, true},
		{"a session whose user agent holds a control character (a pattern of \\u escapes)", sessions, "application/json", strings.Replace(session, "Go", `G\u0007o`, 1), 200, false},
		{"a session whose user agent holds a zero-width space", sessions, "application/json", strings.Replace(session, "Go", `G\u200bo`, 1), 200, false},
		{"a user with a time that is no date-time", "/v1/users/u_abcdefghijklmnopqrstuvwxyz", "application/json", strings.Replace(user, "2026-11-27T10:00:00.000Z", "yesterday", 1), 200, false},
		{"a user with a time of two fractional digits", "/v1/users/u_abcdefghijklmnopqrstuvwxyz", "application/json", strings.Replace(user, "10:00:00.000Z", "10:00:00.34Z", 1), 200, false},
		{"a user with a time of no fractional digits", "/v1/users/u_abcdefghijklmnopqrstuvwxyz", "application/json", strings.Replace(user, "10:00:00.000Z", "10:00:00Z", 1), 200, false},
		{"a user with a time in another zone", "/v1/users/u_abcdefghijklmnopqrstuvwxyz", "application/json", strings.Replace(user, "10:00:00.000Z", "11:00:00.000+01:00", 1), 200, false},
		{"a user with a time of milliseconds on no real day", "/v1/users/u_abcdefghijklmnopqrstuvwxyz", "application/json", strings.Replace(user, "2026-11-27", "2026-02-30", 1), 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "http://shelf.test"+tc.path, nil)
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", tc.contentType)
			rec.Header().Set("X-Request-Id", "r1")
			rec.WriteHeader(tc.status)
			err := c.Check(req, rec.Result(), []byte(tc.body))
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestEveryResponseSchemaCompiles: each JSON body the document describes
// compiles with the check's engine, so a schema that does not shows here,
// not at the first answer a test gets for it.
func TestEveryResponseSchemaCompiles(t *testing.T) {
	t.Parallel()
	c, err := LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	compiled := 0
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, ref := range op.Responses.Map() {
				if ref.Ref != "" {
					continue // components/responses, below
				}
				for ct, media := range ref.Value.Content {
					if media.Schema == nil || !strings.Contains(ct, "json") {
						continue
					}
					pointer := "/paths/" + escapePointer(path) + "/" + strings.ToLower(method) + "/responses/" + escapePointer(status) + "/content/" + escapePointer(ct) + "/schema"
					if _, err := c.bodies.at(pointer); err != nil {
						t.Error(err)
					}
					compiled++
				}
			}
		}
	}
	for name, ref := range c.doc.Components.Responses {
		for ct, media := range ref.Value.Content {
			if media.Schema != nil && strings.Contains(ct, "json") {
				if _, err := c.bodies.at("/components/responses/" + escapePointer(name) + "/content/" + escapePointer(ct) + "/schema"); err != nil {
					t.Error(err)
				}
				compiled++
			}
		}
	}
	if compiled < 40 {
		t.Fatalf("compiled %d response schemas; is the walk broken?", compiled)
	}
	t.Logf("%d response schemas compile", compiled)
}
