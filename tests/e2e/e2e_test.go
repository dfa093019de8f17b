//go:build integration

package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/rs/zerolog"

	"shelf"
	"shelf/internal/app"
	"shelf/internal/config"
	"shelf/internal/metrics"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
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

// newTestApp wires the whole service on db with testEnv plus env and
// opts (a clock ahead: app.ClockOffset), and serves it.
func newTestApp(t *testing.T, db *testkit.DB, env map[string]string, opts ...app.Option) (*app.App, *testkit.API) {
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
	clock := &moderationClock{}
	a, err := app.New(cfg, zerolog.Nop(), db.Session, nil, append([]app.Option{app.ModerationClock(clock.over)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	keepClock(t, a, clock)
	injectors.Store(a.DB, faultinject.Install(a.DB))
	api := testkit.NewAPI(t, a.Router)
	apps.Store(api.Server, a)
	return a, api
}

// accountsWorkInRequest has the accounts service run the work it leaves
// for after an answer (mail, sightings) inside the request: when the
// request answers, a test knows that work was done.
var accountsWorkInRequest = app.AccountsBackground(func(f func()) { f() })

// apps holds the app behind every server newTestApp and newObservedApp
// started, by its server: finishJob runs that app's job worker.
var apps sync.Map

// moderationClock is the clock newTestApp and newObservedApp give an
// app's moderation (app.ModerationClock): the process's until a test moves
// it (set), as tests that spread suspensions over buckets do.
type moderationClock struct {
	mu sync.Mutex
	at func() time.Time
}

// moderationClocks holds each app's moderation clock while its test
// runs, by the app.
var moderationClocks sync.Map

// keepClock keeps a's moderation clock for clockOf until t ends.
func keepClock(t *testing.T, a *app.App, c *moderationClock) {
	moderationClocks.Store(a, c)
	t.Cleanup(func() { moderationClocks.Delete(a) })
}

// clockOf is a's moderation clock.
func clockOf(t *testing.T, a *app.App) *moderationClock {
	t.Helper()
	c, ok := moderationClocks.Load(a)
	if !ok {
		t.Fatal("the app has no moderation clock of the tests'")
	}
	return c.(*moderationClock)
}

// over is the clock, the process's until set moves it.
func (c *moderationClock) over(process func() time.Time) func() time.Time {
	return func() time.Time {
		c.mu.Lock()
		at := c.at
		c.mu.Unlock()
		if at == nil {
			return process()
		}
		return at()
	}
}

// set moves the clock to at (nil: back to the process's).
func (c *moderationClock) set(at func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = at
}

// startWorker runs a's background job worker for the length of the test,
// as Serve does, but a pass every 100 ms (Serve's: SHELF_JOB_INTERVAL,
// 2 s by default), and at once when a request of a's began a job.
func startWorker(t *testing.T, a *app.App) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.WorkJobs(ctx, 100*time.Millisecond, zerolog.Nop())
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// appOf is the app that serves api.
func appOf(api *testkit.API) *app.App {
	a, ok := apps.Load(api.Server)
	if !ok {
		panic("e2e: an API not served by newTestApp or newObservedApp")
	}
	return a.(*app.App)
}

// injectors holds the fault injector of every app newTestApp and
// newObservedApp built, by its DB: each is installed before the app sends
// anything, and only sends until a test gives it faults.
var injectors sync.Map

// faults is the fault injector of a, an app newTestApp or newObservedApp
// built.
func faults(a *app.App) *faultinject.Injector {
	inj, ok := injectors.Load(a.DB)
	if !ok {
		panic("e2e: faults of an app built without newTestApp or newObservedApp")
	}
	return inj.(*faultinject.Injector)
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
	// A body is bounded where it is read: by an operation that takes one.
	if r := api.Do(http.MethodPost, "/v1/users", "application/json", big); r.StatusCode != http.StatusRequestEntityTooLarge || r.Problem(t).Code != "body_too_large" {
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
	clock := &moderationClock{}
	a, err := app.New(cfg, zerolog.Nop(), session, m, app.ModerationClock(clock.over))
	if err != nil {
		t.Fatal(err)
	}
	keepClock(t, a, clock)
	injectors.Store(a.DB, faultinject.Install(a.DB))
	api := testkit.NewAPI(t, a.Router)
	apps.Store(api.Server, a)
	return a, api
}

// TestHeadWorksWhereGetDoes: HEAD answers as GET would, without a body
// (RFC 9110), on probes, the contract and API resources alike; where GET
// works, a 405's Allow lists HEAD beside it.
func TestHeadWorksWhereGetDoes(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	u := mustSignup(t, api, name("head"), name("head")+"@example.org")
	head := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodHead, api.Server.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); len(b) != 0 {
			t.Errorf("HEAD %s: a body of %d bytes", path, len(b))
		}
		return resp
	}
	for path, want := range map[string]int{
		"/healthz":                       http.StatusOK,
		"/readyz":                        http.StatusOK,
		"/openapi.yaml":                  http.StatusOK,
		"/v1/users/" + u.ID:              http.StatusOK,
		"/v1/users/" + u.ID + "/library": http.StatusOK,
		"/v1/users/by-username/nobody-" + name("x"): http.StatusNotFound,
	} {
		get := api.Get(path)
		resp := head(path)
		if resp.StatusCode != want || get.StatusCode != want {
			t.Errorf("HEAD %s: %d, GET %d, want %d", path, resp.StatusCode, get.StatusCode, want)
		}
		if resp.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: Content-Type %q, GET's %q", path, resp.Header.Get("Content-Type"), get.Header.Get("Content-Type"))
		}
	}
	if resp := head("/v1/sessions"); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD on a POST-only path: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	r := api.Do(http.MethodPost, "/healthz", "application/json", []byte(`{}`))
	if allow := r.Header.Get("Allow"); allow != "GET, HEAD" {
		t.Errorf("Allow of a GET path: %q, want GET, HEAD", allow)
	}
}

// TestBodiesThatMeanTwoThingsWriteNothing: two bodies with a key twice, sent
// to the real service: a visibility given twice in two cases does not
// create a public item, and a role given twice does not grant manager;
// both are 400 naming the key, and nothing is written.
func TestBodiesThatMeanTwoThingsWriteNothing(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t, testkit.PackageDB(t))
	owner := name("two")
	u := mustSignup(t, api, owner, owner+"@example.org")
	as := api.As(mustLogin(t, api, owner).Token)
	r := as.Do(http.MethodPost, "/v1/content", "application/json", []byte(`{"name":"x","visibility":"private","Visibility":"public"}`))
	if p := r.Problem(t); r.StatusCode != http.StatusBadRequest || p.Code != "unknown_field" || len(p.Errors) != 1 || p.Errors[0].Field != "Visibility" {
		t.Fatalf("visibility in two cases: %d %s", r.StatusCode, r.Body)
	}
	var lib struct{ Items []struct{ ID string } }
	as.Get("/v1/users/"+u.ID+"/library").JSON(t, &lib)
	if len(lib.Items) != 0 {
		t.Fatalf("the refused body created %d items", len(lib.Items))
	}
	var c struct{ ID string }
	if r := as.Send(http.MethodPost, "/v1/content", map[string]string{"name": "x", "visibility": "private"}); r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	} else {
		r.JSON(t, &c)
	}
	other := name("two")
	v := mustSignup(t, api, other, other+"@example.org")
	r = as.Do(http.MethodPut, "/v1/content/"+c.ID+"/members/"+v.ID, "application/json", []byte(`{"role":"viewer","role":"manager"}`))
	if p := r.Problem(t); r.StatusCode != http.StatusBadRequest || p.Code != "duplicate_field" || len(p.Errors) != 1 || p.Errors[0].Field != "role" {
		t.Fatalf("role twice: %d %s", r.StatusCode, r.Body)
	}
	var members struct {
		Items []struct{ PrincipalID string }
	}
	as.Get("/v1/content/"+c.ID+"/members").JSON(t, &members)
	for _, m := range members.Items {
		if m.PrincipalID == v.ID {
			t.Fatalf("the refused share made %s a member", v.ID)
		}
	}
}
