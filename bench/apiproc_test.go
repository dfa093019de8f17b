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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/internal/localcassandra"
	"shelf/internal/testkit"
)

// apiProcess is the real `api serve` binary, run as its own process so its
// memory can be measured apart from the benchmark's.
type apiProcess struct {
	cmd  *exec.Cmd
	base string   // http://127.0.0.1:port
	bin  string   // the binary, for `api admin` commands
	env  []string // its environment
}

// startAPI builds cmd/api into dir and serves it on a random port against
// keyspace. stop ends it.
func startAPI(dir string, hosts []string, keyspace string) (p *apiProcess, stop func(), err error) {
	root, err := localcassandra.RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	bin := filepath.Join(dir, "api")
	build := exec.Command("go", "build", "-o", bin, "./cmd/api")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("build api: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"SHELF_HTTP_ADDR=127.0.0.1:0",
		"SHELF_CASSANDRA_HOSTS="+strings.Join(hosts, ","),
		"SHELF_KEYSPACE="+keyspace,
		"SHELF_LOG_FORMAT=json",
		// Cheap hashing and no rate limit: the benchmarks measure the
		// database path, not argon2 or the limiter.
		"SHELF_ARGON2_MEMORY_KIB=64",
		"SHELF_ARGON2_TIME=1",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
		// Fan-outs answer when done, so a request's time is the fan-out's.
		"SHELF_FANOUT_SYNC_LIMIT=20000",
	)
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
			var line struct {
				Message string `json:"message"`
				Addr    string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "shelf is serving" {
				addr <- line.Addr
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // the access log: read and dropped
	}()
	select {
	case a := <-addr:
		return &apiProcess{cmd: cmd, base: "http://" + a, bin: bin, env: cmd.Env}, stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return nil, nil, errors.New("the api did not start serving within two minutes")
	}
}

// peakRSSMB is the process's peak resident memory (VmHWM) in MB.
func (p *apiProcess) peakRSSMB() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", p.cmd.Process.Pid)
}

// harness is shared by the package's benchmarks: one keyspace, one API
// process (a benchmark function runs several times, with growing b.N).
type harness struct {
	db  *testkit.DB
	api *apiProcess
}

var (
	harnessOnce sync.Once
	shared      *harness
	harnessErr  error
	stopAPI     = func() {}
	tempDir     string
)

// setup returns the shared harness, starting it on first use.
func setup(b *testing.B) *harness {
	b.Helper()
	db := testkit.PackageDB(b)
	harnessOnce.Do(func() {
		tempDir, harnessErr = os.MkdirTemp("", "shelf-bench-")
		if harnessErr != nil {
			return
		}
		var api *apiProcess
		api, stopAPI, harnessErr = startAPI(tempDir, db.Conn.Hosts, db.Keyspace())
		shared = &harness{db: db, api: api}
	})
	if harnessErr != nil {
		b.Fatal(harnessErr)
	}
	return shared
}

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		stopAPI()
		if tempDir != "" {
			_ = os.RemoveAll(tempDir)
		}
	})
}
