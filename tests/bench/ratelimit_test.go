//go:build bench

package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// TestSharedRateLimitCost measures what a rate limit shared by every API
// instance would cost a login (the capacity model's question: per
// instance, or a shared counter?): a Cassandra counter per client address and minute, bumped
// and read on every login, by 16 clients, beside a plain one-row read for
// scale; for many addresses and for one (an attacker's, the case a limit
// is for). Run: go test -tags bench -run TestSharedRateLimitCost -v ./tests/bench/
func TestSharedRateLimitCost(t *testing.T) {
	db := testkit.NewDB(t)
	s := db.Session.Session
	for _, stmt := range []string{
		`CREATE TABLE rate_counts (key text, window bigint, n counter, PRIMARY KEY ((key, window)))`,
		`CREATE TABLE plain (key text PRIMARY KEY, v text)`,
	} {
		if err := s.Query(stmt).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1000 {
		if err := s.Query(`INSERT INTO plain (key, v) VALUES (?, ?)`, fmt.Sprint(i), "x").Exec(); err != nil {
			t.Fatal(err)
		}
	}
	window := time.Now().Unix() / 60
	bump := func(key string) error {
		if err := s.Query(`UPDATE rate_counts SET n = n + 1 WHERE key = ? AND window = ?`, key, window).Exec(); err != nil {
			return err
		}
		var n int64
		return s.Query(`SELECT n FROM rate_counts WHERE key = ? AND window = ?`, key, window).Scan(&n)
	}
	cases := []struct {
		name string
		op   func() error
	}{
		{"plain one-row read (scale)", func() error {
			var v string
			return s.Query(`SELECT v FROM plain WHERE key = ?`, fmt.Sprint(rand.IntN(1000))).Scan(&v)
		}},
		{"counter bump + read, many addresses", func() error { return bump(fmt.Sprintf("10.0.%d.%d", rand.IntN(256), rand.IntN(256))) }},
		{"counter bump + read, one address", func() error { return bump("203.0.113.7") }},
	}
	for _, c := range cases {
		r := sideOf(run(t, 16, 5*time.Second, c.op))
		t.Logf("%-40s %7.0f ops/s  p50 %.2f ms  p99 %.2f ms", c.name, r.OpsPerSec, r.P50Ms, r.P99Ms)
	}
}
