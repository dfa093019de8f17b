package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestStatementKind: a statement's kind is its verb in any case, "lwt" for
// a write with IF (in any case), "other" for anything else.
func TestStatementKind(t *testing.T) {
	t.Parallel()
	for stmt, want := range map[string]string{
		"SELECT id FROM users WHERE id = ?":                      "select",
		"  select id FROM users WHERE id = ?":                    "select",
		"INSERT INTO usernames (k) VALUES (?) IF NOT EXISTS":     "lwt",
		"INSERT INTO sessions (id) VALUES (?) USING TTL 60":      "insert",
		"UPDATE users SET v = ? WHERE id = ? IF version = ?":     "lwt",
		"update users set v = ? where id = ? if version = ?":     "lwt",
		"UPDATE users SET v = ? WHERE id = ?":                    "update",
		"UPDATE users SET modified = ? WHERE id = ? -- IFFY":     "update",
		"DELETE FROM claims WHERE k = ? IF owner = ?":            "lwt",
		"DELETE FROM sessions WHERE id = ?":                      "delete",
		"BEGIN BATCH INSERT INTO a (k) VALUES (?); APPLY BATCH;": "other",
		"CREATE TABLE IF NOT EXISTS t (k text PRIMARY KEY)":      "other",
		"": "other",
	} {
		if got := StatementKind(stmt); got != want {
			t.Errorf("StatementKind(%q) = %q, want %q", stmt, got, want)
		}
	}
}

// TestObservedSeriesKeepTheirLabels: requests and statements observed
// through the cached series land in the series of their own labels, and
// a statement's error counter appears with its first error only.
func TestObservedSeriesKeepTheirLabels(t *testing.T) {
	t.Parallel()
	m := New()
	m.ObserveRequest("/v1/users/{id}", "GET", 200, time.Millisecond, 1)
	m.ObserveRequest("/v1/users/{id}", "GET", 200, time.Millisecond, 1)
	m.ObserveRequest("/v1/users/{id}", "GET", 404, time.Millisecond, 2)
	m.ObserveRequest("/v1/users/{id}", "HEAD", 200, time.Millisecond, 0)
	for _, c := range []struct {
		method, status string
		want           float64
	}{{"GET", "200", 2}, {"GET", "404", 1}, {"HEAD", "200", 1}} {
		if got := testutil.ToFloat64(m.HTTPRequests.WithLabelValues("/v1/users/{id}", c.method, c.status)); got != c.want {
			t.Errorf("%s %s: %v requests, want %v", c.method, c.status, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.HTTPDuration); n != 2 {
		t.Errorf("%d duration series, want 2 (GET, HEAD)", n)
	}
	m.observe("select", time.Millisecond, nil)
	m.observe("select", time.Millisecond, nil)
	if n := testutil.CollectAndCount(m.CQLErrors); n != 0 {
		t.Errorf("%d error series before any error", n)
	}
	m.observe("lwt", time.Millisecond, errors.New("timeout"))
	if got := testutil.ToFloat64(m.CQLErrors.WithLabelValues("lwt")); got != 1 {
		t.Errorf("lwt errors %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.CQLDuration); n != 2 {
		t.Errorf("%d statement duration series, want 2 (select, lwt)", n)
	}
}
