//go:build integration || bench

package bench

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"shelf/internal/password"
	"shelf/tests/bench/lean"
	"shelf/tests/testkit"
)

// process is a server the benchmarks start (testkit.Start): the real
// `api serve` or the lean baseline, each in a process of its own so its
// memory and CPU time are its own.
type process struct{ *testkit.Process }

// benchEnv is both servers' settings: testkit.APIEnv's cheap hashing, no
// rate limit (the benchmarks measure the database path; the hash is
// measured apart), and fan-outs that answer when done, so a request's time
// is its fan-out's.
func benchEnv(db *testkit.DB) []string {
	return testkit.APIEnv(db,
		"LEAN_ADDR=127.0.0.1:0",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
		"SHELF_FANOUT_SYNC_LIMIT=20000",
	)
}

// cheapHash is the hashing benchEnv sets, for the raw side.
var cheapHash = password.Params{MemoryKiB: 64, Time: 1, Threads: 1}

// leanAddr finds the lean server's "serving <addr>" line.
func leanAddr(line []byte) string {
	a, _ := strings.CutPrefix(string(line), "serving ")
	return a
}

// harness is shared by the package's tests: one keyspace, the api and the
// lean server on it, and the lean operations in this process (the raw side).
type harness struct {
	db   *testkit.DB
	api  *process
	lean *process
	raw  *lean.Store
	// cassandra is the local node's process id (0: not on this machine),
	// whose CPU time each side's rounds are charged.
	cassandra int
}

var (
	harnessOnce sync.Once
	shared      *harness
	harnessErr  error
	stops       []func()
	tempDir     string
)

// setup returns the shared harness, starting it on first use.
func setup(t testing.TB) *harness {
	t.Helper()
	db := testkit.PackageDB(t)
	harnessOnce.Do(func() {
		shared, harnessErr = startHarness(db)
	})
	if harnessErr != nil {
		t.Fatal(harnessErr)
	}
	return shared
}

func startHarness(db *testkit.DB) (*harness, error) {
	var err error
	if tempDir, err = os.MkdirTemp("", "shelf-bench-"); err != nil {
		return nil, err
	}
	env := benchEnv(db)
	h := &harness{db: db, raw: &lean.Store{S: db.Session.Session, Hasher: password.New(cheapHash, 0)}}
	apiBin, err := testkit.Build(tempDir, "./cmd/api", "")
	if err != nil {
		return nil, err
	}
	leanBin, err := testkit.Build(tempDir, "./tests/bench/lean/leanserver", "")
	if err != nil {
		return nil, err
	}
	api, stop, err := testkit.Start(apiBin, []string{"serve"}, env, testkit.APIAddr)
	if err != nil {
		return nil, err
	}
	stops = append(stops, stop)
	lean, stop, err := testkit.Start(leanBin, nil, env, leanAddr)
	if err != nil {
		return nil, err
	}
	stops = append(stops, stop)
	h.api, h.lean = &process{api}, &process{lean}
	if host, _, _ := strings.Cut(db.Conn.Hosts[0], ":"); host == "127.0.0.1" || host == "localhost" {
		h.cassandra = listener(cqlPort)
	}
	return h, nil
}

// cqlPort is where the local node answers CQL.
const cqlPort = 9042

// listener finds the process listening on TCP port on this machine (in
// /proc/net/tcp and tcp6, the socket's inode; then the process holding
// it), or 0 when there is none it may see.
func listener(port int) int {
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// local_address (hex ip:port), st (0A: listening), inode
			if len(f) > 9 && f[3] == "0A" && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", port)) {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[target] {
				return pid
			}
		}
	}
	return 0
}

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		for _, stop := range stops {
			stop()
		}
		if tempDir != "" {
			_ = os.RemoveAll(tempDir)
		}
	})
}

// TestListenerFindsTheProcess: a port this process listens on is found to
// be this process's; a port nobody listens on, nobody's.
func TestListenerFindsTheProcess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if pid := listener(port); pid != os.Getpid() {
		t.Errorf("listener(%d) = %d, want this process, %d", port, pid, os.Getpid())
	}
	l.Close()
	if pid := listener(port); pid != 0 {
		t.Errorf("listener(%d) after closing = %d, want 0", port, pid)
	}
}
