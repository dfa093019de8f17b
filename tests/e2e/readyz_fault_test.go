package e2e

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"shelf/internal/localcassandra"
	"shelf/internal/testkit"
)

// TestReadyzFollowsCassandraDownAndUp kills a Cassandra node of the test's
// own under a running API: /readyz must answer 503 within seconds, and 200
// again by itself once the node is back, without restarting the API.
func TestReadyzFollowsCassandraDownAndUp(t *testing.T) {
	t.Parallel()
	l, err := testkit.Launcher()
	if err != nil {
		t.Fatal(err)
	}
	l.DataDir = t.TempDir()
	l.Log = testWriter{t}
	node := localcassandra.Node{Name: "readyz", Address: "127.0.0.9", Cluster: "shelf-readyz",
		Seeds: []string{"127.0.0.9"}, Token: "0", Durable: true}
	ctx := context.Background()
	if err := l.Start(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop(node) })

	db := testkit.NewDBOn(t, []string{node.Address})
	api := newTestAPI(t, db)
	if r := api.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("before the kill: %d %s", r.StatusCode, r.Body)
	}

	if err := l.Signal(node, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitReadyz(t, api, http.StatusServiceUnavailable, "database_unavailable", 10*time.Second)
	t.Logf("/readyz answered 503 %.1fs after the kill", time.Since(killed).Seconds())

	if err := l.Start(ctx, node); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	waitReadyz(t, api, http.StatusOK, "", 30*time.Second)
	t.Logf("/readyz answered 200 %.1fs after the node answered again", time.Since(restarted).Seconds())
}

// waitReadyz polls /readyz until it answers status (and code, for a problem)
// or within passes.
func waitReadyz(t *testing.T, api *testkit.API, status int, code string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r := api.Get("/readyz")
		if r.StatusCode == status && (code == "" || r.Problem(t).Code == code) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %s after %v; want %d %s", r.StatusCode, r.Body, within, status, code)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// testWriter sends the launcher's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
