//go:build regions

package regions

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"

	"shelf/repository"
	"shelf/tests/testkit"
	"shelf/tools/localcassandra"
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
	*testkit.Cluster                 // Nodes[i] is dc<i+1>'s
	links            []*testkit.Link // links[i] carries what the other sends to Nodes[i]
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{}
	nodes := localcassandra.DataCentreNodes("regions", nodeAddrs, linkAddrs)
	for _, n := range nodes {
		port := strconv.Itoa(localcassandra.StoragePort)
		link, err := testkit.NewLink(net.JoinHostPort(n.Broadcast, port), net.JoinHostPort(n.Address, port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = link.Close() })
		c.links = append(c.links, link)
	}
	c.Cluster = testkit.StartNodes(t, nodes, nil)
	// Each node must say it is in its own data centre: the snitch read
	// its cassandra-rackdc.properties, and gossip told the other.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var want []string
	for i, n := range c.Nodes {
		if dcs, err := dataCentres(ctx, n.Address); err != nil || dcs[n.Address] != n.DC || len(dcs) != 2 {
			t.Fatalf("node %d (%s) sees data centres %v (%v), want itself in %s and two in all", i, n.Address, dcs, err, n.DC)
		}
		want = append(want, n.DC)
	}
	// Start-up's read of them (it refuses LOCAL_SERIAL on a SimpleStrategy
	// keyspace spread over several) finds both.
	s, err := gocqlx.WrapSession(session(c.Nodes[0].Address, gocql.One))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	slices.Sort(want)
	if got, err := repository.ClusterDataCentres(ctx, s); err != nil || !slices.Equal(got, want) {
		t.Fatalf("the cluster's data centres as start-up reads them: %v, %v; want %v", got, err, want)
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
	for _, n := range c.Nodes {
		_ = c.L.Signal(n, syscall.SIGCONT)
	}
	for _, link := range c.links {
		link.SetDelay(0)
	}
}

// whole waits until each node sees the other data centre's up
// (testkit.Whole).
func (c *cluster) whole(ctx context.Context) error {
	return testkit.Whole(ctx, c.Hosts(), keyspace+".users")
}

// api is one `api serve` process in a data centre.
type api struct {
	*testkit.Process
	dc   int
	log  string // its log file
	stop func()
}

// apiEnv is the environment of an API process in dc (counting from 0), as
// docs/operations.md's "Running in two regions" sets one: its own data centre's node
// as the contact point and its name as the local data centre, the
// migrations left to `api migrate` (run once, from one region),
// compare-and-sets at serial (said even when it is the default), and the
// cluster tests' workload settings.
func apiEnv(dc int, serial string) []string {
	return append(append(os.Environ(),
		"SHELF_HTTP_ADDR=127.0.0.1:0",
		"SHELF_LOG_FORMAT=json",
		"SHELF_CASSANDRA_HOSTS="+strings.Join(nodeAddrs[dc], ","),
		"SHELF_LOCAL_DC="+"dc"+strconv.Itoa(dc+1),
		"SHELF_KEYSPACE="+keyspace,
		"SHELF_REPLICATION="+replication,
		"SHELF_CONSISTENCY=LOCAL_QUORUM",
		"SHELF_SERIAL_CONSISTENCY="+serial,
		"SHELF_MIGRATE_ON_START=false",
	), testkit.WorkloadEnv(lease)...)
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
