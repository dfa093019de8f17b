package localcassandra

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"
)

// CQLPort is the native protocol port every node listens on (each node binds
// its own loopback address, so they can share it).
const CQLPort = 9042

// StoragePort is the port the nodes talk to each other on (gossip, writes
// to replicas, Paxos), on their own addresses too.
const StoragePort = 7000

// Node describes one Cassandra process.
type Node struct {
	// Name is the node's folder below the launcher's DataDir.
	Name string
	// Address is the listen and CQL address, e.g. 127.0.0.1.
	Address string
	// Cluster is cluster_name; it must never change for one data folder.
	Cluster string
	// Seeds are the addresses of the seed nodes: every node of a
	// three-node cluster, the first of each data centre (or its relay).
	Seeds []string
	// Token is the node's single initial token.
	Token string
	// Durable makes the node crash-safe: batch commit log, fsync on, system
	// keyspaces logged. Without it the node runs with
	// cassandra.unsafesystem, skip_sync and a periodic commit log, which
	// makes creating keyspaces and writing much quicker but loses recent
	// writes and schema changes when the process is killed: right for the
	// shared test node, wrong for a node that fault tests kill on purpose.
	Durable bool
	// DC and Rack place the node in a data centre (GossipingPropertyFileSnitch
	// and a cassandra-rackdc.properties of its own; Rack "" is rack1). DC ""
	// keeps SimpleSnitch: every node in datacenter1.
	DC, Rack string
	// Broadcast, when set, is the address the other nodes reach this one
	// at: a relay in front of its storage port that a test slows down (the
	// link between data centres). Seeds then name the relays.
	Broadcast string
	// ReadTimeout, when set, is read_request_timeout (Cassandra's default
	// is 5 s). A coordinator learns that a replica stopped answering when
	// its first requests to it expire (its dynamic snitch counts each as a
	// latency of the whole timeout); until then every read it sends there
	// waits the table's speculative_retry before the next replica is asked
	// (docs/design/node-faults.md, "Server side").
	ReadTimeout time.Duration
}

// SingleNode is the development and test node: 127.0.0.1:9042.
func SingleNode() Node {
	return Node{Name: "node", Address: "127.0.0.1", Cluster: "shelf-local",
		Seeds: []string{"127.0.0.1"}, Token: "-9223372036854775808"}
}

// clusterTokens spread three nodes evenly over the Murmur3 ring.
var clusterTokens = []string{"-9223372036854775808", "-3074457345618258603", "3074457345618258602"}

// ClusterNodes describes a three-node cluster on the given addresses, stored
// below DataDir/<name>/.
func ClusterNodes(name string, addresses [3]string) []Node {
	nodes := make([]Node, 3)
	for i, addr := range addresses {
		nodes[i] = Node{
			Name:    filepath.Join(name, "node"+strconv.Itoa(i+1)),
			Address: addr,
			Cluster: "shelf-" + name,
			Seeds:   addresses[:],
			Token:   clusterTokens[i],
			Durable: true,
			// As writes' (write_request_timeout) and the API's attempt
			// (SHELF_CASSANDRA_TIMEOUT): no coordinator waits on a
			// replica longer than the client waits on it.
			ReadTimeout: 2 * time.Second,
		}
	}
	return nodes
}

// DataCentreNodes describes a cluster of len(dcs) data centres called dc1,
// dc2, ..., dcs[i] the addresses of dc<i+1>'s nodes, stored below
// DataDir/<name>/. The first node of each data centre is a seed. Each data
// centre spreads its nodes evenly over the ring, offset by its index (two
// nodes may not share a token). links, when not nil, holds one address per
// node in the same layout: where the other nodes reach it (Node.Broadcast).
// Its nodes keep Cassandra's read timeout: what a shorter one does to a
// SERIAL read across the slowed link between them is not measured.
func DataCentreNodes(name string, dcs, links [][]string) []Node {
	var seeds []string
	for i, addrs := range dcs {
		if links != nil {
			seeds = append(seeds, links[i][0])
		} else {
			seeds = append(seeds, addrs[0])
		}
	}
	var nodes []Node
	for i, addrs := range dcs {
		dc := "dc" + strconv.Itoa(i+1)
		step := ^uint64(0)/uint64(len(addrs)) + 1
		for j, addr := range addrs {
			n := Node{
				Name:    filepath.Join(name, dc+"-node"+strconv.Itoa(j+1)),
				Address: addr,
				Cluster: "shelf-" + name,
				Seeds:   seeds,
				Token:   strconv.FormatInt(int64(uint64(1)<<63+uint64(j)*step+uint64(i)), 10),
				Durable: true,
				DC:      dc,
				Rack:    "rack1",
			}
			if links != nil {
				n.Broadcast = links[i][j]
			}
			nodes = append(nodes, n)
		}
	}
	return nodes
}

