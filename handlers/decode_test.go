package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// echoRequest is a request DTO used only to exercise decoding.
type echoRequest struct {
	Name  string `json:"name" validate:"required,min=3,max=10"`
	Email string `json:"email" validate:"omitempty,email"`
	Age   int    `json:"age" validate:"omitempty,min=1"`
}

// testRouter is the real router with one extra route that decodes a body, so
// the strict decoding is tested through the real middleware stack.
func testRouter(t *testing.T) http.Handler {
	t.Helper()
	return testRouterFor(t)
}

// testRouterFor builds the test router for a test or a fuzz target.
func testRouterFor(tb testing.TB) http.Handler {
	tb.Helper()
	r := NewRouter(Deps{
		Logger:         zerolog.Nop(),
		Ready:          readyFunc(func() error { return nil }),
		OpenAPI:        []byte("openapi: 3.1.0\n"),
		MaxBodyBytes:   64,
		RequestTimeout: time.Second,
	})
	r.Post("/echo", handle(func(w http.ResponseWriter, r *http.Request) error {
		var req echoRequest
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, req)
		return nil
	}))
	r.Get("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	return r
}

type readyFunc func() error

func (f readyFunc) CheckReady(context.Context) error { return f() }

// problemOf decodes a problem answer and checks the parts every problem has.
func problemOf(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) Problem {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != ProblemContentType {
		t.Fatalf("Content-Type %q, want %q", ct, ProblemContentType)
	}
	var p Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if p.Code != code || p.Status != status || p.Type != "urn:shelf:problem:"+code || p.Title == "" {
		t.Fatalf("problem %+v, want code %q status %d", p, code, status)
	}
	if p.RequestID == "" || p.RequestID != rec.Header().Get(RequestIDHeader) {
		t.Fatalf("requestId %q, header %q", p.RequestID, rec.Header().Get(RequestIDHeader))
	}
	return p
}

func TestBadRequestsGetProblems(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	cases := []struct {
		name, contentType, body string
		status                  int
		code, field, fieldCode  string
	}{
		{"no content type", "", `{"name":"abc"}`, 415, "unsupported_media_type", "", ""},
		{"wrong content type", "text/plain", `{"name":"abc"}`, 415, "unsupported_media_type", "", ""},
		{"malformed json", "application/json", `{"name":`, 400, "malformed_json", "", ""},
		{"syntax error", "application/json", `{"name" "abc"}`, 400, "malformed_json", "", ""},
		{"empty body", "application/json", ``, 400, "malformed_json", "", ""},
		{"not an object", "application/json", `["abc"]`, 400, "malformed_json", "", ""},
		{"null", "application/json", ` null `, 400, "malformed_json", "", ""},
		{"trailing data", "application/json", `{"name":"abc"} {"name":"def"}`, 400, "malformed_json", "", ""},
		{"trailing garbage", "application/json", `{"name":"abc"}x`, 400, "malformed_json", "", ""},
		{"unknown field", "application/json", `{"name":"abc","admin":true}`, 400, "unknown_field", "admin", "unknown"},
		{"wrong type", "application/json", `{"name":42}`, 400, "validation_failed", "name", "wrong_type"},
		{"missing field", "application/json", `{}`, 400, "validation_failed", "name", "required"},
		{"too short", "application/json", `{"name":"ab"}`, 400, "validation_failed", "name", "min"},
		{"bad email", "application/json", `{"name":"abc","email":"nope"}`, 400, "validation_failed", "email", "email"},
		{"explicit null", "application/json", `{"name":"abcd","email":null}`, 400, "validation_failed", "email", "wrong_type"},
		{"too large", "application/json", `{"name":"` + strings.Repeat("a", 100) + `"}`, 413, "body_too_large", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			p := problemOf(t, rec, tc.status, tc.code)
			if tc.field == "" {
				return
			}
			for _, f := range p.Errors {
				if f.Field == tc.field && f.Code == tc.fieldCode && f.Message != "" {
					return
				}
			}
			t.Fatalf("errors %+v do not name field %q with code %q", p.Errors, tc.field, tc.fieldCode)
		})
	}
}

func TestBodyOverLimitWithoutContentLength(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(`{"name":"`+strings.Repeat("a", 100)+`"}`))
	req.ContentLength = -1 // chunked: the limit is hit while reading
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	testRouter(t).ServeHTTP(rec, req)
	problemOf(t, rec, http.StatusRequestEntityTooLarge, "body_too_large")
}

