//go:build integration && hammer

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/app"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestThrottleHammer is the measurement docs/design/throttle.md quotes:
// SHELF_TEST_THROTTLE_HAMMER refused tries at one login (100 000 unless
// set; a measurement of minutes, so built only with the tag hammer and
// never part of make test), first from one address over its
// limit, then from as many addresses once the login is over its limit;
// after each, what a read of the login's and the address's partitions
// meets (rows, tombstone cells, as Cassandra's trace says) and takes (the
// store's read, median and slowest of 50). Then the same number of tries
// as the layout before wrote them (a row written and deleted in the
// login's partition per refused try), read once. With
// SHELF_TEST_CASSANDRA_LOG (the node's system.log) it counts the
// tombstone warnings the node logged meanwhile.
//
//	SHELF_TEST_CASSANDRA_LOG=.cassandra/node/logs/system.log \
//	  go test -tags 'integration hammer' -count=1 -timeout 40m -run TestThrottleHammer -v ./tests/e2e/
func TestThrottleHammer(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SHELF_TEST_THROTTLE_HAMMER"))
	if n <= 0 {
		n = 100_000
	}
	logBefore := logLines(t)
	db := testkit.PackageDB(t)
	a, api := newTestApp(t, db, addressedEnv)
	user := name("hammered")
	mustSignup(t, api, user, user+"@example.org")
	ctx := context.Background()
	try := func(ip, password string) error {
		_, err := a.Accounts.Login(ctx, user, password, accounts.Client{IP: ip})
		return err
	}
	login := "login/username/" + strings.ToLower(user)

	// One address: five wrong passwords, then n refused tries.
	for range 5 {
		if err := try("192.0.2.1", "wrong guess"); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatal(err)
		}
	}
	hammer(t, n, func(int) error { return try("192.0.2.1", testPassword) })
	measure(t, a, db, "after "+strconv.Itoa(n)+" refused tries from one address", login, login+"@192.0.2.1")

	// Many addresses: the login's 12 failures (7 more, from two more
	// addresses), then n refused tries, each from an address of its own.
	for i := range 7 {
		if err := try(fmt.Sprintf("198.51.100.%d", i/4+1), "wrong guess"); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatal(err)
		}
	}
	hammer(t, n, func(i int) error { return try(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), testPassword) })
	measure(t, a, db, "after "+strconv.Itoa(n)+" more from as many addresses", login, login+"@10.0.0.1")

	// The layout before: each refused try wrote a row in the login's
	// partition of throttle_attempts and deleted it.
	old := scopeOf("old/" + login)
	s := db.Session.Session
	var sent atomic.Int64
	hammerCQL(t, n, func(i int) error {
		at := time.Now().UTC().Truncate(time.Millisecond)
		id := fmt.Sprint(i)
		ts := at.UnixMicro()
		if err := s.Query(`INSERT INTO throttle_attempts (scope, at, attempt) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL 900`, old, at, id, ts).Exec(); err != nil {
			return err
		}
		sent.Add(1)
		return s.Query(`DELETE FROM throttle_attempts USING TIMESTAMP ? WHERE scope = ? AND at = ? AND attempt = ?`, ts+1, old, at, id).Exec()
	})
	took, live, tombstones, err := tracedReadErr(s, `SELECT at, attempt FROM throttle_attempts WHERE scope = ? LIMIT 512`, old)
	t.Logf("the layout before, %d rows written and deleted at one login: one read took %v, met %d live rows and %d tombstone cells (error: %v)",
		sent.Load(), took.Round(10*time.Microsecond), live, tombstones, err)

	if warned := logLines(t)[len(logBefore):]; len(logBefore) > 0 || len(warned) > 0 {
		var lines []string
		for _, l := range warned {
			if strings.Contains(strings.ToLower(l), "tombstone") {
				lines = append(lines, l)
			}
		}
		t.Logf("the node logged %d lines about tombstones meanwhile", len(lines))
		for _, l := range lines[:min(len(lines), 5)] {
			t.Logf("  %.300s", l)
		}
	}
}

