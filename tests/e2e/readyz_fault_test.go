//go:build integration

package e2e

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"shelf/repository"
	"shelf/tests/testkit"
)

// TestReadyzFollowsCassandraDownAndUp takes Cassandra away from a running
// API, through a proxy only its driver uses: killed (every connection
// closed, new ones refused), then hung (connections open, nothing
// answered). /readyz must answer 503 within seconds each time, and 200
// again by itself once the node is back, without restarting the API. (A
// proxy, not a node of its own: two JVM starts would cost most of a
// minute of a two-core machine's make test, and a hang could not be
// tried. Real nodes are killed and hung by the cluster test and the
// nemesis.)
func TestReadyzFollowsCassandraDownAndUp(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	target := db.Conn.Hosts[0]
	if _, _, err := net.SplitHostPort(target); err != nil {
		target = net.JoinHostPort(target, "9042")
	}
	proxy := testkit.NewProxy(t, target)
	conn := db.Conn
	conn.Hosts = []string{proxy.Addr()}
	conn.AddressTranslator = proxy.Translator()
	s, err := repository.Connect(context.Background(), conn, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	api := newTestAPI(t, &testkit.DB{Session: s, Conn: conn})
	if r := api.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("before the kill: %d %s", r.StatusCode, r.Body)
	}

	for _, fault := range []struct {
		name  string
		apply func()
	}{{"kill", proxy.Kill}, {"hang", proxy.Hang}} {
		fault.apply()
		at := time.Now()
		waitReadyz(t, api, http.StatusServiceUnavailable, "database_unavailable", 10*time.Second)
		t.Logf("%s: /readyz answered 503 %.1fs after it", fault.name, time.Since(at).Seconds())

		proxy.Heal()
		healed := time.Now()
		waitReadyz(t, api, http.StatusOK, "", 30*time.Second)
		t.Logf("%s: /readyz answered 200 %.1fs after the node was back", fault.name, time.Since(healed).Seconds())
	}
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
