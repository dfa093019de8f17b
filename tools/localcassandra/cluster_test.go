//go:build cluster

package localcassandra_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"shelf/repository"
	"shelf/tests/testkit"
	"shelf/tools/localcassandra"
)

// TestClusterSurvivesOneNodeDown starts a three-node cluster of its own on
// 127.0.0.11-13, writes at RF 3 / QUORUM, kills one node, and checks that
// QUORUM writes, reads and lightweight transactions still succeed while ALL
// fails (so the node really is gone).
func TestClusterSurvivesOneNodeDown(t *testing.T) {
	t.Parallel()
	l, err := testkit.Launcher()
	if err != nil {
		t.Fatal(err)
	}
	l.DataDir = t.TempDir()
	l.Heap = "768M"
	l.Log = testLog{t}
	nodes := localcassandra.ClusterNodes("cluster-test", [3]string{"127.0.0.11", "127.0.0.12", "127.0.0.13"})
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = l.Stop(n)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	started := time.Now()
	if err := l.StartCluster(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("three nodes up and seeing each other after %.1fs", time.Since(started).Seconds())
	for _, n := range nodes {
		if peers, err := localcassandra.PeerCount(ctx, n.Address); err != nil || peers != 2 {
			t.Fatalf("%s sees %d peers (%v), want 2", n.Name, peers, err)
		}
	}

	hosts := []string{nodes[0].Address, nodes[1].Address, nodes[2].Address}
	conn := testkit.ConnConfig(hosts, "rf3")
	conn.Consistency = "QUORUM"
	conn.SerialConsistency = "SERIAL"
	if err := repository.EnsureKeyspace(ctx, conn, "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}", time.Minute); err != nil {
		t.Fatal(err)
	}
	s, err := repository.Connect(ctx, conn, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Each node runs with the read timeout its cassandra.yaml sets.
	for _, n := range nodes {
		if timeout, err := localcassandra.Setting(ctx, n.Address, "read_request_timeout"); err != nil || timeout != "2000ms" {
			t.Fatalf("%s: read_request_timeout %q (%v), want 2000ms", n.Name, timeout, err)
		}
	}
	if err := s.ContextQuery(ctx, "CREATE TABLE IF NOT EXISTS kv (k int PRIMARY KEY, v text)", nil).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	if err := s.AwaitSchemaAgreement(ctx); err != nil {
		t.Fatal(err)
	}
	// The writes and reads say they are idempotent (a plain write of fixed
	// values may be sent again), as the repository's statements do: the
	// session retries only those on the next node, and the first statement
	// after the kill meets a connection the node reset.
	idempotent := func(q *gocqlx.Queryx) *gocqlx.Queryx {
		q.Idempotent(true)
		return q
	}
	write := func(from, to int) {
		t.Helper()
		for k := from; k < to; k++ {
			if err := idempotent(s.ContextQuery(ctx, "INSERT INTO kv (k, v) VALUES (?, ?)", nil)).
				Bind(k, fmt.Sprint("v", k)).ExecRelease(); err != nil {
				t.Fatalf("QUORUM write %d: %v", k, err)
			}
		}
	}
	write(0, 100)

	if err := l.Signal(nodes[2], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	write(100, 200)
	for k := 0; k < 200; k++ {
		var v string
		if err := idempotent(s.ContextQuery(ctx, "SELECT v FROM kv WHERE k = ?", nil)).Bind(k).GetRelease(&v); err != nil || v != fmt.Sprint("v", k) {
			t.Fatalf("QUORUM read %d with a node down: %q, %v", k, v, err)
		}
	}
	var applied bool
	var existingK int
	var existingV string
	applied, err = s.Session.Query("INSERT INTO kv (k, v) VALUES (1000, 'lwt') IF NOT EXISTS").
		WithContext(ctx).ScanCAS(&existingK, &existingV)
	if err != nil || !applied {
		t.Fatalf("LWT with a node down: applied=%v err=%v", applied, err)
	}
	err = s.ContextQuery(ctx, "INSERT INTO kv (k, v) VALUES (1, 'all')", nil).Consistency(gocql.All).ExecRelease()
	if err == nil {
		t.Fatal("a write at ALL succeeded with a node killed; the kill did not take")
	}
	t.Logf("write at ALL with a node down failed as it must: %v", err)
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