// hammer runs try n times, 32 at once, and logs the answers; all but 1 %
// of them must be the refusal.
func hammer(t *testing.T, n int, try func(i int) error) {
	t.Helper()
	start := time.Now()
	var refused, other atomic.Int64
	var firstOther atomic.Value
	run(n, func(i int) {
		if err := try(i); errors.Is(err, domain.ErrTooManyAttempts) {
			refused.Add(1)
		} else {
			other.Add(1)
			firstOther.CompareAndSwap(nil, fmt.Sprint(err))
		}
	})
	t.Logf("%d tries in %v: %d refused, %d otherwise (first: %v)", n, time.Since(start).Round(time.Millisecond), refused.Load(), other.Load(), firstOther.Load())
	if other.Load() > int64(n)/100 {
		t.Fatalf("%d of %d tries were not refused", other.Load(), n)
	}
}

// hammerCQL runs write n times, 32 at once, failing when more than 1 % of
// them fail.
func hammerCQL(t *testing.T, n int, write func(i int) error) {
	t.Helper()
	var failed atomic.Int64
	run(n, func(i int) {
		if write(i) != nil {
			failed.Add(1)
		}
	})
	if failed.Load() > int64(n)/100 {
		t.Fatalf("%d of %d writes failed", failed.Load(), n)
	}
}

// run calls fn(i) for i in [0, n), 32 at once.
func run(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// measure logs what the throttle's reads of the login's and the
// address's scopes meet and take.
func measure(t *testing.T, a *app.App, db *testkit.DB, when, login, address string) {
	t.Helper()
	store := repository.NewAttempts(a.DB)
	for _, scope := range []struct{ what, name string }{{"the login", login}, {"an address", address}} {
		key := scopeOf(scope.name)
		now := time.Now()
		live, tombstones := 0, 0
		for _, stmt := range []string{
			`SELECT at, attempt, outcome FROM throttle_tries WHERE scope = ? AND at > ? LIMIT 512`,
			`SELECT at, attempt FROM throttle_failures WHERE scope = ? AND at > ? LIMIT 512`,
		} {
			since := now.Add(-time.Minute)
			if strings.Contains(stmt, "failures") {
				since = now.Add(-15 * time.Minute)
			}
			l, ts := tracedRead(t, db.Session.Session, stmt, key, since)
			live, tombstones = live+l, tombstones+ts
		}
		var took []time.Duration
		for range 50 {
			start := time.Now()
			if _, err := store.Read(context.Background(), key, time.Now().Add(-time.Minute), time.Now().Add(-15*time.Minute), 512); err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("%s: %s's read met %d live rows and %d tombstone cells; took %v median, %v at most (50 reads)",
			when, scope.what, live, tombstones, took[len(took)/2].Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond))
		if tombstones != 0 {
			t.Errorf("%s: %s's read met %d tombstone cells", when, scope.what, tombstones)
		}
	}
}

// tracedReadErr is tracedRead that returns how long the read took and
// its error (a read past tombstone_failure_threshold fails).
func tracedReadErr(s *gocql.Session, stmt string, args ...any) (took time.Duration, live, tombstones int, err error) {
	var id []byte
	tracer := traceFunc(func(traceID []byte) { id = slices.Clone(traceID) })
	start := time.Now()
	err = s.Query(stmt, args...).Trace(tracer).Exec()
	took = time.Since(start)
	time.Sleep(time.Second) // the trace's events are written after the answer
	iter := s.Query(`SELECT activity FROM system_traces.events WHERE session_id = ?`, id).Consistency(gocql.One).Iter()
	var activity string
	for iter.Scan(&activity) {
		if m := traceLine.FindStringSubmatch(activity); m != nil {
			l, _ := strconv.Atoi(m[1])
			ts, _ := strconv.Atoi(m[2])
			live, tombstones = live+l, tombstones+ts
		}
	}
	_ = iter.Close()
	return took, live, tombstones, err
}

// logLines are the lines of SHELF_TEST_CASSANDRA_LOG (none when unset).
func logLines(t *testing.T) []string {
	t.Helper()
	path := os.Getenv("SHELF_TEST_CASSANDRA_LOG")
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
