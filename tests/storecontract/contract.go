// Package storecontract holds the store-contract suites: the behaviours of
// the stores the fault explorer (tests/faults) takes for granted, written
// once and run against both implementations, tests/memstore in the fast
// lane (tests/memstore/contract_test.go) and the repository on a real
// Cassandra node (repository/contract_test.go). The explorer's verdicts are
// only as good as memstore's likeness to Cassandra; a check here that the
// node passes and the fake fails is a drift to fix in the fake.
//
// Each store has a list of checks (ClaimChecks, UserChecks ...). A check
// covers what the store has of: conditional writes decided once (of N
// concurrent compare-and-sets exactly one applies, a second identical one
// does not, and the answer reports the row as it stands), write timestamps
// (an older write loses to a newer one in either order, and a delete wins
// a tie, Cassandra's rule), TTLs (a row written with one is gone after it)
// and paging (the documented order, a cursor resuming just after the last
// row, no row twice or missing, the page size honoured).
package storecontract

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Clock is the time a store under test runs on.
type Clock struct {
	// Now is the clock the store writes by (its TTLs and write timestamps).
	Now func() time.Time
	// Pass lets d go by for the store: the fake moves its clock, a real
	// node is waited for. Checks pass at most TTLPassed at a time.
	Pass func(d time.Duration)
}

// RealClock is a real node's: the wall clock, waited on.
var RealClock = Clock{Now: time.Now, Pass: time.Sleep}

// TTL is the lease or time to live the checks write with, and a check
// expects the row alive until it lets TTLPassed go by.
//
// A real node keeps a row written with a TTL of n seconds for between n-1
// and n seconds: the expiry is counted from the whole second the write
// came in. And the stores turn what is left of a lease into whole seconds
// rounding down (the sessions' and tokens' TTL is their expiry minus now),
// so TTL 5 s may be written as 4 and the row lives at least 3 s after its
// write, long enough for the next statements of the check under -race on
// two busy cores (a TTL of 1 s may be written as 1 and gone a millisecond
// after the write). TTLPassed outlasts the longest a row may live, 5 s.
const (
	TTL       = 5 * time.Second
	TTLPassed = 5500 * time.Millisecond
)

// Long is a lease or TTL no check outlives.
const Long = time.Hour

// Open gives a check a store: on a fresh fake, or on a keyspace other
// checks share (so every check uses keys of its own: see Key).
type Open[S any] func(t testing.TB) (S, Clock)

// Check is one behaviour of a store's contract.
type Check[S any] struct {
	Name string
	Run  func(t testing.TB, s S, c Clock)
}

// Run runs every check as a subtest of its own, in parallel (the checks
// of a real node wait out TTLs side by side).
func Run[S any](t *testing.T, open Open[S], checks []Check[S]) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			s, clock := open(t)
			c.Run(t, s, clock)
		})
	}
}

// RunInOrder runs the checks one after another, each on a store open
// gives it: for the stores whose reads span a table (the suspended list,
// the expiry queue, the outbox), where checks sharing a keyspace must not
// see each other's rows. Each such check leaves the table as it found it.
func RunInOrder[S any](t *testing.T, open Open[S], checks []Check[S]) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) {
			s, clock := open(t)
			c.Run(t, s, clock)
		})
	}
}

var seq atomic.Int64

// Key is a key no other check or run uses: checks on a real node share
// its keyspace.
func Key(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), seq.Add(1))
}

// At is a time a store keeps exactly: Cassandra's timestamps are whole
// milliseconds, UTC.
func At(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

// concurrently runs fn(i) for i in [0, n) at once and returns the results
// in order (checks assert on them afterwards, in their own goroutine).
func concurrently[R any](n int, fn func(i int) R) []R {
	out := make([]R, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			out[i] = fn(i)
		}()
	}
	for range n {
		<-done
	}
	return out
}

// racers is how many callers race for one compare-and-set.
const racers = 8

// pages reads a list page by page, each page resuming after the last row
// of the page before (nil: from the start), and checks the whole: the
// rows' keys in want's order, none twice or missing, no page longer than
// limit, and only a short page ending the list.
func pages[T any](t testing.TB, limit int, read func(last *T, limit int) ([]T, error), key func(T) string, want []string) {
	t.Helper()
	var got []string
	var last *T
	for range len(want) + 2 {
		page, err := read(last, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > limit {
			t.Fatalf("a page of %d rows, limit %d", len(page), limit)
		}
		for _, r := range page {
			got = append(got, key(r))
		}
		if len(page) < limit {
			break
		}
		last = &page[len(page)-1]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paged by %d:\n got %v\nwant %v", limit, got, want)
	}
}

// race runs racers compare-and-sets at once (cas(i) is racer i's) and
// returns the racer whose write applied, failing unless exactly one did.
func race(t testing.TB, what string, cas func(i int) (bool, error)) int {
	t.Helper()
	type answer struct {
		ok  bool
		err error
	}
	answers := concurrently(racers, func(i int) answer {
		ok, err := cas(i)
		return answer{ok, err}
	})
	winner := -1
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("%s %d: %v", what, i, a.err)
		}
		if a.ok {
			if winner >= 0 {
				t.Fatalf("%ss %d and %d both applied", what, winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d %ss applied", racers, what)
	}
	return winner
}
