//go:build integration

package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/internal/app"
	"shelf/internal/config"
	"shelf/repository"
	"shelf/schema"
	"shelf/tests/testkit"
)

// TestReadyzSaysWhenSchemaIsBehind serves the app on a migrated keyspace,
// forgets the migrations (readyz: schema_behind), then runs `api migrate`.
func TestReadyzSaysWhenSchemaIsBehind(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, zerolog.Nop(), db.Session, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := testkit.NewAPI(t, a.Router)
	if r := api.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("migrated keyspace not ready: %d %s", r.StatusCode, r.Body)
	}
	ctx := context.Background()
	if err := db.Session.ContextQuery(ctx, "TRUNCATE gocqlx_migrate", nil).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	r := api.Get("/readyz")
	if r.StatusCode != http.StatusServiceUnavailable || r.Problem(t).Code != "schema_behind" {
		t.Fatalf("after forgetting the migrations: %d %s", r.StatusCode, r.Body)
	}
	env := map[string]string{
		"SHELF_CASSANDRA_HOSTS": strings.Join(db.Conn.Hosts, ","),
		"SHELF_KEYSPACE":        db.Keyspace(),
		"SHELF_LOG_LEVEL":       "warn",
	}
	if err := app.Run(ctx, []string{"migrate"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if r := api.Get("/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("after migrating again: %d %s", r.StatusCode, r.Body)
	}
}

func TestMigrateCreatesKeyspaceAndIsIdempotent(t *testing.T) {
	t.Parallel()
	hosts := testkit.Hosts(t)
	keyspace := fmt.Sprintf("test_migrate_%d", time.Now().UnixNano())
	env := map[string]string{
		"SHELF_CASSANDRA_HOSTS": strings.Join(hosts, ","),
		"SHELF_KEYSPACE":        keyspace,
		"SHELF_LOG_LEVEL":       "warn",
	}
	getenv := func(k string) string { return env[k] }
	session := testkit.Connect(t, hosts, keyspace) // dropped when the test ends
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := app.Run(ctx, []string{"migrate"}, getenv, io.Discard); err != nil {
			t.Fatalf("migrate run %d: %v", i+1, err)
		}
	}
	var applied []struct {
		Name string
		Done int
	}
	if err := session.ContextQuery(ctx, "SELECT name, done FROM "+keyspace+".gocqlx_migrate", nil).SelectRelease(&applied); err != nil {
		t.Fatal(err)
	}
	files, err := fs.Glob(schema.FS, "*.cql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	if len(applied) != len(files) {
		t.Fatalf("ledger has %v, schema has %v", applied, files)
	}
	for _, a := range applied {
		if a.Done < 1 {
			t.Errorf("migration %s recorded %d statements", a.Name, a.Done)
		}
	}
	var replication map[string]string
	if err := session.ContextQuery(ctx, "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", nil).
		Bind(keyspace).GetRelease(&replication); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(replication["class"], "SimpleStrategy") || replication["replication_factor"] != "1" {
		t.Fatalf("keyspace replication %v, want SimpleStrategy RF 1", replication)
	}
}

func TestBadConfigurationStopsStartup(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SHELF_HTTP_READ_TIMEOUT": "soon", "SHELF_LOG_FORMAT": "xml"}
	err := app.Run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SHELF_HTTP_READ_TIMEOUT") || !strings.Contains(err.Error(), "SHELF_LOG_FORMAT") {
		t.Fatalf("error %v does not name both bad variables", err)
	}
}

// TestServeRefusesTheLogMailerInProduction (docs/design/tokens.md): a server
// whose links lead elsewhere does not start with mail going to its log;
// it says which setting to change before connecting to anything.
func TestServeRefusesTheLogMailerInProduction(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SHELF_PUBLIC_URL": "https://shelf.example.org", "SHELF_CASSANDRA_HOSTS": "192.0.2.1"}
	err := app.Run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SHELF_MAILER") || !strings.Contains(err.Error(), "SHELF_ALLOW_LOG_MAILER") {
		t.Fatalf("serve with the log mailer and a public URL: %v", err)
	}
}

// TestServeChecksTheKeyspacesDataCentres (docs/design/regions.md): serve
// reads the keyspace's replication from the cluster after connecting and
// refuses a local data centre holding none of its replicas, naming the
// setting and the keyspace's data centres. The node has one data centre,
// and Cassandra refuses a keyspace naming one it does not know, so the
// refusals that need two (LOCAL_SERIAL, no SHELF_LOCAL_DC) are the
// decision's own test (internal/config, TestTheSerialScopeIsCheckedAgainstTheKeyspace).
func TestServeChecksTheKeyspacesDataCentres(t *testing.T) {
	t.Parallel()
	hosts := testkit.Hosts(t)
	keyspace := fmt.Sprintf("test_regions_%d", time.Now().UnixNano())
	session := testkit.Connect(t, hosts, keyspace) // dropped when the test ends
	ctx := context.Background()
	var dc string
	if err := session.ContextQuery(ctx, "SELECT data_center FROM system.local", nil).GetRelease(&dc); err != nil {
		t.Fatal(err)
	}
	// A bare keyspace: the check comes before anything reads a table. A
	// node busy with the other packages' schema changes may answer a
	// CREATE after the client's timeout (seen in CI): EnsureKeyspace sends
	// it again, harmless with IF NOT EXISTS.
	replication := fmt.Sprintf("{'class': 'NetworkTopologyStrategy', '%s': 1}", dc)
	if err := repository.EnsureKeyspace(ctx, testkit.ConnConfig(hosts, keyspace), replication, time.Minute); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"SHELF_CASSANDRA_HOSTS":    strings.Join(hosts, ","),
		"SHELF_KEYSPACE":           keyspace,
		"SHELF_MIGRATE_ON_START":   "false",
		"SHELF_LOG_LEVEL":          "warn",
		"SHELF_LOCAL_DC":           "elsewhere",
		"SHELF_SERIAL_CONSISTENCY": "LOCAL_SERIAL",
	}
	err := app.Run(ctx, []string{"serve"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil {
		t.Fatal("serve started with SHELF_LOCAL_DC naming a data centre without replicas")
	}
	for _, want := range []string{"SHELF_LOCAL_DC=elsewhere", keyspace, "data centres: " + dc} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
}
