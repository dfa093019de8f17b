package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf"
	"shelf/internal/config"
	"shelf/internal/testkit"
	"shelf/schema"
)

// newTestAPI serves the production router on db, with test settings.
func newTestAPI(t *testing.T, db *testkit.DB) *testkit.API {
	t.Helper()
	_, api := newTestApp(t, db, nil)
	return api
}

// testEnv is the configuration of tests: cheap password hashing and no
// rate limit (the races send many signups from one address). Tests that
// need more override it.
var testEnv = map[string]string{
	"SHELF_ARGON2_MEMORY_KIB":     "1024",
	"SHELF_ARGON2_TIME":           "1",
	"SHELF_RATE_LIMIT_PER_MINUTE": "0",
}

// newTestApp wires the whole service on db with testEnv plus env, and
// serves it.
func newTestApp(t *testing.T, db *testkit.DB, env map[string]string) (*app, *testkit.API) {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return testEnv[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, zerolog.Nop(), db.Session)
	if err != nil {
		t.Fatal(err)
	}
	return a, testkit.NewAPI(t, a.router)
}

func TestProbesAndContract(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))

	if r := api.Get("/healthz"); r.StatusCode != http.StatusOK || !strings.Contains(string(r.Body), `"ok"`) {
		t.Fatalf("/healthz: %d %s", r.StatusCode, r.Body)
	}
	if r := api.Get("/readyz"); r.StatusCode != http.StatusOK || !strings.Contains(string(r.Body), `"ready"`) {
		t.Fatalf("/readyz: %d %s", r.StatusCode, r.Body)
	}
	r := api.Get("/openapi.yaml")
	if r.StatusCode != http.StatusOK || !bytes.Equal(r.Body, shelf.OpenAPI) {
		t.Fatalf("/openapi.yaml: %d, %d bytes", r.StatusCode, len(r.Body))
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id on a success")
	}
}

func TestUnknownRoutesAndMethodsAreProblems(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	if r := api.Get("/v1/nothing-here"); r.StatusCode != http.StatusNotFound || r.Problem(t).Code != "not_found" {
		t.Fatalf("unknown path: %d %s", r.StatusCode, r.Body)
	}
	r := api.Do(http.MethodPost, "/healthz", "application/json", []byte(`{}`))
	if r.StatusCode != http.StatusMethodNotAllowed || r.Problem(t).Code != "method_not_allowed" || r.Header.Get("Allow") == "" {
		t.Fatalf("wrong method: %d %s allow=%q", r.StatusCode, r.Body, r.Header.Get("Allow"))
	}
	big := bytes.Repeat([]byte("a"), 2<<20)
	if r := api.Do(http.MethodPost, "/healthz", "application/json", big); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB body: %d %s", r.StatusCode, r.Body)
	}
}

func TestReadyzSaysWhenSchemaIsBehind(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	api := newTestAPI(t, db)
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
	if err := run(ctx, []string{"migrate"}, func(k string) string { return env[k] }); err != nil {
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
		if err := run(ctx, []string{"migrate"}, getenv); err != nil {
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
	err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "SHELF_HTTP_READ_TIMEOUT") || !strings.Contains(err.Error(), "SHELF_LOG_FORMAT") {
		t.Fatalf("error %v does not name both bad variables", err)
	}
}
