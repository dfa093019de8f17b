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
// the nemesis and the seeds, degraded and capacity benchmarks, two data
// centres for the regions test), each on its own loopback address.
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

// Settled waits until every node, as the only coordinator, answers a
// read at ALL (so it sees every replica up, as Whole asks) within within,
// holds no hints for another (system_views.pending_hints), and does both
// rounds times in a row a second apart. A node restarted a moment ago
// answers, but slowly: its JIT is cold and the others replay to it the
// hints they kept while it was down. A fault then leaves a quorum that
// needs that slow node, which is two nodes' worth of fault: a
// compare-and-set coordinated beside a node just restarted can time out
// ("received only 1 responses") when another node is killed. It
// returns the slowest answer of the last round, or an error with the last
// round's findings when ctx ends or wait has passed.
func Settled(ctx context.Context, addresses []string, table string, within time.Duration, rounds int, wait time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for fast := 0; ; {
		var slowest time.Duration
		hints := 0
		err := throughEach(ctx, addresses, func(s *gocql.Session) error {
			start := time.Now()
			err := readOne(ctx, s, table)
			slowest = max(slowest, time.Since(start))
			if err != nil {
				return err
			}
			files, err := hintFiles(ctx, s)
			hints += files
			return err
		})
		switch {
		case err == nil && hints > 0:
			err = fmt.Errorf("%d hint files still to replay", hints)
			fast = 0
		case err != nil || slowest > within:
			fast = 0
		default:
			fast++
			if fast >= rounds {
				return slowest, nil
			}
		}
		select {
		case <-ctx.Done():
			return slowest, fmt.Errorf("the cluster did not settle (every node answering a read at ALL within %v with no hints to replay, %d times in a row) in %v: the last round's slowest answer took %v (%v)", within, rounds, wait, slowest, err)
		case <-time.After(time.Second):
		}
	}
}

func readAllThroughEach(ctx context.Context, addresses []string, table string) error {
	return throughEach(ctx, addresses, func(s *gocql.Session) error { return readOne(ctx, s, table) })
}

// readOne reads a row of table (its text column id); none is fine.
func readOne(ctx context.Context, s *gocql.Session, table string) error {
	var id string
	err := s.Query("SELECT id FROM " + table + " LIMIT 1").WithContext(ctx).Scan(&id)
	if err == gocql.ErrNotFound {
		return nil
	}
	return err
}

// hintFiles is how many hint files the node s talks to still holds for
// other nodes (system_views.pending_hints: each node's own).
func hintFiles(ctx context.Context, s *gocql.Session) (int, error) {
	it := s.Query("SELECT files FROM system_views.pending_hints").WithContext(ctx).Consistency(gocql.One).Iter()
	total, files := 0, 0
	for it.Scan(&files) {
		total += files
	}
	return total, it.Close()
}

// throughEach runs f on a session whose only coordinator is each node in
// turn, at consistency ALL.
func throughEach(ctx context.Context, addresses []string, f func(*gocql.Session) error) error {
	for _, addr := range addresses {
		cl := gocql.NewCluster(addr)
		cl.DisableInitialHostLookup = true
		cl.Timeout, cl.ConnectTimeout = 2*time.Second, 2*time.Second
		cl.Consistency = gocql.All
		s, err := cl.CreateSession()
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		err = f(s)
		s.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	return nil
}
