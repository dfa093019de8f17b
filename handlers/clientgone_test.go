package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/metrics"
)

// blockingUsers is a user store whose reads of an account (Get, and
// Profile: what an anonymous GET /v1/users/{id} reads) wait until the
// request's context ends, as a Cassandra read does when the request is
// cut short, then fail with what the store makes of that (fail).
type blockingUsers struct {
	accounts.UserStore // nil: the tests read accounts only
	started            chan struct{}
	fail               func(cause error) error
}

func (b *blockingUsers) Get(ctx context.Context, _ string) (domain.User, error) {
	close(b.started)
	<-ctx.Done()
	return domain.User{}, b.fail(ctx.Err())
}

func (b *blockingUsers) Profile(ctx context.Context, id string) (domain.Profile, error) {
	u, err := b.Get(ctx, id)
	return u.Profile(), err
}

// syncBuffer collects log lines written by the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// lines are the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.buf.Bytes()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, line)
	}
	return out
}

// oneRequestServer is the real router, with a logger and metrics the test
// reads, behind a real listener (only a connection that closes cancels a
// request's context). done closes once the router has served one request:
// its access line is written and it is counted.
type oneRequestServer struct {
	*httptest.Server
	router http.Handler
	logs   *syncBuffer
	done   chan struct{}
}

func newOneRequestServer(t *testing.T, users accounts.UserStore, timeout time.Duration) *oneRequestServer {
	t.Helper()
	logs := &syncBuffer{}
	s := &oneRequestServer{logs: logs, done: make(chan struct{})}
	s.router = NewRouter(Deps{
		Logger:         zerolog.New(logs),
		Ready:          readyFunc(func() error { return nil }),
		OpenAPI:        []byte("openapi: 3.1.0\n"),
		MaxBodyBytes:   1 << 20,
		RequestTimeout: timeout,
		Accounts:       accounts.New(accounts.Config{}, nil, users, nil, nil, nil),
		Metrics:        metrics.New(),
	})
	var once sync.Once
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer once.Do(func() { close(s.done) })
		s.router.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// served waits until the router has finished the request.
func (s *oneRequestServer) served(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never finished the request")
	}
}

// requestCounts are the shelf_http_requests_total lines of /metrics.
func (s *oneRequestServer) requestCounts(t *testing.T) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var out []string
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "shelf_http_requests_total{") && !strings.Contains(line, `route="/metrics"`) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// checkRecorded checks that the one request was logged and counted with
// status, its access line at info, and that nothing was logged at a level
// in banned.
func (s *oneRequestServer) checkRecorded(t *testing.T, route string, status int, banned ...string) {
	t.Helper()
	accessLines := 0
	for _, line := range s.logs.lines(t) {
		level, _ := line["level"].(string)
		for _, b := range banned {
			if level == b {
				t.Errorf("a line at %s: %v", level, line)
			}
		}
		if line["message"] != "request" || line["route"] != route {
			continue
		}
		accessLines++
		if line["status"] != float64(status) || level != "info" {
			t.Errorf("access line: status %v at %s, want %d at info", line["status"], level, status)
		}
	}
	if accessLines != 1 {
		t.Errorf("%d access lines for %s, want 1", accessLines, route)
	}
	want := fmt.Sprintf(`route=%q,status="%d"} 1`, route, status)
	counts := s.requestCounts(t)
	if len(counts) != 1 || !strings.HasSuffix(counts[0], want) {
		t.Errorf("shelf_http_requests_total: %q, want one series ending %s", counts, want)
	}
}

// TestClientGoneIs499 (docs/design/api-conventions.md): a request whose client hangs up
// is logged at info and counted as 499, never as a 5xx at error level,
// whatever error the handler met on the way out: the store's read cut
// short (which the repository reports as unavailable, a 503, or which may
// come back plain, a 500), or the body that stopped arriving.
func TestClientGoneIs499(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail func(cause error) error
	}{
		{"the store says unavailable", func(cause error) error {
			return fmt.Errorf("users.get: %w: %w", domain.ErrUnavailable, cause)
		}},
		{"the store's error is plain", func(cause error) error { return fmt.Errorf("users.get: %w", cause) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			users := &blockingUsers{started: make(chan struct{}), fail: tc.fail}
			s := newOneRequestServer(t, users, 10*time.Second)
			ctx, hangUp := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/v1/users/"+domain.NewID(domain.UserIDPrefix), nil)
			if err != nil {
				t.Fatal(err)
			}
			answered := make(chan error, 1)
			go func() {
				resp, err := s.Client().Do(req)
				if err == nil {
					_ = resp.Body.Close()
				}
				answered <- err
			}()
			<-users.started
			hangUp()
			if err := <-answered; !errors.Is(err, context.Canceled) {
				t.Fatalf("the client's request ended with %v, want it cancelled", err)
			}
			s.served(t)
			s.checkRecorded(t, "/v1/users/{id}", StatusClientClosedRequest, "error", "warn")
			if !s.logged(t, "client closed the request", "info") {
				t.Errorf("no info line says the client closed the request: %v", s.logs.lines(t))
			}
		})
	}
	t.Run("the body stops arriving", func(t *testing.T) {
		t.Parallel()
		s := newOneRequestServer(t, nil, 10*time.Second)
		conn, err := net.Dial("tcp", s.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, err = fmt.Fprint(conn, "POST /v1/users HTTP/1.1\r\nHost: shelf\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100\r\n\r\n{\"username\": ")
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
		s.served(t)
		s.checkRecorded(t, "/v1/users", StatusClientClosedRequest, "error", "warn")
	})
}

// TestRequestDeadlineStays503: a request that runs out of time while its
// client waits is the server's failure, answered 503 and logged at error,
// not mistaken for a client that went away.
func TestRequestDeadlineStays503(t *testing.T) {
	t.Parallel()
	users := &blockingUsers{started: make(chan struct{}), fail: func(cause error) error { return fmt.Errorf("users.get: %w", cause) }}
	s := newOneRequestServer(t, users, 50*time.Millisecond)
	resp, err := s.Client().Get(s.URL + "/v1/users/" + domain.NewID(domain.UserIDPrefix))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
	s.served(t)
	s.checkRecorded(t, "/v1/users/{id}", http.StatusServiceUnavailable)
	if !s.logged(t, "request failed", "error") {
		t.Errorf("the 503 was not logged at error: %v", s.logs.lines(t))
	}
}

// logged reports whether a line with the message was logged at level.
func (s *oneRequestServer) logged(t *testing.T, message, level string) bool {
	t.Helper()
	for _, line := range s.logs.lines(t) {
		if line["message"] == message && line["level"] == level {
			return true
		}
	}
	return false
}
