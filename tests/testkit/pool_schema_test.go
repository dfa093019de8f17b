package testkit

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"shelf/schema"
)

// TestPoolSeedsAreTheMigrationsRows: the rows a pool keyspace is given
// again after its truncation are the schema files' INSERTs, comments
// stripped, and nothing else.
func TestPoolSeedsAreTheMigrationsRows(t *testing.T) {
	_, seeds, err := schemaFingerprint(schema.FS)
	if err != nil {
		t.Fatal(err)
	}
	var queues []string
	for _, s := range seeds {
		if !strings.HasPrefix(s, "INSERT INTO queue_progress") || strings.Contains(s, "--") {
			t.Fatalf("seed %q: want an INSERT into queue_progress without comments", s)
		}
		queues = append(queues, strings.Split(s, "'")[1])
	}
	if want := []string{"content_marks", "account_deletions", "group_closings", "moderation_attempts", "job_queue",
		"account_deletion_attempts_by_start", "group_closing_attempts_by_start", "moderation_attempts_by_start",
		"job_queue_by_start", "group_change_attempts_by_start",
		"account_deletion_attempts_until", "group_closing_attempts_until", "moderation_attempts_until", "job_queue_until",
		"group_change_attempts_until"}; !slices.Equal(queues, want) {
		t.Fatalf("seeded queues %v, want %v", queues, want)
	}
}

// TestPoolFingerprintFollowsTheSchema: another schema file, or one file
// changed, names other pool keyspaces; the same files the same ones.
func TestPoolFingerprintFollowsTheSchema(t *testing.T) {
	files := func(extra map[string]string) fstest.MapFS {
		fs := fstest.MapFS{
			"001_a.cql": {Data: []byte("CREATE TABLE IF NOT EXISTS a (k int PRIMARY KEY);\n-- seeded\nINSERT INTO a (k) VALUES (1);")},
		}
		for name, body := range extra {
			fs[name] = &fstest.MapFile{Data: []byte(body)}
		}
		return fs
	}
	fp := func(fs fstest.MapFS) string {
		t.Helper()
		f, _, err := schemaFingerprint(fs)
		if err != nil {
			t.Fatal(err)
		}
		if !poolName.MatchString("test_pool_"+f+"_0") || !poolName.MatchString("test_pool_"+f+"_t_0") {
			t.Fatalf("fingerprint %q does not make a pool keyspace's name", f)
		}
		return f
	}
	base := fp(files(nil))
	if fp(files(nil)) != base {
		t.Fatal("the same files fingerprint differently")
	}
	if fp(files(map[string]string{"002_b.cql": "CREATE TABLE IF NOT EXISTS b (k int PRIMARY KEY);"})) == base {
		t.Fatal("a schema file added keeps the fingerprint")
	}
	if fp(files(map[string]string{"001_a.cql": "CREATE TABLE IF NOT EXISTS a (k text PRIMARY KEY);"})) == base {
		t.Fatal("a schema file changed keeps the fingerprint")
	}
	_, seeds, _ := schemaFingerprint(files(nil))
	if !slices.Equal(seeds, []string{"INSERT INTO a (k) VALUES (1)"}) {
		t.Fatalf("seeds %q", seeds)
	}
}
