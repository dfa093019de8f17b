// Package testkit is the shared harness of shelf's integration and
// end-to-end tests: a real Cassandra node (started from Maven Central
// artifacts when none answers), an empty keyspace per package or per test
// (leased from a pool kept on the node: pool.go), and an HTTP client that
// checks every answer against openapi.yaml.
package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scylladb/gocqlx/v2"

	"shelf/repository"
	"shelf/tools/localcassandra"
)

// HostsEnv overrides where tests find Cassandra (default 127.0.0.1, which
// the harness starts itself when nothing answers there).
const HostsEnv = "SHELF_TEST_CASSANDRA_HOSTS"

var (
	nodeOnce sync.Once
	nodeErr  error
)

// Hosts returns the contact points of the test cluster, making sure it
// answers: on 127.0.0.1 it starts the local node if needed (the launcher's
// file lock lets parallel test packages share one node).
func Hosts(tb testing.TB) []string {
	tb.Helper()
	hosts := []string{"127.0.0.1"}
	if env := os.Getenv(HostsEnv); env != "" {
		hosts = strings.Split(env, ",")
	}
	nodeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if localcassandra.Answering(ctx, strings.Split(hosts[0], ":")[0]) {
			return
		}
		if os.Getenv(HostsEnv) != "" {
			nodeErr = fmt.Errorf("%s=%s does not answer CQL", HostsEnv, os.Getenv(HostsEnv))
			return
		}
		l, err := Launcher()
		if err != nil {
			nodeErr = err
			return
		}
		nodeErr = l.Start(ctx, localcassandra.SingleNode())
	})
	if nodeErr != nil {
		tb.Fatalf("no Cassandra for the tests: %v", nodeErr)
	}
	return hosts
}

// Launcher is the repository's launcher, as `make cassandra-up` configures it.
func Launcher() (*localcassandra.Launcher, error) {
	root, err := localcassandra.RepoRoot()
	if err != nil {
		return nil, err
	}
	return localcassandra.FromEnv(root)
}

// DB is one migrated keyspace of the test cluster.
type DB struct {
	Session gocqlx.Session
	Conn    repository.ConnConfig
}

// Keyspace returns the keyspace's name.
func (db *DB) Keyspace() string { return db.Conn.Keyspace }

// ConnConfig is how tests connect: LOCAL_QUORUM / LOCAL_SERIAL and
// retries of idempotent statements as in production, generous timeouts
// for a busy two-core machine, no speculative copies (a test counts what
// it sends) and no connection closed for its timeouts.
func ConnConfig(hosts []string, keyspace string) repository.ConnConfig {
	return repository.ConnConfig{
		Hosts:             hosts,
		Keyspace:          keyspace,
		Consistency:       "LOCAL_QUORUM",
		SerialConsistency: "LOCAL_SERIAL",
		Timeout:           10 * time.Second,
		ConnectTimeout:    5 * time.Second,
		ReconnectInterval: time.Second,
		Retries:           2,
	}
}

// NewDB gives the test an empty, migrated keyspace (RF 1) of its own until
// it ends: on the local node one of the keyspace pool (pool.go), emptied
// when leased; on SHELF_TEST_CASSANDRA_HOSTS a fresh one, dropped at the
// end. Tests that need an empty database of their own use it; most share
// their package's with PackageDB.
func NewDB(tb testing.TB) *DB {
	tb.Helper()
	hosts := Hosts(tb)
	p, err := poolFor(hosts)
	if err != nil {
		tb.Fatal(err)
	}
	if p == nil {
		return NewDBOn(tb, hosts)
	}
	db, release, err := p.lease()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(release)
	return db
}

// NewDBOn is a fresh keyspace on a cluster of the test's own (a node it
// starts and kills, say), dropped when the test ends.
func NewDBOn(tb testing.TB, hosts []string) *DB {
	tb.Helper()
	db, err := createDB(hosts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.drop() })
	return db
}

// createDB makes and migrates a keyspace of a random name.
func createDB(hosts []string) (*DB, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return createDBNamed(hosts, "test_"+hex.EncodeToString(b[:]))
}

// createDBNamed makes and migrates keyspace ks.
func createDBNamed(hosts []string, ks string) (*DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := ConnConfig(hosts, ks)
	if err := repository.EnsureKeyspace(ctx, conn, "{'class': 'SimpleStrategy', 'replication_factor': 1}", 90*time.Second); err != nil {
		return nil, err
	}
	s, err := repository.Connect(ctx, conn, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, s, ks); err != nil {
		s.Close()
		return nil, err
	}
	return &DB{Session: s, Conn: conn}, nil
}

func (db *DB) drop() {
	db.Session.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = repository.DropKeyspace(ctx, db.Conn)
}

var (
	pkgMu   sync.Mutex
	pkgDB   *DB
	pkgDone func()
)

// PackageDB returns the package's shared keyspace, leased (or made) and
// migrated on first use, as NewDB's. Run the package through Main so it is
// given back (or dropped) at the end.
func PackageDB(tb testing.TB) *DB {
	tb.Helper()
	pkgMu.Lock()
	defer pkgMu.Unlock()
	if pkgDB != nil {
		return pkgDB
	}
	hosts := Hosts(tb)
	p, err := poolFor(hosts)
	if err != nil {
		tb.Fatal(err)
	}
	if p == nil {
		db, err := createDB(hosts)
		if err != nil {
			tb.Fatal(err)
		}
		pkgDB, pkgDone = db, db.drop
		return pkgDB
	}
	db, release, err := p.lease()
	if err != nil {
		tb.Fatal(err)
	}
	pkgDB, pkgDone = db, release
	return pkgDB
}

// Main runs a package's tests and gives its shared keyspace back
// afterwards: call it from TestMain. The cleanups run first.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	pkgMu.Lock()
	if pkgDone != nil {
		pkgDone()
	}
	pkgMu.Unlock()
	os.Exit(code)
}

// Connect opens a session without a keyspace (for a keyspace that a test
// creates itself) and drops that keyspace when the test ends.
func Connect(tb testing.TB, hosts []string, keyspace string) gocqlx.Session {
	tb.Helper()
	conn := ConnConfig(hosts, "system")
	s, err := repository.Connect(context.Background(), conn, 30*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = repository.DropKeyspace(ctx, ConnConfig(hosts, keyspace))
	})
	return s
}

// migrate applies the schema to keyspace ks and waits until its
// storage-attached indexes answer queries. A migration that creates an
// index returns while the node still builds it, and a query through it
// meanwhile fails (INDEX_NOT_AVAILABLE): a search on a keyspace made a
// moment before. The virtual table is read over every keyspace of the
// node, so its read fails while another test's keyspace is made or
// dropped ("Unknown keyspace" of that one): such a failure is read again,
// a few times.
func migrate(ctx context.Context, s gocqlx.Session, ks string) error {
	if err := repository.Migrate(ctx, s); err != nil {
		return err
	}
	failures := 0
	for {
		var building []string
		var name string
		var queryable bool
		iter := s.Session.Query(`SELECT index_name, is_queryable FROM system_views.sai_column_indexes WHERE keyspace_name = ?`, ks).
			WithContext(ctx).Iter()
		for iter.Scan(&name, &queryable) {
			if !queryable {
				building = append(building, name)
			}
		}
		err := iter.Close()
		if err != nil {
			if failures++; failures == 5 {
				return fmt.Errorf("reading the indexes of %s: %w", ks, err)
			}
		} else if len(building) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("indexes %v of %s not queryable yet: %w", building, ks, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
