//go:build integration

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"shelf/internal/metrics"
	"shelf/tests/testkit"
)

// TestMetricsShowTheSeries runs a small story through an app whose session
// reports to the metrics, then reads /metrics: the series it lists, all
// named in docs/operations.md, are there, with the story's samples.
func TestMetricsShowTheSeries(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	m := metrics.New()
	a, api := newObservedApp(t, db, m, m, m)
	var err error
	u := name("metric")
	mustSignup(t, api, u, u+"@example.org")
	me := api.As(mustLogin(t, api, u).Token)
	c := createContent(t, me, "measured", "public")
	me.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"name": "measured again"})
	// The outbox marks are cleared just after the answers: wait for it.
	var items int
	var oldest time.Duration
	for deadline := time.Now().Add(5 * time.Second); ; {
		items, oldest, err = a.Contents.OutboxBacklog(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if items == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.OutboxItems.Set(float64(items))
	m.OutboxAge.Set(oldest.Seconds())

	r := api.Get("/metrics")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", r.StatusCode)
	}
	body := string(r.Body)
	for _, want := range []string{
		`shelf_http_requests_total{method="POST",route="/v1/users",status="201"} 1`,
		`shelf_http_requests_total{method="POST",route="/v1/sessions",status="201"} 1`,
		`shelf_http_request_duration_seconds_count{method="PATCH",route="/v1/content/{id}"} 1`,
		`shelf_cql_statement_duration_seconds_count{kind="lwt"}`,
		`shelf_cql_statement_duration_seconds_count{kind="select"}`,
		`shelf_cql_statement_duration_seconds_count{kind="batch"}`,
		`shelf_lwt_outcomes_total{outcome="applied"}`,
		`shelf_fanout_outbox_items 0`,
		`shelf_fanout_outbox_oldest_seconds`,
		`shelf_password_hash_wait_seconds_count 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
