//go:build integration

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// A throttle that only the guesser pays for (docs/design/throttle.md), on
// Cassandra: the client addresses are X-Forwarded-For from a trusted
// proxy (the test's loopback).

// addressedEnv is throttleEnv with a login tier of 12, so that a dozen
// rows at the login lock it, and the test's loopback a trusted proxy.
var addressedEnv = map[string]string{
	"SHELF_THROTTLE_PER_ADDRESS": "5",
	"SHELF_THROTTLE_PER_LOGIN":   "12",
	"SHELF_THROTTLE_WINDOW":      "15m",
	"SHELF_TRUSTED_PROXIES":      "127.0.0.0/8,::1/128",
}

// loginAt logs in as a client at ip.
func loginAt(api *testkit.API, ip, login, password string) *testkit.Response {
	body, _ := json.Marshal(map[string]string{"login": login, "password": password})
	return api.Do(http.MethodPost, "/v1/sessions", "application/json", body, "X-Forwarded-For", ip)
}

// TestOverloadMade503sDoNotLockTheOwnerOnCassandra: five wrong passwords
// from one address, then 40 tries from it, 8 at once, while every write
// of the throttle applies and its answer is lost (what an overloaded node
// answers): they answer 503 or 429, and the owner from another address
// still logs in. Were an attempt that ended in 503 counted, its rows
// would fill the login's tier and the owner get 429 from every address
// for a window.
func TestOverloadMade503sDoNotLockTheOwnerOnCassandra(t *testing.T) {
	t.Parallel()
	a, api := newTestApp(t, testkit.PackageDB(t), addressedEnv)
	n := name("overloaded")
	mustSignup(t, api, n, n+"@example.org")
	for i := range 5 {
		if r := loginAt(api, "192.0.2.1", n, "wrong guess"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	faults(a).Set(func(stmt string, at faultinject.Point) error {
		if strings.HasPrefix(stmt, "throttle_") && at == faultinject.AfterWrite {
			return gocql.ErrTimeoutNoResponse
		}
		return nil
	})
	byStatus := map[int]int{}
	rs := burst(40, func(int) *testkit.Response { return loginAt(api, "192.0.2.1", n, "wrong guess") })
	for _, r := range rs {
		byStatus[r.StatusCode]++
	}
	faults(a).Set(nil)
	t.Logf("40 tries under lost answers: %v", byStatus)
	if byStatus[http.StatusServiceUnavailable] == 0 || byStatus[http.StatusServiceUnavailable]+byStatus[http.StatusTooManyRequests] != 40 {
		t.Fatalf("40 tries under lost answers answered %v; want 503 or 429, some 503", byStatus)
	}
	if r := loginAt(api, "198.51.100.7", n, testPassword); r.StatusCode != http.StatusCreated {
		t.Fatalf("the owner from another address: %d %s", r.StatusCode, r.Body)
	}
}

// TestTheThrottleLeavesNoTombstones: refused tries, a right password and
// a wrong one leave the login's partitions (and the refused address's)
// with no tombstone for a reader to meet: no deletion anywhere, and the
// rows live for minutes.
func TestTheThrottleLeavesNoTombstones(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	_, api := newTestApp(t, db, addressedEnv)
	n := name("tombstoned")
	mustSignup(t, api, n, n+"@example.org")
	for range 5 {
		loginAt(api, "192.0.2.1", n, "wrong guess")
	}
	for i := range 30 {
		if r := loginAt(api, "192.0.2.1", n, testPassword); r.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("refused try %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	if r := loginAt(api, "198.51.100.7", n, testPassword); r.StatusCode != http.StatusCreated {
		t.Fatalf("right password from another address: %d %s", r.StatusCode, r.Body)
	}
	if r := loginAt(api, "203.0.113.9", n, "wrong guess"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password from a third address: %d %s", r.StatusCode, r.Body)
	}
	login := "login/username/" + strings.ToLower(n)
	scopes := []string{scopeOf(login), scopeOf(login + "@192.0.2.1"), scopeOf(login + "@198.51.100.7")}
	s := db.Session.Session
	live, tombstones := 0, 0
	for _, table := range throttleTables(t, s, db.Keyspace()) {
		for _, scope := range scopes {
			l, ts := tracedRead(t, s, fmt.Sprintf("SELECT * FROM %s WHERE scope = ?", table), scope)
			live += l
			tombstones += ts
		}
	}
	t.Logf("the login's and the addresses' partitions: %d live rows, %d tombstone cells", live, tombstones)
	if live == 0 {
		t.Fatal("read no live row: the scopes are not the throttle's")
	}
	if tombstones != 0 {
		t.Fatalf("the throttle's partitions hold %d tombstone cells a reader meets", tombstones)
	}
}

// scopeOf is the throttle's partition key of a scope's name.
func scopeOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// throttleTables are the keyspace's tables named throttle_*.
func throttleTables(t *testing.T, s *gocql.Session, keyspace string) []string {
	t.Helper()
	iter := s.Query(`SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, keyspace).Iter()
	var out []string
	var table string
	for iter.Scan(&table) {
		if strings.HasPrefix(table, "throttle_") {
			out = append(out, table)
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// traceLine is Cassandra's trace line of a partition read.
var traceLine = regexp.MustCompile(`Read (\d+) live rows and (\d+) tombstone cells`)

// tracedRead runs a read traced and returns the live rows and tombstone
// cells its trace says it met.
func tracedRead(t *testing.T, s *gocql.Session, stmt string, args ...any) (live, tombstones int) {
	t.Helper()
	var id []byte
	tracer := traceFunc(func(traceID []byte) { id = slices.Clone(traceID) })
	if err := s.Query(stmt, args...).Trace(tracer).Exec(); err != nil {
		t.Fatal(err)
	}
	// The trace's events are written after the answer.
	for deadline := time.Now().Add(5 * time.Second); ; {
		iter := s.Query(`SELECT activity FROM system_traces.events WHERE session_id = ?`, id).Consistency(gocql.One).Iter()
		var activity string
		found := false
		for iter.Scan(&activity) {
			if m := traceLine.FindStringSubmatch(activity); m != nil {
				l, _ := strconv.Atoi(m[1])
				ts, _ := strconv.Atoi(m[2])
				live, tombstones, found = live+l, tombstones+ts, true
			}
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if found || time.Now().After(deadline) {
			return live, tombstones
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// traceFunc is a gocql.Tracer.
type traceFunc func(id []byte)

func (f traceFunc) Trace(id []byte) { f(id) }
