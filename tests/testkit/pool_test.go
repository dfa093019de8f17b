//go:build integration

package testkit

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"shelf/repository"
)

// TestPoolLeasesAreExclusiveCleanAndFenced: two leases held at once get
// two keyspaces; a keyspace given back and leased again holds only the
// migrations' rows (a row the last holder wrote, one it changed and one it
// wrote with a timestamp in 2100 are gone), and the last holder's session
// sends nothing more.
func TestPoolLeasesAreExclusiveCleanAndFenced(t *testing.T) {
	hosts := Hosts(t)
	// A pool of the test's own beside the node's, its locks in the same
	// directory: two runs of this test at once (two checkouts) take turns.
	// Its keyspaces stay for the next run, as the node's pool's do.
	p, err := newPoolIn(hosts, poolDir(hosts), "_t")
	if err != nil {
		t.Fatal(err)
	}
	if p.sweep {
		t.Fatal("a pool with locks of its own sweeps: it would drop keyspaces other processes hold")
	}
	ctx := context.Background()

	a, releaseA, err := p.lease()
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, err := p.lease()
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if a.Keyspace() == b.Keyspace() {
		t.Fatalf("two leases held at once share %s", a.Keyspace())
	}
	seeded := queues(t, a)
	for _, stmt := range []string{
		`INSERT INTO queue_progress (queue, next) VALUES ('leftover', toTimestamp(now()))`,
		`UPDATE queue_progress SET next = '2000-01-01' WHERE queue = 'content_marks'`,
		`INSERT INTO queue_progress (queue, next) VALUES ('future', toTimestamp(now())) USING TIMESTAMP 4102444800000000`,
	} {
		if err := a.Session.ContextQuery(ctx, stmt, nil).ExecRelease(); err != nil {
			t.Fatal(err)
		}
	}
	releaseA()
	if err := a.Session.ContextQuery(ctx, `SELECT queue FROM queue_progress`, nil).ExecRelease(); err == nil {
		t.Fatal("the session of a lease given back still sends")
	}

	leased := time.Now()
	c, releaseC, err := p.lease()
	if err != nil {
		t.Fatal(err)
	}
	defer releaseC()
	if c.Keyspace() != a.Keyspace() {
		t.Fatalf("leased %s after %s was given back, want it again", c.Keyspace(), a.Keyspace())
	}
	if got := queues(t, c); !slices.Equal(got, seeded) {
		t.Fatalf("queues after a lease %v, want the migrations' %v", got, seeded)
	}
	var next time.Time
	if err := c.Session.ContextQuery(ctx, `SELECT next FROM queue_progress WHERE queue = 'content_marks'`, nil).GetRelease(&next); err != nil {
		t.Fatal(err)
	}
	if next.Before(leased.Add(-time.Minute)) {
		t.Fatalf("content_marks starts at %v, before the lease (%v): the last holder's value", next, leased)
	}
}

// TestPoolDropsOtherFingerprintsNobodyHolds: a pool keyspace of other
// schema files goes at a process's first lease, unless another process
// holds it. (The locks are the node's pool's: a package starting beside
// this one sweeps as this test does.)
func TestPoolDropsOtherFingerprintsNobodyHolds(t *testing.T) {
	hosts := Hosts(t)
	dir := poolDir(hosts)
	p, err := newPoolIn(hosts, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stale, held := "test_pool_00000000ff_"+time.Now().Format("150405"), "test_pool_00000000fe_"+time.Now().Format("150405")
	for _, ks := range []string{stale, held} {
		if err := repository.EnsureKeyspace(ctx, ConnConfig(hosts, ks), "{'class': 'SimpleStrategy', 'replication_factor': 1}", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = repository.DropKeyspace(ctx, ConnConfig(hosts, held)) })
	unlock, ok, err := tryLock(filepath.Join(dir, held+".lock"))
	if err != nil || !ok {
		t.Fatalf("lock %s: %v %v", held, ok, err)
	}
	defer unlock()
	p.dropOtherFingerprints()
	admin, err := p.adminSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for ks, want := range map[string]bool{stale: false, held: true} {
		var found []string
		if err := admin.ContextQuery(ctx, `SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?`, nil).
			Bind(ks).SelectRelease(&found); err != nil {
			t.Fatal(err)
		}
		if (len(found) == 1) != want {
			t.Errorf("keyspace %s there: %v, want %v", ks, len(found) == 1, want)
		}
	}
}

// queues lists queue_progress's keys, sorted.
func queues(t *testing.T, db *DB) []string {
	t.Helper()
	var got []string
	if err := db.Session.ContextQuery(context.Background(), `SELECT queue FROM queue_progress`, nil).SelectRelease(&got); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// TestAMadeKeyspaceAnswersThroughItsIndexes: a keyspace made and migrated
// for a test is handed over only once its storage-attached indexes answer
// queries (the user search's index is built after its migration returns).
func TestAMadeKeyspaceAnswersThroughItsIndexes(t *testing.T) {
	hosts := Hosts(t)
	db, err := createDB(hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Session.Close()
		_ = repository.DropKeyspace(context.Background(), db.Conn)
	})
	iter := db.Session.Session.Query(`SELECT index_name, is_queryable FROM system_views.sai_column_indexes WHERE keyspace_name = ?`, db.Conn.Keyspace).Iter()
	var name string
	var queryable bool
	indexes := 0
	for iter.Scan(&name, &queryable) {
		indexes++
		if !queryable {
			t.Errorf("index %s is not queryable yet", name)
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if indexes == 0 {
		t.Fatal("no storage-attached index in the schema: nothing was waited for")
	}
}
