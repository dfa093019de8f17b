// Package metrics holds shelf's Prometheus series, served at /metrics:
// HTTP requests by route pattern and their round trips to Cassandra, CQL
// statements by kind, lightweight transaction outcomes, the fan-outs (the
// background queue and the outbox backlog), the password-hash queue wait,
// the job worker's jobs and the indexes of attempts in progress. One
// registry per process (tests make their own).
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shelf/domain"
)

// Metrics is every series, registered on one registry.
type Metrics struct {
	Registry *prometheus.Registry

	HTTPRequests *prometheus.CounterVec
	HTTPDuration *prometheus.HistogramVec
	CQLDuration  *prometheus.HistogramVec
	CQLErrors    *prometheus.CounterVec
	LWTOutcomes  *prometheus.CounterVec
	OutboxItems  prometheus.Gauge
	OutboxAge    prometheus.Gauge
	HashWait     prometheus.Histogram
	// RoundTrips is the sequential round trips to Cassandra per request.
	RoundTrips *prometheus.HistogramVec
	// FanoutDuration and FanoutLibraries measure fan-outs: their time and
	// the member libraries they wrote.
	FanoutDuration  prometheus.Histogram
	FanoutLibraries prometheus.Counter
	// FanoutWaiting and FanoutRunning are the background fan-out queue:
	// items waiting and being fanned out; FanoutCoalesced counts changes
	// that joined their item's waiting fan-out, FanoutLeftToOutbox those
	// not queued (queue full, or stopping) and left to the outbox worker.
	FanoutWaiting      prometheus.Gauge
	FanoutRunning      prometheus.Gauge
	FanoutCoalesced    prometheus.Counter
	FanoutLeftToOutbox prometheus.Counter
	// Jobs are the deletions, closings and queued jobs (library rebuilds)
	// under way as the job worker's last pass found them: left waiting
	// (failed, or begun during the pass), running on another worker, and
	// the age of the oldest; and the jobs this process finished, and whose
	// run failed.
	JobsWaiting  prometheus.Gauge
	JobsRunning  prometheus.Gauge
	JobsOldest   prometheus.Gauge
	JobsFinished prometheus.Counter
	JobsFailed   prometheus.Counter
	// AttemptIndexLag is how far each index of attempts in progress
	// starts behind now after this process's last pass over it;
	// AttemptIndexHeld how many of its entries are held (open over five
	// minutes) and AttemptIndexHeldOldest the oldest one's age.
	AttemptIndexLag        *prometheus.GaugeVec
	AttemptIndexHeld       *prometheus.GaugeVec
	AttemptIndexHeldOldest *prometheus.GaugeVec

	// requests and statements are the children of the per-request and
	// per-statement vectors, looked up once per label set:
	// WithLabelValues checks and hashes every label value on every call.
	requests   seriesCache[requestLabels, requestSeries]
	statements seriesCache[string, prometheus.Observer]
}

// seriesCache remembers the children of vectors by their label values.
// Its keys are as bounded as the labels they stand for.
type seriesCache[K comparable, S any] struct {
	mu sync.RWMutex
	m  map[K]S
}

// get returns k's series, made by newSeries the first time.
func (c *seriesCache[K, S]) get(k K, newSeries func(K) S) S {
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = newSeries(k)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]S{}
	}
	c.m[k] = s
	c.mu.Unlock()
	return s
}

// requestLabels are a request's labels.
type requestLabels struct {
	route, method string
	status        int
}

// requestSeries are a request's children of HTTPRequests, HTTPDuration
// and RoundTrips.
type requestSeries struct {
	requests        prometheus.Counter
	duration, trips prometheus.Observer
}

// latencyBuckets cover 100 µs to 10 s: local reads to slow fan-outs.
var latencyBuckets = prometheus.ExponentialBucketsRange(0.0001, 10, 16)

