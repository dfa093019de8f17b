//go:build nemesis

package nemesis

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/internal/testkit"
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

// whole waits until every node, as a coordinator, sees every replica up:
// a read at consistency ALL through each node answers (a coordinator
// that thinks a replica is down refuses it at once as unavailable). After
// a fault ends, the nodes' failure detectors take seconds to mark a node
// up again (longer on a loaded machine); a node killed or hung meanwhile
// would be a second node down, not a single-node fault. It gives up at
// ctx's end or after a minute.
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
			return fmt.Errorf("the cluster is not whole after a minute: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readAllThroughEach reads one row of the keyspace at ALL with each node
// as the only coordinator.
func (c *cluster) readAllThroughEach(ctx context.Context) error {
	for _, n := range c.Nodes {
		cl := gocql.NewCluster(n.Address)
		cl.DisableInitialHostLookup = true
		cl.Timeout, cl.ConnectTimeout = 2*time.Second, 2*time.Second
		cl.Consistency = gocql.All
		s, err := cl.CreateSession()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Address, err)
		}
		var id string
		err = s.Query(`SELECT id FROM nemesis.users LIMIT 1`).WithContext(ctx).Scan(&id)
		s.Close()
		if err != nil && err != gocql.ErrNotFound {
			return fmt.Errorf("%s: %w", n.Address, err)
		}
	}
	return nil
}

// apiProc is one `api serve` process on a fixed address, so that a
// restarted process is found where it was.
type apiProc struct {
	idx  int
	addr string // 127.0.0.1:port
	bin  string
	env  []string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func (p *apiProc) base() string { return "http://" + p.addr }

// buildAPI builds cmd/api into dir, with the given build tags.
func buildAPI(t *testing.T, dir, tags string) string {
	t.Helper()
	bin, err := testkit.Build(dir, "./cmd/api", tags)
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
func apiEnv(addr string, extra ...string) []string {
	env := append(os.Environ(),
		"SHELF_HTTP_ADDR="+addr,
		"SHELF_CASSANDRA_HOSTS="+strings.Join(addresses[:], ","),
		"SHELF_KEYSPACE=nemesis",
		"SHELF_REPLICATION=NetworkTopologyStrategy:datacenter1=3",
		"SHELF_CONSISTENCY=LOCAL_QUORUM",
		"SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL",
		// Info, for the mail: the reset links are read from the log
		// (SHELF_MAILER=log, see mailbox), each line written at once.
		"SHELF_LOG_LEVEL=info",
		"SHELF_LOG_FLUSH_INTERVAL=0s",
		"SHELF_MAILER=log",
		"SHELF_MAIL_PER_HOUR=0",
		"SHELF_ARGON2_MEMORY_KIB=1024",
		"SHELF_ARGON2_TIME=1",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
		// Every worker and the checker guess from one address: the
		// throttle counts each password check in Cassandra as in
		// production (its writes and reads meet the faults), with limits
		// no guess reaches (the checker tries every password an account
		// may have).
		"SHELF_THROTTLE_PER_ADDRESS=1000000",
		"SHELF_THROTTLE_PER_LOGIN=1000000",
		"SHELF_CLAIM_LEASE="+lease.String(),
		"SHELF_SUSPENSION_SWEEP_INTERVAL=2s",
		"SHELF_OUTBOX_INTERVAL=1s",
		"SHELF_OUTBOX_GRACE=3s",
	)
	return append(env, extra...)
}

// start runs the process and waits until it is ready.
func (p *apiProc) start(ctx context.Context) error {
	p.mu.Lock()
	cmd := exec.Command(p.bin, "serve")
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
	cmd := exec.Command(p.bin, append([]string{"admin"}, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
