package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/internal/metrics"
)

// An attempt that took SHELF_CASSANDRA_SLOW_LOG or longer is logged with its
// kind, statement, attempt, time and error; a faster one is not, and every
// one is counted in the metrics.
func TestSlowStatementsAreLoggedWithTheirNode(t *testing.T) {
	var out bytes.Buffer
	m := metrics.New()
	o := statementObserver{metrics: m, slow: time.Second, logger: zerolog.New(&out)}
	start := time.Now()
	o.ObserveQuery(context.Background(), gocql.ObservedQuery{Statement: "SELECT id FROM users WHERE id = ?", Start: start, End: start.Add(10 * time.Millisecond)})
	if out.Len() != 0 {
		t.Fatalf("a 10 ms read was logged: %s", out.String())
	}
	o.ObserveQuery(context.Background(), gocql.ObservedQuery{Statement: "UPDATE users SET  name = ?\n WHERE id = ? IF version = ?",
		Start: start, End: start.Add(2 * time.Second), Attempt: 1, Err: errors.New("gocql: no response received from cassandra within timeout period")})
	o.ObserveBatch(context.Background(), gocql.ObservedBatch{Statements: []string{"INSERT INTO items (id) VALUES (?)"}, Start: start, End: start.Add(1500 * time.Millisecond)})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want the two slow attempts logged, got %d lines: %s", len(lines), out.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first["kind"] != "lwt" || first["statement"] != "UPDATE users SET name = ? WHERE id = ? IF version = ?" ||
		first["attempt"] != float64(1) || first["durationMs"] != float64(2000) || !strings.Contains(first["error"].(string), "timeout") {
		t.Errorf("slow compare-and-set logged as %v", first)
	}
	if second["kind"] != "batch" || second["statement"] != "INSERT INTO items (id) VALUES (?)" || second["error"] != nil {
		t.Errorf("slow batch logged as %v", second)
	}
	off := statementObserver{metrics: m, logger: zerolog.New(&out)}
	out.Reset()
	off.ObserveQuery(context.Background(), gocql.ObservedQuery{Statement: "SELECT 1", Start: start, End: start.Add(time.Minute)})
	if out.Len() != 0 {
		t.Errorf("SHELF_CASSANDRA_SLOW_LOG=0s still logged: %s", out.String())
	}
	if got := shorten(strings.Repeat("é", 100), 9); got != "éééé…" {
		t.Errorf("shorten cut a rune: %q", got)
	}
}

// BenchmarkObserveQuery is what every statement's attempt pays to be
// counted (and not logged: it is fast): a read and a compare-and-set, in a
// request that counts its round trips.
func BenchmarkObserveQuery(b *testing.B) {
	o := statementObserver{metrics: metrics.New(), slow: time.Second, logger: zerolog.Nop()}
	start := time.Now()
	read := gocql.ObservedQuery{Statement: "SELECT id, username, display_name, bio, status, created_at FROM users WHERE id = ?", Start: start, End: start.Add(time.Millisecond)}
	cas := gocql.ObservedQuery{Statement: "UPDATE users SET display_name = ?, version = ? WHERE id = ? IF version = ?", Start: start, End: start.Add(3 * time.Millisecond)}
	b.ReportAllocs()
	for b.Loop() {
		ctx, _ := domain.CountTrips(context.Background())
		o.ObserveQuery(ctx, read)
		o.ObserveQuery(ctx, cas)
	}
}
