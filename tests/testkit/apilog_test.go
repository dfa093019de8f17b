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
	for _, want := range []string{"said 3:", "api 1 lwt on 127.0.0.31 2137 ms: gocql: no response", "select on 127.0.0.32 1100 ms", "driver: gocql: unable to dial control conn"} {
		if !strings.Contains(got, want) {
			t.Errorf("explanation %q does not say %q", got, want)
		}
	}
	if strings.Index(got, "lwt on") > strings.Index(got, "select on") {
		t.Errorf("the longest wait comes first: %q", got)
	}
	if got := ExplainWait(notes, a.Add(time.Hour), a.Add(time.Hour+time.Second)); !strings.Contains(got, "logged no slow statement and nothing from the driver then, the nodes no warning") {
		t.Errorf("a quiet second is said to be quiet: %q", got)
	}
}

// A node's log explains a wait too: its warnings, the collector's pauses
// (over their length) and the failure detector's word on a peer; its
// other lines, a starting node's checks and its role setup are not notes.
func TestNodeLogsExplainWaits(t *testing.T) {
	log := strings.Join([]string{
		`INFO  [main] 2026-12-05 05:21:40,000 StorageService.java:318 - Overriding RING_DELAY to 5000ms`,
		`WARN  [main] 2026-12-05 05:21:40,100 StartupChecks.java:262 - jemalloc shared library could not be preloaded`,
		`WARN  [OptionalTasks:1] 2026-12-05 05:21:40,200 CassandraRoleManager.java:393 - CassandraRoleManager skipped default role setup: some nodes were not ready`,
		`WARN  [Native-Transport-Requests-6] 2026-12-05 05:21:44,370 NoSpamLogger.java:107 - /127.0.0.31:7000->/127.0.0.32:7000-SMALL_MESSAGES-[no-channel] dropping message of type READ_REQ whose timeout expired before reaching the network`,
		`INFO  [Service Thread] 2026-12-05 05:21:45,900 GCInspector.java:294 - G1 Young Generation GC in 1450ms.  G1 Eden Space: 1 -> 0`,
		`INFO  [GossipStage:1] 2026-12-05 05:21:58,000 Gossiper.java:1400 - InetAddress /127.0.0.32:7000 is now DOWN`,
		`	at org.apache.cassandra.Foo.bar(Foo.java:1)`,
	}, "\n")
	notes := ReadNodeNotes(3, strings.NewReader(log))
	if len(notes) != 3 {
		t.Fatalf("read %d notes, want 3 (the warning, the pause, the peer down): %+v", len(notes), notes)
	}
	a := time.Date(2026, 12, 5, 5, 21, 44, 800_000_000, time.Local)
	got := ExplainWait(notes, a, a.Add(500*time.Millisecond))
	if !strings.Contains(got, "said 1: node 3 G1 Young Generation GC in 1450ms") {
		t.Errorf("a pause that covers the second explains it: %q", got)
	}
	got = ExplainWait(notes, a.Add(-time.Second), a.Add(2*time.Second))
	if !strings.Contains(got, "said 2: node 3 G1 Young Generation GC in 1450ms") || !strings.Contains(got, "; node 3 /127.0.0.31:7000->") {
		t.Errorf("a pause comes before the other warnings: %q", got)
	}
	if got := ExplainWait(notes, a.Add(13*time.Second), a.Add(14*time.Second)); !strings.Contains(got, "node 3 InetAddress /127.0.0.32:7000 is now DOWN") {
		t.Errorf("the failure detector's word is a note: %q", got)
	}
}
