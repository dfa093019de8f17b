//go:build integration

package e2e

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// lwtNames are the lightweight transactions a signup (and its undo) runs.
var lwtNames = []string{
	"usernames.claim", "emails.claim", "users.create",
	"usernames.commit", "emails.commit", "users.activate",
	"usernames.release", "emails.release", "users.discard",
}

// lostAnswer is what Cassandra says when a write's outcome is unknown.
var lostAnswer = &gocql.RequestErrWriteTimeout{WriteType: "CAS"}

// onceFault fails the first run of one statement at one point.
func onceFault(stmt string, at faultinject.Point) faultinject.Func {
	var mu sync.Mutex
	done := false
	return func(name string, point faultinject.Point) error {
		mu.Lock()
		defer mu.Unlock()
		if name == stmt && point == at && !done {
			done = true
			return lostAnswer
		}
		return nil
	}
}

// TestSignupResolvesAmbiguousAnswers loses the answer of each lightweight
// transaction of a signup once, after it applied (and, separately, before
// it was sent, as a timeout that never reached Cassandra): every signup must
// still end as it would have (U5), never guessed.
func TestSignupResolvesAmbiguousAnswers(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, nil)
	for _, stmt := range lwtNames[:6] {
		for _, at := range []faultinject.Point{faultinject.AfterLWT, faultinject.BeforeLWT} {
			faults(a).Set(onceFault(stmt, at))
			u, e := name("amb"), name("amb")+"@example.org"
			mustSignup(t, api, u, e)
			mustLogin(t, api, u)
			mustLogin(t, api, e)
		}
	}
	// The undo path: a signup that loses its username releases its email
	// even when the release's answer is lost.
	taken := name("amb")
	mustSignup(t, api, taken, name("amb")+"@example.org")
	for _, stmt := range []string{"emails.release", "users.discard"} {
		faults(a).Set(onceFault(stmt, faultinject.AfterLWT))
		e := name("amb") + "@example.org"
		if r := signup(api, taken, e); r.StatusCode != http.StatusConflict {
			t.Fatalf("%s: %d %s", stmt, r.StatusCode, r.Body)
		}
		faults(a).Set(nil)
		mustSignup(t, api, name("amb"), e) // the email was released
	}
	faults(a).Set(nil)
	checkClaimsConsistent(t, db)
}

// TestFaultStormKeepsCountsEqual runs concurrent, colliding signups while
// a write timeout is drawn one time in three before every attempt of every
// statement (the attempt is not sent) and after it (its answer is lost
// once it applied): the number of 201 answers equals the number of
// accounts, and the claims agree (U1-U5).
func TestFaultStormKeepsCountsEqual(t *testing.T) {
	t.Parallel()
	const lease = 3 * time.Second
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, map[string]string{"SHELF_CLAIM_LEASE": lease.String()})
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	faults(a).Set(func(string, faultinject.Point) error {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(3) == 0 {
			return lostAnswer
		}
		return nil
	})
	names := make([]string, 12)
	for i := range names {
		names[i] = name("storm")
	}
	created := 0
	var cmu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				u := names[(w+i)%len(names)]
				e := names[(w*3+i)%len(names)] + "@example.org"
				r := signup(api, u, e)
				switch r.StatusCode {
				case http.StatusCreated:
					cmu.Lock()
					created++
					cmu.Unlock()
				case http.StatusConflict:
				case http.StatusServiceUnavailable:
					// A transaction whose outcome stayed unknown (answers
					// lost, and the row read back not saying): before
					// activation the signup undid itself; an activation
					// keeps everything, its account active or expiring
					// with the lease (freeDeadClaims below).
				default:
					t.Errorf("%s/%s: %d %s", u, e, r.StatusCode, r.Body)
				}
			}
		}()
	}
	wg.Wait()
	faults(a).Set(nil)
	time.Sleep(lease + time.Second)
	if accounts := checkClaimsConsistent(t, db); accounts != created {
		t.Fatalf("%d accounts, %d signups answered 201", accounts, created)
	}
	if freed := freeDeadClaims(t, api, db); freed > 0 {
		t.Logf("%d names left by signups that died before activation were taken over", freed)
		checkClaimsConsistent(t, db)
	}
	if created == 0 {
		t.Fatal("no signup succeeded; the storm proves nothing")
	}
}

var errCrash = errors.New("the process died here (test hook)")

// TestCrashedSignupFreesNamesAfterLease stops signups after claiming and
// after committing, as a crash would: the names stay blocked while the lease
// runs and are free once it has passed (U4).
//
// A row written with the lease lives at least a second less than it (its
// TTL is whole seconds, counted from the whole second of the write): the
// names are certainly blocked only while less than that has passed since
// the crashed signup began, which a 5 s lease leaves room for under -race
// (with 2 s, a signup's own writes could outlast what the rows had left).
func TestCrashedSignupFreesNamesAfterLease(t *testing.T) {
	t.Parallel()
	const lease = 5 * time.Second
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, map[string]string{"SHELF_CLAIM_LEASE": lease.String()})
	for _, step := range []string{"after claims", "after commit"} {
		u, e := name("crash"), name("crash")+"@example.org"
		if step == "after claims" {
			a.Accounts.Hooks.AfterClaims = func() error { return errCrash }
		} else {
			a.Accounts.Hooks.AfterCommit = func() error { return errCrash }
		}
		started := time.Now()
		if r := signup(api, u, e); r.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%s: crashed signup answered %d %s", step, r.StatusCode, r.Body)
		}
		crashed := time.Now()
		a.Accounts.Hooks.AfterClaims, a.Accounts.Hooks.AfterCommit = nil, nil
		r := signup(api, u, e)
		if blocked := time.Since(started) < lease-time.Second; blocked && r.StatusCode != http.StatusConflict {
			t.Fatalf("%s: names free before the lease ran out: %d %s", step, r.StatusCode, r.Body)
		} else if !blocked {
			t.Logf("%s: the second signup ended %v after the first began: past what the rows surely had left, not checked", step, time.Since(started))
		}
		if r := login(api, u, testPassword); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: the crashed signup's account logs in: %d", step, r.StatusCode)
		}
		time.Sleep(time.Until(crashed.Add(lease + time.Second)))
		mustSignup(t, api, u, e)
		mustLogin(t, api, u)
		mustLogin(t, api, e)
	}
	checkClaimsConsistent(t, db)
}

// TestCommittedClaimsOutliveTheLease: with a 4 s lease, an account still
// logs in by both names after 6 s, so commit rewrote every column without
// TTL (U3). (With 2 s, the pending row, written with a TTL of at least a
// second less, could expire before a signup under -race activated it.)
func TestCommittedClaimsOutliveTheLease(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	_, api := newTestApp(t, db, map[string]string{"SHELF_CLAIM_LEASE": "4s"})
	u, e := name("lease"), name("lease")+"@example.org"
	created := mustSignup(t, api, u, e)
	time.Sleep(6 * time.Second)
	if got := mustLogin(t, api, u).User.ID; got != created.ID {
		t.Fatalf("login by username found %s, want %s", got, created.ID)
	}
	if got := mustLogin(t, api, e).User.ID; got != created.ID {
		t.Fatalf("login by email found %s, want %s", got, created.ID)
	}
	if r := api.Get("/v1/users/" + created.ID); r.StatusCode != http.StatusOK {
		t.Fatalf("the account expired: %d", r.StatusCode)
	}
	checkClaimsConsistent(t, db)
}