func TestGoodRequestDecodes(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(`{"name":"abcd","email":"a@example.org"}`))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	rec := httptest.NewRecorder()
	testRouter(t).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"abcd"`) {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

func TestNotFoundAndMethodNotAllowedAreProblems(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nowhere", nil))
	problemOf(t, rec, http.StatusNotFound, "not_found")

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/healthz", nil))
	problemOf(t, rec, http.StatusMethodNotAllowed, "method_not_allowed")
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("Allow %q does not list GET", allow)
	}
}

func TestPanicBecomes500Problem(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	testRouter(t).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/panic", nil))
	p := problemOf(t, rec, http.StatusInternalServerError, "internal")
	if strings.Contains(p.Detail, "boom") {
		t.Fatalf("the panic's text leaked: %q", p.Detail)
	}
}

func TestRequestIDIsKeptWhenSaneAndReplacedOtherwise(t *testing.T) {
	t.Parallel()
	h := testRouter(t)
	for _, tc := range []struct {
		sent string
		kept bool
	}{
		{"client-id-12345", true},
		{"short", false},
		{"has spaces in it", false},
		{strings.Repeat("x", 200), false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/nowhere", nil)
		req.Header.Set(RequestIDHeader, tc.sent)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(RequestIDHeader)
		if (got == tc.sent) != tc.kept || got == "" {
			t.Errorf("sent %q, got %q, want kept=%v", tc.sent, got, tc.kept)
		}
	}
}

func TestNewRequestIDsAreDistinctHex(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if len(id) != 24 || strings.Trim(id, "0123456789abcdef") != "" || !incomingIDRE.MatchString(id) {
			t.Fatalf("request id %q: want 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("request id %q given twice", id)
		}
		seen[id] = true
	}
}

// TestBodiesThatMeanTwoThingsAreRefused: what encoding/json would read one
// way and a proxy another is refused, naming the field: a name given
// twice (encoding/json keeps the last), a name in another case (it
// matches case-insensitively), text that is not UTF-8 or escapes a lone
// surrogate (it would store U+FFFD). A surrogate pair and exact names pass.
func TestBodiesThatMeanTwoThingsAreRefused(t *testing.T) {
	t.Parallel()
	router := testRouter(t)
	for _, tc := range []struct {
		body, code, field string
	}{
		{`{"name":"abcd","name":"efgh"}`, "duplicate_field", "name"},
		{`{"name":"abcd","age":2,"age":3}`, "duplicate_field", "age"},
		{`{"Name":"abcd"}`, "unknown_field", "Name"},
		{`{"name":"abcd","EMAIL":"a@example.org"}`, "unknown_field", "EMAIL"},
		{"{\"name\":\"ab\xffcd\"}", "malformed_json", ""},
		{`{"name":"ab\ud800cd"}`, "malformed_json", ""},
	} {
		req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		p := problemOf(t, rec, http.StatusBadRequest, tc.code)
		if tc.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tc.field) {
			t.Errorf("%s: fields %+v, want %s", tc.body, p.Errors, tc.field)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(`{"name":"ab\ud83d\ude00"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	router.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "ab😀") {
		t.Fatalf("a surrogate pair: %d %s", rec.Code, rec.Body)
	}
}

// TestOnlyUTF8BodiesAreRead: a body that says another charset is 415 (it
// would be read as UTF-8 and mean something else); utf-8 in any case passes.
func TestOnlyUTF8BodiesAreRead(t *testing.T) {
	t.Parallel()
	router := testRouter(t)
	for ct, want := range map[string]int{
		"application/json; charset=iso-8859-1": http.StatusUnsupportedMediaType,
		"application/json; charset=utf-16":     http.StatusUnsupportedMediaType,
		"application/json; charset=UTF-8":      http.StatusOK,
		"application/json":                     http.StatusOK,
	} {
		req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(`{"name":"abcd"}`))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("%s: %d, want %d: %s", ct, rec.Code, want, rec.Body)
		}
	}
}

// TestABodyWithTwoContentTypesIsRefused: with two Content-Type headers,
// which one says what the body is depends on who reads it (net/http's
// Get takes the first, a filter in front may take the last and read a
// JSON body as text/plain, or skip it), as with two Authorization
// headers. Either order was read by the first alone: application/json
// then text/plain passed as JSON. Any two are 415, the body unread.
func TestABodyWithTwoContentTypesIsRefused(t *testing.T) {
	t.Parallel()
	router := testRouter(t)
	for _, cts := range [][]string{
		{"application/json", "text/plain"},
		{"text/plain", "application/json"},
		{"application/json", "application/json"},
	} {
		req := httptest.NewRequest(http.MethodPost, "/echo", strings.NewReader(`{"name":"abcd"}`))
		req.Header["Content-Type"] = cts
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		p := problemOf(t, rec, http.StatusUnsupportedMediaType, "unsupported_media_type")
		if !strings.Contains(p.Detail, "one Content-Type") {
			t.Errorf("%q: detail %q does not ask for one Content-Type", cts, p.Detail)
		}
	}
}

