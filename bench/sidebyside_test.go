// Package bench measures shelf against the raw driver doing the same
// statements, side by side in one process, and reports ratios rather than
// absolute times (which depend on the machine). `make bench` runs it
// against the real local node.
package bench

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sideBySide runs raw and api alternately b.N times each and reports their
// mean latencies and api/raw, plus the API process's peak memory so far.
func sideBySide(b *testing.B, h *harness, raw, api func() error) {
	b.Helper()
	// Warm both paths (prepared statements, connections) before timing.
	for i := 0; i < 20; i++ {
		must(b, raw())
		must(b, api())
	}
	var rawTotal, apiTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		must(b, raw())
		t1 := time.Now()
		must(b, api())
		apiTotal += time.Since(t1)
		rawTotal += t1.Sub(t0)
	}
	b.StopTimer()
	report(b, h, rawTotal, apiTotal, b.N)
}

// sideBySideParallel runs b.N operations of raw on workers goroutines, then
// b.N of api on as many, and reports the mean wall time per operation of
// each (the inverse of throughput) and api/raw.
func sideBySideParallel(b *testing.B, h *harness, workers int, raw, api func() error) {
	b.Helper()
	run := func(op func() error, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	run(raw, 200)
	run(api, 200)
	b.ResetTimer()
	rawTotal := run(raw, b.N)
	apiTotal := run(api, b.N)
	b.StopTimer()
	report(b, h, rawTotal, apiTotal, b.N)
}

func report(b *testing.B, h *harness, rawTotal, apiTotal time.Duration, n int) {
	b.Helper()
	b.ReportMetric(0, "ns/op") // the two series below replace the mixed figure
	b.ReportMetric(float64(rawTotal.Microseconds())/float64(n), "raw-µs/op")
	b.ReportMetric(float64(apiTotal.Microseconds())/float64(n), "api-µs/op")
	b.ReportMetric(float64(apiTotal)/float64(rawTotal), "api/raw")
	b.ReportMetric(float64(rawTotal)/float64(apiTotal), "raw/api")
	if mb, err := h.api.peakRSSMB(); err == nil {
		b.ReportMetric(mb, "api-peak-MB")
	}
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Fatal(err)
	}
}

// httpClient keeps enough idle connections for the parallel benchmarks.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}

// get fetches url and fails unless it answers want.
func get(url string, want int) error {
	resp, err := httpClient.Get(url)
	return check(resp, err, url, want)
}

// post sends a JSON body and fails unless the answer is want.
func post(url, body string, want int) error {
	resp, err := httpClient.Post(url, "application/json", strings.NewReader(body))
	return check(resp, err, url, want)
}

func check(resp *http.Response, err error, url string, want int) error {
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		return &statusError{url: url, got: resp.StatusCode, want: want}
	}
	return nil
}

type statusError struct {
	url       string
	got, want int
}

func (e *statusError) Error() string {
	return "GET " + e.url + ": status " + http.StatusText(e.got) + ", want " + http.StatusText(e.want)
}

// deepVsFirst times the first page beside a page deep in the list, the two
// alternately, and reports both and deep/first (goal: at most 1.5, a page
// costs the same wherever it is).
func deepVsFirst(b *testing.B, get func(url string) error, first, deep string) {
	b.Helper()
	var firstT, deepT time.Duration
	for i := 0; i < 10; i++ {
		must(b, get(first))
		must(b, get(deep))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		must(b, get(first))
		t1 := time.Now()
		must(b, get(deep))
		deepT += time.Since(t1)
		firstT += t1.Sub(t0)
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(firstT.Microseconds())/float64(b.N), "first-µs/op")
	b.ReportMetric(float64(deepT.Microseconds())/float64(b.N), "deep-µs/op")
	b.ReportMetric(float64(deepT)/float64(firstT), "deep/first")
}