// New creates and registers the series (and the Go and process collectors).
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shelf_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shelf_http_request_duration_seconds", Help: "HTTP request latency by route pattern and method.",
			Buckets: latencyBuckets,
		}, []string{"route", "method"}),
		CQLDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shelf_cql_statement_duration_seconds", Help: "CQL statement latency by kind (select, insert, update, delete, batch; lwt for conditional writes).",
			Buckets: latencyBuckets,
		}, []string{"kind"}),
		CQLErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shelf_cql_statement_errors_total", Help: "CQL statements that returned an error, by kind.",
		}, []string{"kind"}),
		LWTOutcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shelf_lwt_outcomes_total", Help: "Lightweight transactions by outcome: applied, not_applied, ambiguous_resolved, failed.",
		}, []string{"outcome"}),
		OutboxItems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_fanout_outbox_items", Help: "Items whose fan-out is not finished (outbox marks).",
		}),
		OutboxAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_fanout_outbox_oldest_seconds", Help: "Age of the oldest outbox mark.",
		}),
		HashWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shelf_password_hash_wait_seconds", Help: "Time a password hash waited for a free hashing slot.",
			Buckets: latencyBuckets,
		}),
		RoundTrips: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shelf_http_request_round_trips", Help: "Sequential round trips to Cassandra a request waited for (statements sent together count once), by route pattern and method; docs/design/cost-model.md says what each should be.",
			Buckets: prometheus.LinearBuckets(0, 1, 13),
		}, []string{"route", "method"}),
		FanoutDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shelf_fanout_duration_seconds", Help: "Time a finished fan-out took, from reading the first members to the last library written.",
			Buckets: latencyBuckets,
		}),
		FanoutLibraries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shelf_fanout_member_libraries_total", Help: "Member libraries written by finished fan-outs.",
		}),
		FanoutWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_fanout_queue_waiting", Help: "Items waiting for a background fan-out in this process (at most SHELF_FANOUT_QUEUE).",
		}),
		FanoutRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_fanout_queue_running", Help: "Items being fanned out in the background in this process (at most SHELF_FANOUT_WORKERS).",
		}),
		FanoutCoalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shelf_fanout_coalesced_total", Help: "Changes that joined their item's waiting background fan-out (only the newest version is written).",
		}),
		FanoutLeftToOutbox: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shelf_fanout_left_to_outbox_total", Help: "Changes not queued for a background fan-out (queue full, or the process stopping): the outbox worker does them.",
		}),
		JobsWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_jobs_waiting", Help: "Jobs under way (deletions, closings, library rebuilds) that the job worker's last pass left unfinished (failed, held by nobody, or begun meanwhile).",
		}),
		JobsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_jobs_running", Help: "Jobs under way (deletions, closings, library rebuilds) that another worker held the lease of at the last pass.",
		}),
		JobsOldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shelf_jobs_oldest_seconds", Help: "Age of the oldest job (deletion, closing, library rebuild) the last pass left under way: held by another worker, failed or not begun (0: none).",
		}),
		JobsFinished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shelf_jobs_finished_total", Help: "Jobs (deletions, closings, library rebuilds) this process's job worker finished.",
		}),
		JobsFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shelf_jobs_failed_total", Help: "Runs of a job by this process that failed (the job is let go and taken on again by the next pass).",
		}),
		AttemptIndexLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shelf_attempt_index_lag_seconds",
			Help: "How far an index of attempts in progress starts behind now after the last pass (a minute normally; up to five more while an attempt is open that long, then it is held).",
		}, []string{"index"}),
		AttemptIndexHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shelf_attempt_index_held",
			Help: "Entries of an index of attempts in progress open over five minutes (long jobs, or attempts stuck open), as the last pass read them.",
		}, []string{"index"}),
		AttemptIndexHeldOldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shelf_attempt_index_held_oldest_seconds",
			Help: "Age of the oldest held entry of an index of attempts in progress (0: none); hours mean an attempt stuck open.",
		}, []string{"index"}),
	}
	m.Registry.MustRegister(m.HTTPRequests, m.HTTPDuration, m.CQLDuration, m.CQLErrors, m.LWTOutcomes,
		m.OutboxItems, m.OutboxAge, m.HashWait, m.RoundTrips, m.FanoutDuration, m.FanoutLibraries,
		m.FanoutWaiting, m.FanoutRunning, m.FanoutCoalesced, m.FanoutLeftToOutbox,
		m.JobsWaiting, m.JobsRunning, m.JobsOldest, m.JobsFinished, m.JobsFailed, m.AttemptIndexLag,
		m.AttemptIndexHeld, m.AttemptIndexHeldOldest,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ObserveRequest counts a request to route (its pattern) by method that
// was answered status after took, having waited for trips round trips to
// Cassandra.
func (m *Metrics) ObserveRequest(route, method string, status int, took time.Duration, trips int) {
	s := m.requests.get(requestLabels{route: route, method: method, status: status}, m.requestSeries)
	s.requests.Inc()
	s.duration.Observe(took.Seconds())
	s.trips.Observe(float64(trips))
}

func (m *Metrics) requestSeries(l requestLabels) requestSeries {
	return requestSeries{
		requests: m.HTTPRequests.WithLabelValues(l.route, l.method, strconv.Itoa(l.status)),
		duration: m.HTTPDuration.WithLabelValues(l.route, l.method),
		trips:    m.RoundTrips.WithLabelValues(l.route, l.method),
	}
}

// ObserveQuery implements gocql.QueryObserver.
func (m *Metrics) ObserveQuery(ctx context.Context, q gocql.ObservedQuery) {
	domain.RecordTrip(ctx, q.Start, q.End)
	m.observe(StatementKind(q.Statement), q.End.Sub(q.Start), q.Err)
}

// ObserveBatch implements gocql.BatchObserver.
func (m *Metrics) ObserveBatch(ctx context.Context, b gocql.ObservedBatch) {
	domain.RecordTrip(ctx, b.Start, b.End)
	m.observe("batch", b.End.Sub(b.Start), b.Err)
}

func (m *Metrics) observe(kind string, d time.Duration, err error) {
	m.statements.get(kind, m.statementDuration).Observe(d.Seconds())
	if err != nil {
		m.CQLErrors.WithLabelValues(kind).Inc() // rare: not worth a cache
	}
}

func (m *Metrics) statementDuration(kind string) prometheus.Observer {
	return m.CQLDuration.WithLabelValues(kind)
}

// StatementKind names a statement for the kind label: its verb, or "lwt"
// for a conditional write.
func StatementKind(stmt string) string {
	verb, _, _ := strings.Cut(strings.TrimSpace(stmt), " ")
	for _, kind := range [...]string{"select", "insert", "update", "delete"} {
		if !strings.EqualFold(verb, kind) {
			continue
		}
		if kind != "select" && hasIf(stmt) {
			return "lwt"
		}
		return kind
	}
	return "other"
}

// hasIf reports whether stmt holds " IF " in any case, without the copy
// strings.ToUpper would make of every statement.
func hasIf(stmt string) bool {
	for i := 0; i+4 <= len(stmt); i++ {
		if stmt[i] == ' ' && stmt[i+1]|0x20 == 'i' && stmt[i+2]|0x20 == 'f' && stmt[i+3] == ' ' {
			return true
		}
	}
	return false
}
