package testkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"shelf/tools/localcassandra"
)

// Build compiles the package pkg of the repository (e.g. "./cmd/api")
// into dir, with the given build tags (may be empty), and returns the
// binary's path.
func Build(dir, pkg, tags string) (string, error) {
	root, err := localcassandra.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// Process is a server started from a binary: the real `api serve` or
// the benchmarks' lean baseline, each in a process of its own.
type Process struct {
	Cmd  *exec.Cmd
	Base string   // http://127.0.0.1:port
	Bin  string   // the binary, for `api admin` commands
	Env  []string // its environment
}

// Start runs bin with args and env and waits until addrOf finds the
// listen address in a line of its standard output; the rest of the output
// is read and dropped (the api's access log). stop interrupts it and waits
// for it to end.
func Start(bin string, args, env []string, addrOf func(line []byte) string) (p *Process, stop func(), err error) {
	return StartLogging(bin, args, env, addrOf, io.Discard)
}

// StartLogging is Start with the standard output copied to rest instead
// of dropped, the lines before the address included (what the process
// said while it started).
func StartLogging(bin string, args, env []string, addrOf func(line []byte) string, rest io.Writer) (p *Process, stop func(), err error) {
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
			_, _ = fmt.Fprintf(rest, "%s\n", sc.Bytes())
			if a := addrOf(sc.Bytes()); a != "" {
				addr <- a
				break
			}
		}
		_, _ = io.Copy(rest, stdout)
	}()
	select {
	case a := <-addr:
		return &Process{Cmd: cmd, Base: "http://" + a, Bin: bin, Env: env}, stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return nil, nil, fmt.Errorf("%s did not start serving within two minutes", bin)
	}
}

// APIAddr finds the address in the api's JSON "shelf is serving" line
// (the api must run with SHELF_LOG_FORMAT=json).
func APIAddr(line []byte) string {
	var l struct {
		Message string `json:"message"`
		Addr    string `json:"addr"`
	}
	if json.Unmarshal(line, &l) == nil && l.Message == "shelf is serving" {
		return l.Addr
	}
	return ""
}

// Admin runs `api admin args...` with the process's binary and environment.
func (p *Process) Admin(args ...string) (string, error) {
	cmd := exec.Command(p.Bin, append([]string{"admin"}, args...)...)
	cmd.Env = p.Env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// APIEnv is the environment of an `api serve` process on db's keyspace,
// listening on a free loopback port, logging JSON (APIAddr reads it), with
// cheap hashing (tests measure no hashes); extra settings come last and win.
func APIEnv(db *DB, extra ...string) []string {
	env := append(os.Environ(),
		"SHELF_HTTP_ADDR=127.0.0.1:0",
		"SHELF_CASSANDRA_HOSTS="+strings.Join(db.Conn.Hosts, ","),
		"SHELF_KEYSPACE="+db.Keyspace(),
		"SHELF_LOG_FORMAT=json",
		"SHELF_ARGON2_MEMORY_KIB=64",
		"SHELF_ARGON2_TIME=1",
	)
	return append(env, extra...)
}

// WorkloadEnv are the settings of an `api serve` process under a cluster
// test's workload (the nemesis, two data centres), beside its cluster's:
// mail to the log at info, each line written at once (the nemesis reads
// reset links from it); cheap hashing; no rate limit; claims leased for
// lease (short: the checks run past it); the sweeper, the outbox and its
// grace fast enough that their work is over soon after the run.
func WorkloadEnv(lease time.Duration) []string {
	return []string{
		"SHELF_LOG_LEVEL=info",
		"SHELF_LOG_FLUSH_INTERVAL=0s",
		"SHELF_MAILER=log",
		"SHELF_MAIL_PER_HOUR=0",
		"SHELF_ARGON2_MEMORY_KIB=1024",
		"SHELF_ARGON2_TIME=1",
		"SHELF_RATE_LIMIT_PER_MINUTE=0",
		// Every worker and the checker guess from one address: the
		// throttle counts each password check in Cassandra as in
		// production (its writes and reads meet the faults), with the
		// most it counts, which no account's guesses reach (the checker
		// tries every password an account may have, a few each); the
		// address's tier one below, as the login's must be above it.
		"SHELF_THROTTLE_PER_ADDRESS=511",
		"SHELF_THROTTLE_PER_LOGIN=512",
		"SHELF_CLAIM_LEASE=" + lease.String(),
		"SHELF_SUSPENSION_SWEEP_INTERVAL=2s",
		"SHELF_OUTBOX_INTERVAL=1s",
		"SHELF_OUTBOX_GRACE=3s",
	}
}
