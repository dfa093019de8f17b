package testkit

import (
	"strings"
	"testing"
	"time"
)

// An empty second is explained by what the API processes logged then: the
// slow statements whose attempt overlaps it (longest first) and the
// driver's warnings; requests' own lines and other seconds' notes are not.
func TestEmptySecondsAreExplainedByTheAPILogs(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"info","method":"GET","status":200,"durationMs":3000,"time":"2026-12-03T15:46:22.100Z","message":"request"}`,
		`{"level":"warn","component":"cql","kind":"lwt","statement":"UPDATE users SET v = ? WHERE id = ? IF version = ?","attempt":0,"durationMs":2137,"node":"127.0.0.31","error":"gocql: no response received from cassandra within timeout period","time":"2026-12-03T15:46:22.500Z","message":"slow statement"}`,
		`{"level":"warn","component":"cql","kind":"select","statement":"SELECT id FROM users WHERE id = ?","attempt":1,"durationMs":1100,"node":"127.0.0.32","time":"2026-12-03T15:46:22.300Z","message":"slow statement"}`,
		`{"level":"warn","component":"gocql","time":"2026-12-03T15:46:21.900Z","message":"gocql: unable to dial control conn 127.0.0.33:9042: connection refused\n"}`,
		`{"level":"warn","component":"cql","kind":"select","statement":"SELECT 1","attempt":0,"durationMs":1000,"node":"127.0.0.31","time":"2026-12-03T15:46:40.000Z","message":"slow statement"}`,
		`not json`,
	}, "\n")
	notes := ReadAPINotes(1, strings.NewReader(log))
	if len(notes) != 4 {
		t.Fatalf("read %d notes, want 4 (two slow statements in the second, the driver's, one later): %+v", len(notes), notes)
	}
	a := time.Date(2026, 12, 3, 15, 46, 21, 852_000_000, time.UTC)
	got := ExplainWait(notes, a, a.Add(time.Second))
	for _, want := range []string{"logged 3:", "api 1 lwt on 127.0.0.31 2137 ms: gocql: no response", "select on 127.0.0.32 1100 ms", "driver: gocql: unable to dial control conn"} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation %q does not say %q", got, want)
		}
	}
	if strings.Index(got, "lwt on") > strings.Index(got, "select on") {
		t.Errorf("the longest wait comes first: %q", got)
	}
	if got := ExplainWait(notes, a.Add(time.Hour), a.Add(time.Hour+time.Second)); !strings.Contains(got, "logged no slow statement") {
		t.Errorf("a quiet second is said to be quiet: %q", got)
	}
}
