package app

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

type alwaysReady struct{}

func (alwaysReady) CheckReady(context.Context) error { return nil }

// client gives up on a server that accepts and never answers.
var client = &http.Client{Timeout: 10 * time.Second}

// get answers a GET's status and body, or fails the test.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// TestPprofServesOnItsOwnAddress (docs/operations.md#profiling): with SHELF_PPROF_ADDR
// set, pprof answers on that address and only there (the API's router has
// no /debug/pprof/), its address is logged, and it stops with the API.
func TestPprofServesOnItsOwnAddress(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"SHELF_PPROF_ADDR": "127.0.0.1:0"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := zerolog.New(&logs)
	pprof, err := listenPprof(cfg.HTTP.PprofAddr, logger)
	if err != nil || pprof == nil {
		t.Fatalf("listenPprof: %v, %v", pprof, err)
	}
	pprofLn := pprof.ln
	pprofURL := "http://" + pprofLn.Addr().String()
	if !strings.Contains(logs.String(), `"level":"info","addr":"`+pprofLn.Addr().String()+`"`) ||
		!strings.Contains(logs.String(), `"message":"pprof is serving"`) {
		t.Errorf("the address is not logged at info: %s", logs.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiURL := "http://" + ln.Addr().String()
	stop := serveSides(t, ln, sideRouter(nil, false), []*side{pprof, nil}, cfg.HTTP)

	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1", "/debug/pprof/symbol"} {
		if status, body := get(t, pprofURL+path); status != http.StatusOK {
			t.Errorf("pprof %s: %d %.200s", path, status, body)
		}
	}
	if status, body := get(t, pprofURL+"/debug/pprof/profile?seconds=1"); status != http.StatusOK || len(body) == 0 {
		t.Errorf("a one-second CPU profile: %d, %d bytes", status, len(body))
	}
	if status, _ := get(t, apiURL+"/debug/pprof/"); status != http.StatusNotFound {
		t.Errorf("the API's /debug/pprof/: %d, want 404", status)
	}
	if status, _ := get(t, apiURL+"/healthz"); status != http.StatusOK {
		t.Errorf("the API's /healthz: %d", status)
	}
	if status, _ := get(t, pprofURL+"/healthz"); status != http.StatusNotFound {
		t.Errorf("pprof's address serves the API: /healthz %d", status)
	}

	stop()
	for _, url := range []string{pprofURL, apiURL} {
		if resp, err := client.Get(url + "/debug/pprof/"); err == nil {
			_ = resp.Body.Close()
			t.Errorf("%s still answers after the API stopped", url)
		}
	}
}

// TestPprofIsOffByDefault: no SHELF_PPROF_ADDR, no listener and no line.
func TestPprofIsOffByDefault(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ln, err := listenPprof(cfg.HTTP.PprofAddr, zerolog.New(&logs))
	if ln != nil || err != nil || logs.Len() != 0 {
		t.Fatalf("pprof on by default: %v, %v, %s", ln, err, logs.String())
	}
}

// TestPprofBeyondLoopbackIsAWarning: an address every interface can reach
// is served (the operator asked for it) but logged as a warning.
func TestPprofBeyondLoopbackIsAWarning(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	ln, err := listenPprof(":0", zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	closeSides(ln)
	if !strings.Contains(logs.String(), `"level":"warn"`) || !strings.Contains(logs.String(), "never expose it publicly") {
		t.Errorf("no warning: %s", logs.String())
	}
}
