package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// TestShutdownDrainsInFlightRequests cancels the serve context while a slow
// request runs: the request still gets its whole answer, new connections are
// refused, and ServeHTTP returns cleanly.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(500 * time.Millisecond)
		_, _ = io.WriteString(w, "finished")
	})
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeHTTP(ctx, ln, slow, cfg.HTTP, zerolog.Nop()) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-started
	cancel()
	r := <-got
	if r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	if err := <-served; err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Fatal("server still accepts after shutdown")
	}
}

// TestTheOutboxBacklogIsReadOnceEveryFifteenSeconds: the outbox worker
// runs every second (SHELF_OUTBOX_INTERVAL), and its read of the backlog
// for the metrics reads up to library.BacklogMarks marks; read every
// run, a large backlog (after a node's outage) cost every process that
// read each second, beside the drain it slowed. Over a minute of runs a
// second apart it is read four times, the first at once.
func TestTheOutboxBacklogIsReadOnceEveryFifteenSeconds(t *testing.T) {
	t.Parallel()
	s := sampled{every: backlogEvery}
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var at []time.Duration
	for i := range 60 {
		now := start.Add(time.Duration(i) * time.Second)
		if s.due(now) {
			at = append(at, now.Sub(start))
		}
	}
	want := []time.Duration{0, 15 * time.Second, 30 * time.Second, 45 * time.Second}
	if !slices.Equal(at, want) {
		t.Errorf("the backlog read at %v, want %v", at, want)
	}
}
