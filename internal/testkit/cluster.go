package testkit

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"shelf/internal/localcassandra"
	"shelf/repository"

	"github.com/scylladb/gocqlx/v2"
)

// Cluster is three Cassandra nodes that a test starts for itself (the
// nemesis, the seeds benchmark), each on its own loopback addresses.
type Cluster struct {
	L     *localcassandra.Launcher
	Nodes []localcassandra.Node
}

// StartCluster starts three nodes called name on addresses, with their
// data in a temporary folder and a 768M heap each, one after the other
// until each sees the others. When the test ends every node is resumed
// (a test may have hung it) and stopped. log, when not nil, gets the
// launcher's progress.
func StartCluster(t testing.TB, name string, addresses [3]string, log io.Writer) *Cluster {
	t.Helper()
	l, err := Launcher()
	if err != nil {
		t.Fatal(err)
	}
	l.DataDir = t.TempDir()
	l.Heap = "768M"
	if log != nil {
		l.Log = log
	}
	c := &Cluster{L: l, Nodes: localcassandra.ClusterNodes(name, addresses)}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			_ = l.Signal(n, syscall.SIGCONT)
			_ = l.Stop(n)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	if err := l.StartCluster(ctx, c.Nodes); err != nil {
		for _, n := range c.Nodes {
			t.Logf("log of %s: %s", n.Name, l.LogFile(n))
		}
		t.Fatal(err)
	}
	t.Logf("three nodes up after %.0fs", time.Since(started).Seconds())
	return c
}

// Connect creates conn's keyspace on the cluster with three replicas (when
// it does not exist), connects with conn and closes the session when the
// test ends.
func (c *Cluster) Connect(t testing.TB, conn repository.ConnConfig) gocqlx.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := repository.EnsureKeyspace(ctx, conn, "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}", time.Minute); err != nil {
		t.Fatal(err)
	}
	s, err := repository.Connect(ctx, conn, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Hosts are the cluster's contact points.
func (c *Cluster) Hosts() []string {
	hosts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		hosts[i] = n.Address
	}
	return hosts
}
