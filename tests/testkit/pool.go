package testkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/scylladb/gocqlx/v2"

	"shelf/repository"
	"shelf/schema"
)

// The keyspace pool. On the node the harness runs itself, a test's
// keyspace outlives the test: making one (every table of schema/) costs
// the node seconds of CPU and dropping it about as much, and the
// end-to-end package asks for dozens. A test leases a keyspace of the
// pool instead:
//
//   - Lease: an exclusive file lock per keyspace, taken without waiting
//     (a taken one is skipped; the first free one is used, a new one made
//     after the last). The kernel releases it when the process ends, however
//     it ends, so a killed run leaves nothing held.
//   - Clean on lease, not on release: every table but the migration record
//     is truncated (on this node, which keeps no snapshots, a truncate
//     discards a table's data and tombstones without a flush), and the
//     rows the migrations seed are written again: the keyspace reads as
//     one migrated just now, whatever the last holder (or a crash) left.
//   - Fenced on release: the holder's session is closed before its lock
//     goes, so no statement of it lands in the next holder's keyspace.
//   - Without a commit log (durable_writes = false): no test kills the
//     node the pool is on, so a write's copy in the log is never read,
//     and a truncate, with it, flushed the table to disk first (and
//     without it only drops the memtable). Measured from fresh clones,
//     one run each: the node's CPU through make test 323 core-seconds
//     with the log, 285 without (its flush writer's 24 to 5).
//   - Named by the schema: test_pool_<fingerprint of the schema files>_<n>,
//     so a branch with other migrations never shares a keyspace with this
//     one; a pool keyspace of another fingerprint that nobody holds is
//     dropped at the first lease of a process.
//
// The pool makes a node that ran make test ten times no slower: the same
// few keyspaces serve every run, and their statements stay prepared.
// Tests on a cluster of their own (NewDBOn) and on SHELF_TEST_CASSANDRA_HOSTS
// (a cluster other machines may share; a file lock guards only this one)
// get fresh keyspaces, dropped at their end.
type pool struct {
	hosts  []string
	dir    string // the lock files
	prefix string // test_pool_<fingerprint>_
	seeds  []string
	// sweep: the first lease drops other fingerprints' keyspaces nobody
	// holds. Only the node's pool sweeps: a pool with locks of its own (a
	// test's) would find every keyspace free and drop those in use.
	sweep bool
	swept sync.Once

	adminOnce sync.Once
	admin     gocqlx.Session // on keyspace system: which keyspaces exist
	adminErr  error
}

// maxSlots bounds the pool: more keyspaces than this held at once is a
// leak, not a load.
const maxSlots = 64

// migrationTable is where gocqlx's migrate records the files applied: the
// one table a lease keeps.
const migrationTable = "gocqlx_migrate"

var (
	localPoolOnce sync.Once
	localPool     *pool
	localPoolErr  error
)

// poolFor returns the pool of the local node, or nil when the tests run on
// SHELF_TEST_CASSANDRA_HOSTS.
func poolFor(hosts []string) (*pool, error) {
	if os.Getenv(HostsEnv) != "" {
		return nil, nil
	}
	localPoolOnce.Do(func() { localPool, localPoolErr = newPool(hosts) })
	return localPool, localPoolErr
}

func newPool(hosts []string) (*pool, error) {
	p, err := newPoolIn(hosts, poolDir(hosts), "")
	if err != nil {
		return nil, err
	}
	p.sweep = true
	return p, nil
}

// poolDir is where the lock files of the pool on hosts are.
func poolDir(hosts []string) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("shelf-test-pool-%d", os.Getuid()), hosts[0])
}

// newPoolIn is a pool whose locks are in dir, its keyspaces named
// test_pool_<fingerprint><suffix>_<n>; it does not sweep.
func newPoolIn(hosts []string, dir, suffix string) (*pool, error) {
	fp, seeds, err := schemaFingerprint(schema.FS)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &pool{hosts: hosts, dir: dir, prefix: "test_pool_" + fp + suffix + "_", seeds: seeds}, nil
}