func (l *Launcher) nodeDir(n Node) string { return filepath.Join(l.DataDir, n.Name) }
func (l *Launcher) pidFile(n Node) string { return filepath.Join(l.nodeDir(n), "cassandra.pid") }

// LogFile is the node's system.log, for people and for error messages.
func (l *Launcher) LogFile(n Node) string { return filepath.Join(l.nodeDir(n), "logs", "system.log") }

// Start brings the node up and returns once it answers CQL. A node that
// already answers on its address is reused as it is.
func (l *Launcher) Start(ctx context.Context, n Node) error {
	if Answering(ctx, n.Address) {
		l.logf("%s already answers on %s:%d; reusing it", n.Name, n.Address, CQLPort)
		return nil
	}
	java, err := findJava()
	if err != nil {
		return err
	}
	lib, err := l.EnsureLib(ctx)
	if err != nil {
		return err
	}
	dir := l.nodeDir(n)
	for _, sub := range []string{"conf", "logs", "tmp", "data", "triggers"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	unlock, err := lockFile(filepath.Join(dir, "start.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if Answering(ctx, n.Address) { // another process started it while we waited
		l.logf("%s already answers on %s:%d; reusing it", n.Name, n.Address, CQLPort)
		return nil
	}
	if pid, ok := l.runningPID(n); ok {
		l.logf("%s (pid %d) is starting; waiting for it", n.Name, pid)
		return l.waitReady(ctx, n, nil)
	}
	if err := l.writeConfig(n, lib, java); err != nil {
		return err
	}
	return l.spawn(ctx, n, java)
}

// spawn starts the node's JVM from its written configuration, detached,
// and waits until it answers CQL (or dies, or three minutes pass).
func (l *Launcher) spawn(ctx context.Context, n Node, java string) error {
	dir := l.nodeDir(n)
	out, err := os.OpenFile(filepath.Join(dir, "logs", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(java, "@"+filepath.Join(dir, "conf", "jvm.args"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "MALLOC_ARENA_MAX=4")
	// A session of its own: the node outlives the command that started it
	// and does not get the terminal's Ctrl-C.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	started := time.Now()
	l.logf("starting %s on %s:%d (Cassandra %s, heap %s, data in %s)", n.Name, n.Address, CQLPort, l.Version, l.Heap, dir)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", java, err)
	}
	if err := os.WriteFile(l.pidFile(n), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := l.waitReady(ctx, n, exited); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	l.logf("%s is up on %s:%d after %.1fs (log: %s)", n.Name, n.Address, CQLPort, time.Since(started).Seconds(), l.LogFile(n))
	return nil
}

// waitReady polls CQL until the node answers, the process exits (exited
// receives; with exited nil, its pid file names no live Cassandra), or
// three minutes pass.
func (l *Launcher) waitReady(ctx context.Context, n Node, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("cassandra %s exited during start (%v); last lines of its log:\n%s",
				n.Name, err, l.logTail(n, 40))
		case <-ctx.Done():
			return fmt.Errorf("cassandra %s did not answer CQL on %s:%d in time (%v); last lines of its log:\n%s",
				n.Name, n.Address, CQLPort, ctx.Err(), l.logTail(n, 40))
		case <-tick.C:
			if exited == nil {
				if _, ok := l.runningPID(n); !ok {
					return fmt.Errorf("cassandra %s is not running; last lines of its log:\n%s", n.Name, l.logTail(n, 40))
				}
			}
			if Answering(ctx, n.Address) {
				return nil
			}
		}
	}
}

// logTail returns the last lines of the node's logs: system.log, and what the
// JVM printed itself (a JVM that fails to start writes only there).
func (l *Launcher) logTail(n Node, lines int) string {
	var b strings.Builder
	for _, f := range []string{l.LogFile(n), filepath.Join(l.nodeDir(n), "logs", "stdout.log")} {
		data, err := os.ReadFile(f)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		fmt.Fprintf(&b, "==> %s <==\n%s\n", f, tail(string(data), lines))
	}
	if b.Len() == 0 {
		return "(no log written)"
	}
	return b.String()
}

// runningPID reports the pid from the node's pid file if that process is
// alive and, where /proc tells, a Cassandra daemon and not a zombie (a
// recycled pid is not ours). Without /proc any live process counts.
func (l *Launcher) runningPID(n Node) (int, bool) {
	b, err := os.ReadFile(l.pidFile(n))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err == nil {
		if !bytes.Contains(cmdline, []byte("jvm.args")) && !bytes.Contains(cmdline, []byte("CassandraDaemon")) {
			return 0, false
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if fields := strings.Fields(string(stat)); len(fields) > 2 && fields[2] == "Z" {
			return 0, false
		}
		return pid, true
	}
	// No /proc (macOS): signal 0 tells whether the process exists.
	return pid, syscall.Kill(pid, 0) == nil
}

// Stop shuts the node down: SIGTERM (Cassandra drains and flushes), then
// SIGKILL if it is still there after a minute. Stopping a stopped node is not
// an error; something else answering CQL on its address is.
func (l *Launcher) Stop(n Node) error {
	pid, ok := l.runningPID(n)
	if !ok {
		if Answering(context.Background(), n.Address) {
			return fmt.Errorf("something answers on %s:%d but it was not started from %s; stop it yourself",
				n.Address, CQLPort, l.nodeDir(n))
		}
		l.logf("%s is not running", n.Name)
		return nil
	}
	l.logf("stopping %s (pid %d)", n.Name, pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, ok := l.runningPID(n); !ok {
			_ = os.Remove(l.pidFile(n))
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.logf("%s did not stop within a minute; killing it", n.Name)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	_ = os.Remove(l.pidFile(n))
	return nil
}

// Signal sends sig to the node's process: SIGKILL for a crash, SIGSTOP and
// SIGCONT for a hung node. Fault tests use it.
func (l *Launcher) Signal(n Node, sig syscall.Signal) error {
	pid, ok := l.runningPID(n)
	if !ok {
		return fmt.Errorf("%s is not running", n.Name)
	}
	return syscall.Kill(pid, sig)
}

// Running reports whether the node's process is alive.
func (l *Launcher) Running(n Node) bool {
	_, ok := l.runningPID(n)
	return ok
}

// PID is the node's process id while it runs (benchmarks read its
// threads' CPU time from /proc).
func (l *Launcher) PID(n Node) (int, bool) { return l.runningPID(n) }

// Answering reports whether a Cassandra node answers a CQL query on
// address:9042 within a few seconds.
func Answering(ctx context.Context, address string) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(address, strconv.Itoa(CQLPort)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	s, err := nodeSession(address, 3*time.Second)
	if err != nil {
		return false
	}
	defer s.Close()
	var version string
	return s.Query("SELECT release_version FROM system.local").WithContext(ctx).Scan(&version) == nil
}

// nodeSession is a session with the node at address alone, one
// connection, waiting at most timeout to connect and for each answer.
func nodeSession(address string, timeout time.Duration) (*gocql.Session, error) {
	cluster := gocql.NewCluster(address)
	cluster.Port = CQLPort
	cluster.Timeout, cluster.ConnectTimeout = timeout, timeout
	cluster.DisableInitialHostLookup = true
	cluster.NumConns = 1
	cluster.Logger = discardLogger{}
	return cluster.CreateSession()
}

// Setting returns one setting of the node at address as it runs
// (system_views.settings), e.g. read_request_timeout.
func Setting(ctx context.Context, address, name string) (string, error) {
	s, err := nodeSession(address, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var value string
	err = s.Query("SELECT value FROM system_views.settings WHERE name = ?", name).WithContext(ctx).Scan(&value)
	return value, err
}

// PeerCount returns how many peers the node at address sees in
// system.peers_v2.
func PeerCount(ctx context.Context, address string) (int, error) {
	s, err := nodeSession(address, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	iter := s.Query("SELECT peer FROM system.peers_v2").WithContext(ctx).Iter()
	var peer net.IP
	count := 0
	for iter.Scan(&peer) {
		count++
	}
	return count, iter.Close()
}

// discardLogger keeps gocql's connection chatter out of the launcher's output.
type discardLogger struct{}

func (discardLogger) Print(...any)          {}
func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}
