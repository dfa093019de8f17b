//go:build integration

package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// hasTaken reports whether a 409 names field with code taken.
func hasTaken(t *testing.T, r *testkit.Response, field string) bool {
	t.Helper()
	p := r.Problem(t)
	for _, f := range p.Errors {
		if f.Field == field && f.Code == "taken" {
			return true
		}
	}
	return false
}

// TestConcurrentSignupsForOneUsername: 64 signups for one username with
// distinct emails, all at once: exactly one 201, the rest 409 naming
// username (U1), and the same for one email.
func TestConcurrentSignupsForOneUsername(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, nil)
	for _, shared := range []string{"username", "email"} {
		const n = 64
		username, email := name("race"), name("race")+"@example.org"
		codes := burst(n, func(i int) *testkit.Response {
			u, e := username, fmt.Sprintf("r%d-%s", i, email)
			if shared == "email" {
				u, e = fmt.Sprintf("%s-%d", username, i), email
			}
			return signup(api, u, e)
		})
		created := 0
		for _, r := range codes {
			switch {
			case r.StatusCode == http.StatusCreated:
				created++
			case r.StatusCode == http.StatusConflict && hasTaken(t, r, shared):
			default:
				t.Errorf("shared %s: %d %s", shared, r.StatusCode, r.Body)
			}
		}
		if created != 1 {
			t.Fatalf("shared %s: %d signups answered 201, want exactly 1", shared, created)
		}
	}
	if accounts := checkClaimsConsistent(t, db); accounts != 2 {
		t.Fatalf("%d active accounts, want 2", accounts)
	}
}

// TestCrossedSignups races u1/e1, u2/e1 and u1/e2 at once, 100 rounds: no
// account ever holds one name without the other (U2), every 201 logs in by
// both names (U3), and once the lease has passed no claim is left without
// a committed, active owner (U4): no signup dies here (each answers 201 or
// 409), so not even a dead signup's committed claim, which
// checkClaimsConsistent lets pass, may be left.
func TestCrossedSignups(t *testing.T) {
	t.Parallel()
	// Long enough for a pending account (its TTL whole seconds, living at
	// least a second less than the lease) to be activated under -race.
	const lease = 5 * time.Second
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, map[string]string{"SHELF_CLAIM_LEASE": lease.String()})
	created := 0
	for round := 0; round < 100; round++ {
		u1, u2 := name("usr"), name("usr")
		e1, e2 := name("mail")+"@example.org", name("mail")+"@example.org"
		pairs := [][2]string{{u1, e1}, {u2, e1}, {u1, e2}}
		results := make([]*testkit.Response, len(pairs))
		var wg sync.WaitGroup
		for i, p := range pairs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = signup(api, p[0], p[1])
			}()
		}
		wg.Wait()
		for i, r := range results {
			switch r.StatusCode {
			case http.StatusCreated:
				created++
				mustLogin(t, api, pairs[i][0])
				mustLogin(t, api, pairs[i][1])
			case http.StatusConflict:
			default:
				t.Fatalf("round %d %v: %d %s", round, pairs[i], r.StatusCode, r.Body)
			}
		}
		// u1/e1 conflicts with both others, so at most two can win; and
		// someone always wins: a lone signup that lost both names lost them
		// to a winner.
		wins := 0
		for _, r := range results {
			if r.StatusCode == http.StatusCreated {
				wins++
			}
		}
		if wins == 0 || (results[0].StatusCode == http.StatusCreated && wins > 1) {
			t.Fatalf("round %d: impossible outcome %d/%d/%d", round, results[0].StatusCode, results[1].StatusCode, results[2].StatusCode)
		}
	}
	time.Sleep(lease + time.Second)
	if accounts := checkClaimsConsistent(t, db); accounts != created {
		t.Fatalf("%d active accounts, %d signups answered 201", accounts, created)
	}
	if dead := freeDeadClaims(t, api, db); dead != 0 {
		t.Fatalf("%d claims left to accounts that are gone, though every signup answered 201 or 409", dead)
	}
}
