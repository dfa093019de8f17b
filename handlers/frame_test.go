package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"shelf/internal/metrics"
)

// logLines parses the JSON lines in buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestFrameNamesTimesCountsAndLogsEachRequest: the handler sees the id,
// the client IP, the logger and the deadline frame put on its context; the
// response carries the id; the access log line and the metrics describe
// the request as it was answered.
func TestFrameNamesTimesCountsAndLogsEachRequest(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	m := metrics.New()
	r := chi.NewRouter()
	r.Use(frame(zerolog.New(&logs), nil, 3*time.Second, m))
	var seenID, seenIP string
	var seenDeadline time.Duration
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		seenID, seenIP = RequestID(r.Context()), ClientIP(r.Context()).String()
		if d, ok := r.Context().Deadline(); ok {
			seenDeadline = time.Until(d)
		}
		requestLog(r).Info().Msg("inside")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("hello"))
	})

	req := httptest.NewRequest(http.MethodGet, "/things/42", nil)
	req.RemoteAddr = "203.0.113.7:5000"
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)

	id := rec.Header().Get(RequestIDHeader)
	if len(id) != 24 || seenID != id {
		t.Fatalf("response id %q, handler saw %q: want the same new 24-digit id", id, seenID)
	}
	if seenIP != "203.0.113.7" {
		t.Errorf("handler saw client IP %q", seenIP)
	}
	if seenDeadline <= 2*time.Second || seenDeadline > 3*time.Second {
		t.Errorf("handler's deadline is %v away, want about 3 s", seenDeadline)
	}
	lines := logLines(t, &logs)
	if len(lines) != 2 || lines[0]["message"] != "inside" || lines[1]["message"] != "request" {
		t.Fatalf("log lines %v: want the handler's, then the access line", lines)
	}
	for _, l := range lines {
		if l["requestId"] != id || l["ip"] != "203.0.113.7" {
			t.Errorf("line %v lacks the request id %s or the ip", l, id)
		}
	}
	access := lines[1]
	if access["method"] != "GET" || access["route"] != "/things/{id}" || access["path"] != "/things/42" ||
		access["status"] != 201.0 || access["bytes"] != 5.0 {
		t.Errorf("access line %v", access)
	}
	if ms, ok := access["durationMs"].(float64); !ok || ms < 0 {
		t.Errorf("access line's durationMs %v", access["durationMs"])
	}
	if n := testutil.ToFloat64(m.HTTPRequests.WithLabelValues("/things/{id}", "GET", "201")); n != 1 {
		t.Errorf("requests counted for the route: %v, want 1", n)
	}
	if n := testutil.CollectAndCount(m.RoundTrips); n != 1 {
		t.Errorf("round-trip series: %d, want 1", n)
	}

	// A caller's own sane id is kept; an unmatched path is counted apart,
	// with the status the router gave it.
	logs.Reset()
	req = httptest.NewRequest(http.MethodGet, "/nowhere", nil)
	req.Header.Set(RequestIDHeader, "caller-chosen-id-1")
	rec = httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	if got := rec.Header().Get(RequestIDHeader); got != "caller-chosen-id-1" {
		t.Errorf("caller's id replaced by %q", got)
	}
	if n := testutil.ToFloat64(m.HTTPRequests.WithLabelValues("unmatched", "GET", "404")); n != 1 {
		t.Errorf("unmatched requests counted: %v, want 1", n)
	}
	if l := logLines(t, &logs); len(l) != 1 || l[0]["status"] != 404.0 || l[0]["requestId"] != "caller-chosen-id-1" {
		t.Errorf("access line of the unmatched request: %v", l)
	}

	// An insane id is replaced.
	req = httptest.NewRequest(http.MethodGet, "/things/1", nil)
	req.Header.Set(RequestIDHeader, "bad id\twith\nbreaks")
	rec = httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	if got := rec.Header().Get(RequestIDHeader); len(got) != 24 || got == "bad id\twith\nbreaks" {
		t.Errorf("unsafe caller id answered as %q", got)
	}
}

// TestFrameWithoutMetricsOrDeadline: both are optional.
func TestFrameWithoutMetricsOrDeadline(t *testing.T) {
	t.Parallel()
	var hasDeadline bool
	h := frame(zerolog.Nop(), nil, 0, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, hasDeadline = r.Context().Deadline()
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK || hasDeadline || rec.Header().Get(RequestIDHeader) == "" {
		t.Errorf("status %d, deadline %v, id %q", rec.Code, hasDeadline, rec.Header().Get(RequestIDHeader))
	}
}