// TestNestedNamesMatchExactlyToo: a nested object read into a struct (a
// proof's passkey: openapi.yaml's PasskeyProof, additionalProperties
// false) takes its names as the top level does: one in another case, which
// encoding/json would match case-insensitively (challenge given twice in
// two cases: a proxy reads the first, shelf the last), or one unknown, is
// 400 naming its path, as the validator names nested fields. A credential,
// a free object, keeps any names; a requestTime reads its own JSON.
func TestNestedNamesMatchExactlyToo(t *testing.T) {
	t.Parallel()
	for body, field := range map[string]string{
		`{"displayName":"Al","passkey":{"CHALLENGE":"x","credential":{}}}`:                 "passkey.CHALLENGE",
		`{"displayName":"Al","passkey":{"challenge":"a","Challenge":"b","credential":{}}}`: "passkey.Challenge",
		`{"displayName":"Al","passkey":{"challenge":"a","credential":{},"extra":1}}`:       "passkey.extra",
	} {
		var req updateUserRequest
		r := httptest.NewRequest(http.MethodPatch, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		p, ok := decodeJSON(r, &req).(*Problem)
		if !ok || p.Code != "unknown_field" || len(p.Errors) != 1 || p.Errors[0].Field != field {
			t.Errorf("%s: %+v, want unknown_field naming %s", body, p, field)
		}
	}
	var req updateUserRequest
	r := httptest.NewRequest(http.MethodPatch, "/", strings.NewReader(
		`{"displayName":"Al","passkey":{"challenge":"a","credential":{"id":"x","Response":{"ClientDataJSON":"y"}}}}`))
	r.Header.Set("Content-Type", "application/json")
	if err := decodeJSON(r, &req); err != nil || req.Passkey == nil || *req.Passkey.Challenge != "a" {
		t.Errorf("a credential's own names: %v", err)
	}
	var sus suspendRequest
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"reason":"spam","until":{"wall":1}}`))
	r.Header.Set("Content-Type", "application/json")
	if p, ok := decodeJSON(r, &sus).(*Problem); !ok || len(p.Errors) != 1 || p.Errors[0].Field != "until" || p.Errors[0].Code != "format" {
		t.Errorf("an object for a time: %+v", p)
	}
}

// TestADeepCredentialIsCheckedInOnePass: the names' check costs a step a
// token, however deep the body. It read each name's path again (a JSON
// pointer, built and walked for every name), so a credential of free
// objects nested 9 000 deep cost the depth for each of its names: a body
// of 1 MiB to POST /v1/sessions/second-factor, which reads its body before
// anything else, took 25 s of a core (30 ms before the nested check),
// and 1 GiB allocated.
func TestADeepCredentialIsCheckedInOnePass(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"challenge":"x","passkey":{`)
	for c := 0; b.Len() < 256<<10; c++ {
		if c > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%s1%s`, c, strings.Repeat(`{"a":`, 9000), strings.Repeat(`}`, 9000))
	}
	b.WriteString("}}")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := onlyOneMeaning(b.Bytes(), &secondFactorRequest{}); err != nil {
		t.Fatalf("a deep credential: %v", err)
	}
	runtime.ReadMemStats(&after)
	if spent := after.TotalAlloc - before.TotalAlloc; spent > 64*uint64(b.Len()) {
		t.Errorf("checking %d bytes allocated %d: the check grows with the depth of each name", b.Len(), spent)
	}
}

// TestABodyOnARequestThatTakesNoneIsIgnored: a body is bounded where it
// is read, and an operation that takes none (a GET, a DELETE; openapi.yaml
// lists no requestBody and no 413 for it) ignores it, as net/http does.
// The limit was checked for every request before routing: a GET or a
// DELETE whose Content-Length passed SHELF_MAX_BODY_BYTES answered 413,
// which its contract does not have, and the logout was not done.
func TestABodyOnARequestThatTakesNoneIsIgnored(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 100) // over testRouter's 64 bytes
	req := httptest.NewRequest(http.MethodGet, "/healthz", strings.NewReader(big))
	rec := httptest.NewRecorder()
	testRouter(t).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("GET /healthz with %d bytes: %d %s, want 200", len(big), rec.Code, rec.Body)
	}

	app := newMemApp(t)
	if rec := app.do(http.MethodDelete, "/v1/sessions/current", strings.Repeat("a", 1<<20+1)); rec.Code != http.StatusNoContent {
		t.Errorf("DELETE /v1/sessions/current with 1 MiB + 1 bytes: %d %s, want 204", rec.Code, rec.Body)
	}
	if rec := app.do(http.MethodGet, "/v1/me", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/me after the logout: %d %s, want 401", rec.Code, rec.Body)
	}
}
