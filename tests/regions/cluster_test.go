//go:build regions

package regions

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/internal/localcassandra"
	"shelf/internal/testkit"
)

// The cluster's addresses (other tests use .7, .11-13, .21-23, .31-33,
// .41-43, .51-53; make cluster-up DCS=2 .61-72): one node a data centre,
// and the address each is reached at by the other (its link).
var (
	nodeAddrs = [][]string{{"127.0.0.101"}, {"127.0.0.102"}}
	linkAddrs = [][]string{{"127.0.0.111"}, {"127.0.0.112"}}
)

// keyspace is the test's keyspace on its own cluster, one replica in each
// data centre.
const (
	keyspace    = "regions"
	replication = "NetworkTopologyStrategy:dc1=1,dc2=1"
)

// cluster is two data centres of one node each, the link between them
// relayed through testkit.Link so the test can slow it down.
type cluster struct {
	l     *localcassandra.Launcher
	nodes []localcassandra.Node // nodes[i] is dc<i+1>'s
	links []*testkit.Link       // links[i] carries what the other sends to nodes[i]
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	l, err := testkit.Launcher()
	if err != nil {
		t.Fatal(err)
	}
	l.DataDir = t.TempDir()
	l.Heap = "768M"
	c := &cluster{l: l, nodes: localcassandra.DataCentreNodes("regions", nodeAddrs, linkAddrs)}
	for _, n := range c.nodes {
		port := strconv.Itoa(localcassandra.StoragePort)
		link, err := testkit.NewLink(net.JoinHostPort(n.Broadcast, port), net.JoinHostPort(n.Address, port))
		if err != nil {
			t.Fatal(err)
		}
		c.links = append(c.links, link)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			_ = l.Signal(n, syscall.SIGCONT)
			_ = l.Stop(n)
		}
		for _, link := range c.links {
			_ = link.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	if err := l.StartCluster(ctx, c.nodes); err != nil {
		for _, n := range c.nodes {
			t.Logf("log of %s: %s", n.Name, l.LogFile(n))
		}
		t.Fatal(err)
	}
	t.Logf("two data centres up after %.0fs", time.Since(started).Seconds())
	// Each node must say it is in its own data centre: the snitch read
	// its cassandra-rackdc.properties, and gossip told the other.
	for i, n := range c.nodes {
		if dcs, err := dataCentres(ctx, n.Address); err != nil || dcs[n.Address] != n.DC || len(dcs) != 2 {
			t.Fatalf("node %d (%s) sees data centres %v (%v), want itself in %s and two in all", i, n.Address, dcs, err, n.DC)
		}
	}
	return c
}

// dataCentres asks the node at address which data centre each node is in
// (by CQL address: system.local and system.peers_v2).
func dataCentres(ctx context.Context, address string) (map[string]string, error) {
	s, err := session(address, gocql.One)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	out := map[string]string{}
	var dc string
	if err := s.Query("SELECT data_center FROM system.local").WithContext(ctx).Scan(&dc); err != nil {
		return nil, err
	}
	out[address] = dc
	iter := s.Query("SELECT native_address, data_center FROM system.peers_v2").WithContext(ctx).Iter()
	var peer net.IP
	for iter.Scan(&peer, &dc) {
		out[peer.String()] = dc
	}
	return out, iter.Close()
}

// session connects to the node at address alone.
func session(address string, cons gocql.Consistency) (*gocql.Session, error) {
	cl := gocql.NewCluster(address)
	cl.DisableInitialHostLookup = true
	cl.Timeout, cl.ConnectTimeout = 3*time.Second, 3*time.Second
	cl.Consistency = cons
	return cl.CreateSession()
}

// heal resumes every node and takes the delay off the link.
func (c *cluster) heal() {
	for _, n := range c.nodes {
		_ = c.l.Signal(n, syscall.SIGCONT)
	}
	for _, link := range c.links {
		link.SetDelay(0)
	}
}

// whole waits until every node, as the only coordinator, reads at ALL (it
// sees the other data centre's replica up), for up to a minute.
func (c *cluster) whole(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := c.readAllThroughEach(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the data centres do not see each other after a minute: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *cluster) readAllThroughEach(ctx context.Context) error {
	for _, n := range c.nodes {
		s, err := session(n.Address, gocql.All)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Address, err)
		}
		var id string
		err = s.Query("SELECT id FROM " + keyspace + ".users LIMIT 1").WithContext(ctx).Scan(&id)
		s.Close()
		if err != nil && err != gocql.ErrNotFound {
			return fmt.Errorf("%s: %w", n.Address, err)
		}
	}
	return nil
}

// api is one `api serve` process in a data centre.
type api struct {
	*testkit.Process
	dc   int
	log  string // its log file
	stop func()
}

// apiEnv is the environment of an API process in dc (counting from 0):
// its own data centre's node as the contact point, the serial consistency
// serial. Until the server reads SHELF_LOCAL_DC (issue 28's start-up check
// and DC-aware routing) it sets SERIAL by itself only when told.
func apiEnv(dc int, serial string) []string {
	return append(os.Environ(),
		"SHELF_HTTP_ADDR=127.0.0.1:0",
		"SHELF_LOG_FORMAT=json",
		"SHELF_LOG_LEVEL=info",
		"SHELF_LOG_FLUSH_INTERVAL=0s",
		"SHELF_CASSANDRA_HOSTS="+strings.Join(nodeAddrs[dc], ","),
		"SHELF_LOCAL_DC="+"dc"+strconv.Itoa(dc+1),
		"SHELF_KEYSPACE="+keyspace,
		"SHELF_REPLICATION="+replication,
		"SHELF_CONSISTENCY=LOCAL_QUORUM",
		"SHELF_SERIAL_CONSISTENCY="+serial,
		"SHELF_MAILER=log",
		"SHELF_MAIL_PER_HOUR=0",
		"SHELF_ARGON2_MEMORY_KIB=1024",
		"SHELF_ARGON2_TIME=1",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
		"SHELF_THROTTLE_PER_ADDRESS=1000000",
		"SHELF_THROTTLE_PER_LOGIN=1000000",
		"SHELF_CLAIM_LEASE="+lease.String(),
		"SHELF_SUSPENSION_SWEEP_INTERVAL=2s",
		"SHELF_OUTBOX_INTERVAL=1s",
		"SHELF_OUTBOX_GRACE=3s",
	)
}

// startAPIs migrates the keyspace (from dc1), then starts one API process
// in each data centre, their logs in dir.
func startAPIs(t *testing.T, bin, dir, serial string) []*api {
	t.Helper()
	migrate := exec.Command(bin, "migrate")
	migrate.Env = apiEnv(0, serial)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	var apis []*api
	for dc := range nodeAddrs {
		path := filepath.Join(dir, fmt.Sprintf("api-dc%d.log", dc+1))
		logf, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		p, stop, err := testkit.StartLogging(bin, []string{"serve"}, apiEnv(dc, serial), testkit.APIAddr, logf)
		if err != nil {
			t.Fatal(err)
		}
		a := &api{Process: p, dc: dc, log: path, stop: stop}
		t.Cleanup(func() { a.stop(); logf.Close() })
		apis = append(apis, a)
	}
	return apis
}
