//go:build integration

package app

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"shelf/internal/config"
	"shelf/repository"
	"shelf/schema"
	"shelf/tests/testkit"
)

// behind makes db's keyspace read as one migration behind this release:
// the record of its last schema file is deleted (its statements, all IF
// NOT EXISTS, stay applied); done reports whether it is recorded again.
func behind(t *testing.T, db *testkit.DB) (done func() bool) {
	t.Helper()
	names, err := fs.Glob(schema.FS, "*.cql")
	if err != nil || len(names) == 0 {
		t.Fatalf("the schema files: %v %v", names, err)
	}
	last := slices.Max(names)
	if err := db.Session.Session.Query(`DELETE FROM gocqlx_migrate WHERE name = ?`, last).Exec(); err != nil {
		t.Fatal(err)
	}
	return func() bool {
		var n int
		if err := db.Session.Session.Query(`SELECT count(*) FROM gocqlx_migrate WHERE name = ?`, last).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}

// configFor is the settings of a process on db's nodes and keyspace.
func configFor(t *testing.T, db *testkit.DB, keyspace string) config.Config {
	t.Helper()
	env := map[string]string{"SHELF_CASSANDRA_HOSTS": strings.Join(db.Conn.Hosts, ","), "SHELF_KEYSPACE": keyspace}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestAdminCommandsNeitherMakeNorMigrateAKeyspace: `api admin` created
// the keyspace it was given and applied every migration to it before the
// command ran. With SHELF_KEYSPACE mistyped, a repair made a keyspace of
// the default replication (one replica, on any cluster), migrated it, and
// reported that nothing was left to repair; and a new release's command
// run before the upgrade migrated the deployment's keyspace. A missing
// keyspace is now refused, naming the setting and `api migrate`, and one
// behind this release is refused, naming `api migrate`, each left as it
// was.
func TestAdminCommandsNeitherMakeNorMigrateAKeyspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.NewDBOn(t, testkit.Hosts(t))
	missing := db.Keyspace() + "_typo"
	err := Admin(ctx, configFor(t, db, missing), zerolog.Nop(), []string{"repair-deletions"}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "SHELF_KEYSPACE") || !strings.Contains(err.Error(), "api migrate") {
		t.Errorf("a command on a keyspace not there: %v, want refused naming SHELF_KEYSPACE and `api migrate`", err)
	}
	conn := db.Conn
	conn.Keyspace = missing
	if exists, err := repository.KeyspaceExists(ctx, conn, 0); err != nil || exists {
		t.Errorf("after the command the keyspace %s exists: %v %v", missing, exists, err)
	}

	recorded := behind(t, db)
	err = Admin(ctx, configFor(t, db, db.Keyspace()), zerolog.Nop(), []string{"repair-deletions"}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "api migrate") {
		t.Errorf("a command on a keyspace behind the release: %v, want refused naming `api migrate`", err)
	}
	if recorded() {
		t.Error("the command migrated the keyspace")
	}
}

// TestARefusedStartMigratesNothing: serve applied pending migrations
// before its start-up check of the regions, so a process that check
// refused (a region's process of a new release started without
// SHELF_LOCAL_DC, say) had migrated the deployment's keyspace before it
// stopped, which the operator took for nothing done. The check comes
// first now, and a refused start leaves the keyspace as it was.
func TestARefusedStartMigratesNothing(t *testing.T) {
	t.Parallel()
	db := testkit.NewDBOn(t, testkit.Hosts(t))
	recorded := behind(t, db)
	refuse := func(config.Cassandra, string, map[string]string, []string, zerolog.Logger) (string, error) {
		return "", errors.New("refused by the test")
	}
	err := Serve(context.Background(), configFor(t, db, db.Keyspace()), zerolog.Nop(), WithSerialRule(refuse))
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("a start the check refuses: %v", err)
	}
	if recorded() {
		t.Error("the refused start migrated the keyspace")
	}
}