// schemaFingerprint hashes the schema files (names and contents, in order)
// and collects their INSERT statements: the rows a migrated keyspace holds.
func schemaFingerprint(f fs.FS) (string, []string, error) {
	names, err := fs.Glob(f, "*.cql")
	if err != nil {
		return "", nil, err
	}
	sort.Strings(names)
	h := sha256.New()
	var seeds []string
	for _, name := range names {
		b, err := fs.ReadFile(f, name)
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(h, "%s\n%d\n", name, len(b))
		h.Write(b)
		for _, stmt := range strings.Split(string(b), ";") {
			if s := withoutComments(stmt); strings.HasPrefix(strings.ToUpper(s), "INSERT ") {
				seeds = append(seeds, s)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:10], seeds, nil
}

// withoutComments drops a statement's "--" lines and surrounding space.
func withoutComments(stmt string) string {
	var lines []string
	for _, line := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			lines = append(lines, line)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// lease takes the first free keyspace of the pool, made or cleaned and
// migrated, and the function that gives it back.
func (p *pool) lease() (*DB, func(), error) {
	if p.sweep {
		p.swept.Do(p.dropOtherFingerprints)
	}
	for n := 0; n < maxSlots; n++ {
		unlock, ok, err := tryLock(filepath.Join(p.dir, fmt.Sprintf("%s%d.lock", p.prefix, n)))
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		db, err := p.ready(p.prefix + fmt.Sprint(n))
		if err != nil {
			unlock()
			return nil, nil, err
		}
		return db, func() { db.Session.Close(); unlock() }, nil
	}
	return nil, nil, fmt.Errorf("testkit: all %d pool keyspaces are held", maxSlots)
}

// ready makes keyspace ks, or cleans the one a last holder left, and
// migrates it.
func (p *pool) ready(ks string) (*DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := p.adminSession(ctx)
	if err != nil {
		return nil, err
	}
	var found []string
	if err := admin.ContextQuery(ctx, `SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, nil).
		Bind(ks).SelectRelease(&found); err != nil {
		return nil, err
	}
	if len(found) == 0 {
		// Not made yet (or dropped since): make it as NewDBOn does, then
		// without a commit log.
		db, err := createDBNamed(p.hosts, ks)
		if err != nil {
			return nil, err
		}
		if err := admin.ContextQuery(ctx, "ALTER KEYSPACE "+ks+" WITH durable_writes = false", nil).ExecRelease(); err != nil {
			db.Session.Close()
			return nil, err
		}
		return db, nil
	}
	conn := ConnConfig(p.hosts, ks)
	s, err := repository.Connect(ctx, conn, 30*time.Second)
	if err != nil {
		return nil, err
	}
	db := &DB{Session: s, Conn: conn}
	if err := migrate(ctx, s, ks); err != nil {
		s.Close()
		return nil, err
	}
	if err := p.clean(ctx, db); err != nil {
		s.Close()
		return nil, err
	}
	return db, nil
}

// clean truncates every table but the migration record and writes the
// migrations' rows again.
func (p *pool) clean(ctx context.Context, db *DB) error {
	var tables []string
	if err := db.Session.ContextQuery(ctx, `SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, nil).
		Bind(db.Keyspace()).SelectRelease(&tables); err != nil {
		return err
	}
	for _, t := range tables {
		if t == migrationTable {
			continue
		}
		if err := truncate(ctx, db, t); err != nil {
			return err
		}
	}
	for _, seed := range p.seeds {
		if err := db.Session.ContextQuery(ctx, seed, nil).ExecRelease(); err != nil {
			return fmt.Errorf("testkit: %s: %w", seed, err)
		}
	}
	return nil
}

// adminSession is the pool's session on keyspace system, opened once and
// kept for the process.
func (p *pool) adminSession(ctx context.Context) (gocqlx.Session, error) {
	p.adminOnce.Do(func() {
		p.admin, p.adminErr = repository.Connect(ctx, ConnConfig(p.hosts, "system"), 30*time.Second)
	})
	return p.admin, p.adminErr
}

// truncate empties table t, trying again after a failure: a truncate that
// meets a schema change elsewhere on the node (another package making its
// keyspace) can fail on the replica ("Unknown CF" in the node's log), and
// truncating again is harmless.
func truncate(ctx context.Context, db *DB, t string) error {
	var err error
	for attempt := range truncateAttempts {
		if err = db.Session.ContextQuery(ctx, "TRUNCATE "+t, nil).ExecRelease(); err == nil {
			return nil
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return fmt.Errorf("testkit: truncate %s.%s (%d attempts): %w", db.Keyspace(), t, truncateAttempts, err)
}

// truncateAttempts bounds truncate's tries.
const truncateAttempts = 5

// poolName matches a pool keyspace's name: its fingerprint and number (the
// pool test's own are test_pool_<fingerprint>_t_<n>).
var poolName = regexp.MustCompile(`^test_pool_([0-9a-f]+)_(t_)?([0-9]+)$`)

// dropOtherFingerprints drops the pool keyspaces of other schema files
// that no process holds (a branch's, or the schema before a migration was
// added). Held ones stay; a failure only leaves them for the next run.
func (p *pool) dropOtherFingerprints() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := p.adminSession(ctx)
	if err != nil {
		return
	}
	var keyspaces []string
	if err := admin.ContextQuery(ctx, `SELECT keyspace_name FROM system_schema.keyspaces`, nil).SelectRelease(&keyspaces); err != nil {
		return
	}
	for _, ks := range keyspaces {
		if !poolName.MatchString(ks) || strings.HasPrefix(ks, p.prefix) {
			continue
		}
		unlock, ok, err := tryLock(filepath.Join(p.dir, ks+".lock"))
		if err != nil || !ok {
			continue
		}
		_ = repository.DropKeyspace(ctx, ConnConfig(p.hosts, ks))
		unlock()
	}
}

// tryLock takes an exclusive advisory lock on path without waiting: ok is
// false when another process (or another lease of this one) holds it.
func tryLock(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
