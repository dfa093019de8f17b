package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/rs/zerolog"

	"shelf"
	"shelf/internal/app"
	"shelf/internal/config"
	"shelf/internal/metrics"
	"shelf/internal/testkit"
	"shelf/repository"
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
func newTestApp(t *testing.T, db *testkit.DB, env map[string]string) (*app.App, *testkit.API) {
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
	a, err := app.New(cfg, zerolog.Nop(), db.Session, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, testkit.NewAPI(t, a.Router)
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

// newObservedApp wires the whole service with testEnv on a session of db's
// keyspace whose statements are reported to observer and batch (either may
// be nil), with metrics m (nil: its own).
func newObservedApp(t *testing.T, db *testkit.DB, observer gocql.QueryObserver, batch gocql.BatchObserver, m *metrics.Metrics) (*app.App, *testkit.API) {
	t.Helper()
	conn := db.Conn
	conn.Observer, conn.BatchObserver = observer, batch
	session, err := repository.Connect(context.Background(), conn, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(session.Close)
	cfg, err := config.Load(func(k string) string { return testEnv[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, zerolog.Nop(), session, m)
	if err != nil {
		t.Fatal(err)
	}
	return a, testkit.NewAPI(t, a.Router)
}
