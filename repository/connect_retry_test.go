package repository

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestConnectTriesAgainWithAFreshPolicy: a node that does not answer yet
// (here, no node at all) makes Connect, EnsureKeyspace and DropKeyspace
// try again until their wait has passed. Each attempt must build its own
// policies: gocql panics when a second session is given the token-aware
// policy of the first ("sharing token aware host selection policy between
// sessions is not supported"), so an api started beside a busy node
// would die of it on its second attempt.
func TestConnectTriesAgainWithAFreshPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ConnConfig{Hosts: []string{"127.0.0.1:1"}, Keyspace: "nowhere", Consistency: "LOCAL_QUORUM",
		Timeout: 200 * time.Millisecond, ConnectTimeout: 200 * time.Millisecond, ReconnectInterval: time.Second}
	for _, localDC := range []string{"", "dc1"} {
		c.LocalDC = localDC
		start := time.Now()
		_, err := Connect(ctx, c, 1100*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "connect to") {
			t.Fatalf("Connect with no node (local DC %q): %v", localDC, err)
		}
		if time.Since(start) < time.Second {
			t.Fatalf("Connect gave up after %v, before a second attempt", time.Since(start))
		}
		if err := EnsureKeyspace(ctx, c, "{'class': 'SimpleStrategy', 'replication_factor': 1}", 1100*time.Millisecond); err == nil {
			t.Fatal("EnsureKeyspace with no node: no error")
		}
	}
}
