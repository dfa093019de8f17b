package testkit

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"shelf/repository"
	"shelf/tools/localcassandra"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// Cluster is the Cassandra nodes that a test starts for itself (three for
// the nemesis and the seeds benchmark, two data centres for the regions
// test), each on its own loopback address.
type Cluster struct {
	L     *localcassandra.Launcher
	Nodes []localcassandra.Node
}

// StartCluster starts three nodes called name on addresses, with their
// data in a temporary folder and a 768M heap each (StartNodes). log, when
// not nil, gets the launcher's progress.
func StartCluster(t testing.TB, name string, addresses [3]string, log io.Writer) *Cluster {
	t.Helper()
	return StartNodes(t, localcassandra.ClusterNodes(name, addresses), log)
}

// StartNodes starts the nodes (a cluster a test describes itself: several
// data centres), with their data in a temporary folder and a 768M heap
// each, one after the other until each sees the others. When the test ends
// every node is resumed (a test may have hung it) and stopped.
func StartNodes(t testing.TB, nodes []localcassandra.Node, log io.Writer) *Cluster {
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
	c := &Cluster{L: l, Nodes: nodes}
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
	t.Logf("%d nodes up after %.0fs", len(nodes), time.Since(started).Seconds())
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

// Whole waits until every node at addresses, as the only coordinator,
// reads a row of table (its text column id) at consistency ALL: a coordinator that thinks a
// replica is down refuses that at once as unavailable, so every node then
// sees every replica up. After a fault ends the nodes' failure detectors
// take seconds to mark a node up again (longer on a loaded machine). It
// gives up at ctx's end or after a minute.
func Whole(ctx context.Context, addresses []string, table string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := readAllThroughEach(ctx, addresses, table)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster is not whole after a minute: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func readAllThroughEach(ctx context.Context, addresses []string, table string) error {
	for _, addr := range addresses {
		cl := gocql.NewCluster(addr)
		cl.DisableInitialHostLookup = true
		cl.Timeout, cl.ConnectTimeout = 2*time.Second, 2*time.Second
		cl.Consistency = gocql.All
		s, err := cl.CreateSession()
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		var id string
		err = s.Query("SELECT id FROM " + table + " LIMIT 1").WithContext(ctx).Scan(&id)
		s.Close()
		if err != nil && err != gocql.ErrNotFound {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	return nil
}
