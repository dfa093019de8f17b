//go:build nemesis

package nemesis

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// addresses are the cluster's nodes (other tests use .7, .11-13, .21-23).
var addresses = [3]string{"127.0.0.31", "127.0.0.32", "127.0.0.33"}

// cluster is three Cassandra nodes of the test's own.
type cluster struct{ *testkit.Cluster }

func startCluster(t *testing.T) *cluster {
	return &cluster{testkit.StartCluster(t, "nemesis", addresses, nil)}
}

// heal resumes hung nodes and restarts dead ones.
func (c *cluster) heal(ctx context.Context) error {
	for _, n := range c.Nodes {
		_ = c.L.Signal(n, syscall.SIGCONT)
		if !c.L.Running(n) {
			if err := c.L.Start(ctx, n); err != nil {
				return fmt.Errorf("restart %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

// settled waits until every node, as a coordinator, sees every replica up
// (testkit.Whole: a node killed or hung before would be a second node
// down) and answers a read at ALL within settledWithin three times in a
// row (testkit.Settled: a node restarted a moment ago is up but slow, and
// a fault then is two nodes' worth). It gives up after settleWait.
func (c *cluster) settled(ctx context.Context) (time.Duration, error) {
	return testkit.Settled(ctx, c.Hosts(), "nemesis.users", settledWithin, 3, settleWait)
}

// settledWithin is how quickly every node must answer the settling read;
// settleWait how long the nemesis waits for that before it skips a
// single-node fault.
const (
	settledWithin = 300 * time.Millisecond
	settleWait    = 90 * time.Second
)

// apiProc is one `api serve` process on a fixed address, so that a
// restarted process is found where it was.
type apiProc struct {
	idx  int
	addr string // 127.0.0.1:port
	bin  string
	// flags come before the command, in serve and admin alike (a clock
	// ahead: tests/internal/skewed).
	flags []string
	env   []string
	mu    sync.Mutex
	cmd   *exec.Cmd
}

func (p *apiProc) base() string { return "http://" + p.addr }

// buildAPI builds the api into dir: cmd/api, or the deliberately broken
// build of the package pkg (tests/broken) when pkg is not empty.
func buildAPI(t *testing.T, dir, pkg string) string {
	t.Helper()
	if pkg == "" {
		pkg = "./cmd/api"
	}
	bin, err := testkit.Build(dir, pkg, "")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// freeAddr picks a free loopback port.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// apiEnv is the environment of an API process against the cluster.
func apiEnv(addr string) []string {
	env := append(os.Environ(),
		"SHELF_HTTP_ADDR="+addr,
		"SHELF_CASSANDRA_HOSTS="+strings.Join(addresses[:], ","),
		"SHELF_KEYSPACE=nemesis",
		"SHELF_REPLICATION=NetworkTopologyStrategy:datacenter1=3",
		"SHELF_CONSISTENCY=LOCAL_QUORUM",
		"SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL",
	)
	// Mail goes to the log at info: the reset links are read from it
	// (mailbox).
	return append(env, testkit.WorkloadEnv(lease)...)
}

// start runs the process and waits until it is ready.
func (p *apiProc) start(ctx context.Context) error {
	p.mu.Lock()
	cmd := exec.Command(p.bin, slices.Concat(p.flags, []string{"serve"})...)
	cmd.Env = p.env
	logf, err := os.OpenFile(p.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.mu.Unlock()
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return err
	}
	p.cmd = cmd
	p.mu.Unlock()
	go func() { _ = cmd.Wait(); logf.Close() }()
	// The first start migrates the keyspace on three nodes: minutes on a
	// busy two-core machine.
	deadline := time.Now().Add(6 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.base() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("api %d not ready after six minutes", p.idx)
}

// logPath is the process's log, kept across restarts.
func (p *apiProc) logPath() string { return p.bin + fmt.Sprintf(".%d.log", p.idx) }

// kill ends the process at once, as a crash would.
func (p *apiProc) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

// admin runs `api admin args...` with the process's environment.
func (p *apiProc) admin(args ...string) (string, error) {
	cmd := exec.Command(p.bin, slices.Concat(p.flags, []string{"admin"}, args)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
