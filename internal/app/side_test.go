package app

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/handlers"
	"shelf/internal/config"
	"shelf/internal/metrics"
)

// TestMetricsServeOnTheirOwnAddress
// (docs/decisions/0067-metrics-on-the-api-s-address-unless.md): with
// SHELF_METRICS_ADDR set, /metrics answers there (with the API's requests
// counted) and the API's listener answers 404 for it; the metrics address
// serves nothing else, and stops with the API.
func TestMetricsServeOnTheirOwnAddress(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"SHELF_METRICS_ADDR": "127.0.0.1:0"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	m := metrics.New()
	metricsSide, err := listenMetrics(cfg.HTTP.MetricsAddr, m, zerolog.New(&logs))
	if err != nil || metricsSide == nil {
		t.Fatalf("listenMetrics: %v, %v", metricsSide, err)
	}
	metricsURL := "http://" + metricsSide.ln.Addr().String()
	if !strings.Contains(logs.String(), `"message":"metrics are serving"`) || !strings.Contains(logs.String(), metricsSide.ln.Addr().String()) {
		t.Errorf("the address is not logged: %s", logs.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiURL := "http://" + ln.Addr().String()
	stop := serveSides(t, ln, sideRouter(m, cfg.HTTP.MetricsAddr != ""), []*side{nil, metricsSide}, cfg.HTTP)

	if status, _ := get(t, apiURL+"/healthz"); status != http.StatusOK {
		t.Errorf("the API's /healthz: %d", status)
	}
	if status, _ := get(t, apiURL+"/metrics"); status != http.StatusNotFound {
		t.Errorf("the API's /metrics: %d, want 404", status)
	}
	status, body := get(t, metricsURL+"/metrics")
	if status != http.StatusOK || !strings.Contains(body, `shelf_http_requests_total{method="GET",route="/healthz",status="200"} 1`) {
		t.Errorf("metrics address: %d, the API's request not counted:\n%.2000s", status, body)
	}
	if status, _ := get(t, metricsURL+"/healthz"); status != http.StatusNotFound {
		t.Errorf("the metrics address serves the API: /healthz %d", status)
	}

	stop()
	if resp, err := client.Get(metricsURL + "/metrics"); err == nil {
		_ = resp.Body.Close()
		t.Error("the metrics address still answers after the API stopped")
	}
}

// TestMetricsStayOnTheAPIByDefault: without SHELF_METRICS_ADDR nothing
// more listens, and the API's router serves /metrics.
func TestMetricsStayOnTheAPIByDefault(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if s, err := listenMetrics(cfg.HTTP.MetricsAddr, metrics.New(), zerolog.New(&logs)); s != nil || err != nil || logs.Len() != 0 {
		t.Fatalf("a metrics listener by default: %v, %v, %s", s, err, logs.String())
	}
	rec := httptest.NewRecorder()
	sideRouter(metrics.New(), cfg.HTTP.MetricsAddr != "").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "go_goroutines") {
		t.Errorf("the API's /metrics: %d", rec.Code)
	}
}

// sideRouter is the API's router without services: /healthz, and
// /metrics unless elsewhere.
func sideRouter(m *metrics.Metrics, elsewhere bool) http.Handler {
	return handlers.NewRouter(handlers.Deps{Logger: zerolog.Nop(), Ready: alwaysReady{},
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: time.Second,
		Metrics: m, MetricsElsewhere: elsewhere})
}

// serveSides runs serveWithSides until the returned stop, which waits for
// it to return cleanly.
func serveSides(t *testing.T, ln net.Listener, api http.Handler, sides []*side, c config.HTTP) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveWithSides(ctx, ln, api, sides, c, zerolog.Nop()) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("serveWithSides: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serveWithSides did not return after ctx ended")
		}
	}
}
