package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/bench/lean"
	"shelf/internal/localcassandra"
	"shelf/internal/password"
	"shelf/internal/testkit"
)

// process is a server the benchmarks start: the real `api serve` or the
// lean baseline, each in a process of its own so its memory is its own.
type process struct {
	cmd  *exec.Cmd
	base string   // http://127.0.0.1:port
	bin  string   // the binary, for `api admin` commands
	env  []string // its environment
}

// benchEnv is both servers' settings: cheap hashing and no rate limit (the
// benchmarks measure the database path; the hash is measured apart), and
// fan-outs that answer when done, so a request's time is its fan-out's.
func benchEnv(hosts []string, keyspace string) []string {
	return append(os.Environ(),
		"SHELF_HTTP_ADDR=127.0.0.1:0",
		"LEAN_ADDR=127.0.0.1:0",
		"SHELF_CASSANDRA_HOSTS="+strings.Join(hosts, ","),
		"SHELF_KEYSPACE="+keyspace,
		"SHELF_LOG_FORMAT=json",
		"SHELF_ARGON2_MEMORY_KIB=64",
		"SHELF_ARGON2_TIME=1",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
		"SHELF_FANOUT_SYNC_LIMIT=20000",
	)
}

// cheapHash is the hashing benchEnv sets, for the raw side.
var cheapHash = password.Params{MemoryKiB: 64, Time: 1, Threads: 1}

// build compiles pkg into dir.
func build(dir, pkg string) (string, error) {
	root, err := localcassandra.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// start runs bin with env and waits until addrOf finds the listen address
// in a line of its standard output; the rest of the output is read and
// dropped (the api's access log). stop ends it.
func start(bin string, args, env []string, addrOf func(line []byte) string) (p *process, stop func(), err error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if a := addrOf(sc.Bytes()); a != "" {
				addr <- a
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addr:
		return &process{cmd: cmd, base: "http://" + a, bin: bin, env: env}, stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return nil, nil, fmt.Errorf("%s did not start serving within two minutes", bin)
	}
}

// apiAddr finds the api's "shelf is serving" line.
func apiAddr(line []byte) string {
	var l struct {
		Message string `json:"message"`
		Addr    string `json:"addr"`
	}
	if json.Unmarshal(line, &l) == nil && l.Message == "shelf is serving" {
		return l.Addr
	}
	return ""
}

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
	env := benchEnv(db.Conn.Hosts, db.Keyspace())
	h := &harness{db: db, raw: &lean.Store{S: db.Session.Session, Hasher: password.New(cheapHash, 0)}}
	apiBin, err := build(tempDir, "./cmd/api")
	if err != nil {
		return nil, err
	}
	leanBin, err := build(tempDir, "./bench/lean/leanserver")
	if err != nil {
		return nil, err
	}
	var stop func()
	if h.api, stop, err = start(apiBin, []string{"serve"}, env, apiAddr); err != nil {
		return nil, err
	}
	stops = append(stops, stop)
	if h.lean, stop, err = start(leanBin, nil, env, leanAddr); err != nil {
		return nil, err
	}
	stops = append(stops, stop)
	if h.api == nil || h.lean == nil {
		return nil, errors.New("a server did not start")
	}
	return h, nil
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
