//go:build integration

package e2e

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/internal/app"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// The late-landing rule (docs/design/faults.md): any attempt of any write
// may land at any later time, and any answer may be lost. These tests hold
// real statements back (faultinject.ErrLandLate: the attempt answers a
// timeout and reaches Cassandra later, as from a hung node's queue) or make
// another write land before the read-back, against the real node.

// landLateOnce holds back the first attempt of one statement.
func landLateOnce(stmt string) faultinject.Func {
	var once sync.Once
	return func(name string, at faultinject.Point) error {
		fire := false
		if name == stmt && at == faultinject.BeforeLWT {
			once.Do(func() { fire = true })
		}
		if fire {
			return faultinject.ErrLandLate
		}
		return nil
	}
}

// TestSignupWhoseAttemptLandsLateIsComplete holds back the first attempt of
// each of a signup's lightweight transactions; it lands after the SERIAL
// read-back, just before the retry, whose condition then fails. The signup
// must still answer 201 and be whole (U1-U3): a retry whose failed
// condition were taken for the outcome would answer a late activation 503
// signup_expired with both claims released from an active account, and a
// late create 500 "id already exists" (tests/storm's hung node lands
// attempts so).
func TestSignupWhoseAttemptLandsLateIsComplete(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, nil)
	for _, stmt := range []string{"usernames.claim", "emails.claim", "users.create", "usernames.commit", "emails.commit", "users.activate"} {
		faults(a).Set(landLateOnce(stmt))
		u, e := name("late"), name("late")+"@example.org"
		if r := signup(api, u, e); r.StatusCode != http.StatusCreated {
			t.Fatalf("%s landed late: %d %s", stmt, r.StatusCode, r.Body)
		}
		faults(a).WaitLate()
		faults(a).Set(nil)
		mustLogin(t, api, u)
		mustLogin(t, api, e)
	}
	checkClaimsConsistent(t, db)
}

// TestActivationOfUnknownOutcomeIsNeverUndone: the first activation
// attempt is held back and every retry's answer is lost, so the signup
// cannot learn its outcome: it answers 503 and undoes nothing. When the
// held attempt lands, the account is active and whole: both claims
// committed and naming it, login by both names.
func TestActivationOfUnknownOutcomeIsNeverUndone(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, nil)
	var mu sync.Mutex
	first := true
	faults(a).Set(func(stmt string, at faultinject.Point) error {
		if stmt != "users.activate" || at != faultinject.BeforeLWT {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return faultinject.ErrLandAfterAnswer
		}
		return lostAnswer // never sent, answer lost: still ambiguous
	})
	u, e := name("unk"), name("unk")+"@example.org"
	r := signup(api, u, e)
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a signup whose activation stays unknown: %d %s", r.StatusCode, r.Body)
	}
	faults(a).WaitLate()
	faults(a).Set(nil)
	mustLogin(t, api, u)
	mustLogin(t, api, e)
	if n := checkClaimsConsistent(t, db); n != 1 {
		t.Fatalf("%d active accounts, want the one whose activation landed", n)
	}
}

// anotherWriteFirst loses the answer of the first run of stmt after it
// applied, and lets another change of the same account land before the
// read-back (docs/design/lwt-rows.md): the row's tag is then someone
// else's, so only the outcome "unknown" is honest.
func anotherWriteFirst(t *testing.T, a *app.App, stmt, userID string) faultinject.Func {
	var once sync.Once
	return func(name string, at faultinject.Point) error {
		fire := false
		if name == stmt && at == faultinject.AfterLWT {
			once.Do(func() { fire = true })
		}
		if !fire {
			return nil
		}
		// Written to the row as any other change of it is (a compare-and-
		// set on its version), under no session: the write under fault
		// may have ended every one.
		ctx, users := context.Background(), repository.NewUsers(a.DB)
		u, err := users.GetSerial(ctx, userID)
		if err == nil {
			u.DisplayName, u.Version = "Changed Meanwhile", u.Version+1
			var applied bool
			if applied, err = users.Update(ctx, u); err == nil && !applied {
				err = errors.New("lost its compare-and-set")
			}
		}
		if err != nil {
			t.Errorf("the other change: %v", err)
		}
		return lostAnswer
	}
}

// renamed is an account whose rename ran under a fault.
type renamed struct {
	db       *testkit.DB
	a        *app.App
	api      *testkit.API
	me       userBody
	tok      string
	old      string
	next     string
	answered *testkit.Response
}

// renameUnder signs up an account and renames it while the faults made for
// its id are in force; they are off again when it returns.
func renameUnder(t *testing.T, faultsFor func(a *app.App, userID string) faultinject.Func) renamed {
	t.Helper()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, nil)
	old := name("ren")
	me := mustSignup(t, api, old, old+"@example.org")
	tok := mustLogin(t, api, old).Token
	next := name("ren")
	faults(a).Set(faultsFor(a, me.ID))
	r := api.As(tok).Send(http.MethodPatch, "/v1/users/"+me.ID, map[string]string{"username": next, "currentPassword": testPassword})
	faults(a).Set(nil)
	return renamed{db: db, a: a, api: api, me: me, tok: tok, old: old, next: next, answered: r}
}

// TestRenameWhoseAnswerIsLostBehindAnotherWrite: the rename applied, its
// answer was lost, and another change landed before the read-back. It
// answers 503, keeps the claim, and the retry answers 200. Were the
// re-run's failed condition taken for "not applied", the rename would
// release its own committed claim and answer 200, leaving the account
// holding a name nobody had claimed (U1).
func TestRenameWhoseAnswerIsLostBehindAnotherWrite(t *testing.T) {
	t.Parallel()
	rn := renameUnder(t, func(a *app.App, id string) faultinject.Func { return anotherWriteFirst(t, a, "users.update", id) })
	db, api, me, tok, old, next, r := rn.db, rn.api, rn.me, rn.tok, rn.old, rn.next, rn.answered
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("rename of unknown outcome: %d %s", r.StatusCode, r.Body)
	}
	var now userBody
	api.Get("/v1/users/"+me.ID).JSON(t, &now)
	if now.Username != next || now.DisplayName != "Changed Meanwhile" {
		t.Fatalf("the account is %+v; the rename and the other change both applied", now)
	}
	claimOf := func(key string) *claimRow {
		for _, c := range allClaims(t, db, "usernames") {
			if c.Key == key {
				return &c
			}
		}
		return nil
	}
	if c := claimOf(next); c == nil || c.UserID != me.ID || c.State != "committed" {
		t.Fatalf("the account holds %q but its claim is %+v (U1)", next, c)
	}
	if r := signup(api, next, name("thief")+"@example.org"); r.StatusCode != http.StatusConflict {
		t.Fatalf("someone else signed up with the account's name: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(tok).Send(http.MethodPatch, "/v1/users/"+me.ID, map[string]string{"username": next, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("the retry: %d %s", r.StatusCode, r.Body)
	}
	mustLogin(t, api, next)
	// The old name is held for the account (docs/design/renames.md).
	if r := signup(api, old, name("next")+"@example.org"); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the name the rename left: %d %s", r.StatusCode, r.Body)
	}
	checkClaimsConsistent(t, db)
}

// TestPasswordChangeWhoseAnswerIsLostStillEndsOtherSessions: the change
// applied, its answer was lost behind another write. It answers 503 and
// the other sessions end at once; a retry loop that checked the old
// password against the new hash would answer 401, and the other sessions
// would live on.
func TestPasswordChangeWhoseAnswerIsLostStillEndsOtherSessions(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, nil)
	n := name("pw")
	me := mustSignup(t, api, n, n+"@example.org")
	tok, other := mustLogin(t, api, n).Token, mustLogin(t, api, n).Token
	faults(a).Set(anotherWriteFirst(t, a, "users.update", me.ID))
	r := api.As(tok).Send(http.MethodPut, "/v1/users/"+me.ID+"/password",
		map[string]string{"currentPassword": testPassword, "newPassword": "a brand new secret"})
	faults(a).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("password change of unknown outcome: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(other).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another session outlived a password change that applied: %d", r.StatusCode)
	}
	if r := login(api, n, "a brand new secret"); r.StatusCode != http.StatusCreated {
		t.Fatalf("the new password: %d %s", r.StatusCode, r.Body)
	}
}

// neverSent loses every attempt of stmt before it is sent: the caller
// cannot learn the outcome, as when its process dies between two writes.
func neverSent(stmt string) faultinject.Func {
	return func(name string, at faultinject.Point) error {
		if name == stmt && at == faultinject.BeforeLWT {
			return lostAnswer
		}
		return nil
	}
}

// TestRenameStoppedAfterCommittingIsFinishedByItsRetry: a rename whose
// account update never got through (unknown outcome, 503) leaves its new
// name committed to the account. While that update may still land, nobody
// else gets the name; the owner's retry adopts the claim and completes
// (rather than losing to its own claim, 409 concurrent_change for good).
// U1, U4 (docs/design/renames.md).
func TestRenameStoppedAfterCommittingIsFinishedByItsRetry(t *testing.T) {
	t.Parallel()
	rn := renameUnder(t, func(*app.App, string) faultinject.Func { return neverSent("users.update") })
	db, api, me, tok, old, next, r := rn.db, rn.api, rn.me, rn.tok, rn.old, rn.next, rn.answered
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a rename whose update never got through: %d %s", r.StatusCode, r.Body)
	}
	if r := signup(api, next, name("other")+"@example.org"); r.StatusCode != http.StatusConflict {
		t.Fatalf("someone took a name whose rename may still land: %d %s", r.StatusCode, r.Body)
	}
	if r := api.As(tok).Send(http.MethodPatch, "/v1/users/"+me.ID, map[string]string{"username": next, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("the owner's retry: %d %s", r.StatusCode, r.Body)
	}
	mustLogin(t, api, next)
	if r := login(api, old, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the old name still logs in: %d", r.StatusCode)
	}
	// The old name is held for the account (docs/design/renames.md).
	if r := signup(api, old, name("other")+"@example.org"); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the name the rename left: %d %s", r.StatusCode, r.Body)
	}
	checkClaimsConsistent(t, db)
}

// TestAbandonedNameIsFreedOnceTheAccountMovesOn: the owner never retries
// the rename but changes something else. From then on the stopped rename
// can never apply (it compares-and-sets on the version it read), so its
// committed claim is an orphan and the next claimant takes it over.
func TestAbandonedNameIsFreedOnceTheAccountMovesOn(t *testing.T) {
	t.Parallel()
	rn := renameUnder(t, func(*app.App, string) faultinject.Func { return neverSent("users.update") })
	db, api, me, tok, old, next := rn.db, rn.api, rn.me, rn.tok, rn.old, rn.next
	if r := api.As(tok).Send(http.MethodPatch, "/v1/users/"+me.ID, map[string]string{"displayName": "Moved On"}); r.StatusCode != http.StatusOK {
		t.Fatalf("another change: %d %s", r.StatusCode, r.Body)
	}
	mustSignup(t, api, next, name("taker")+"@example.org")
	mustLogin(t, api, old)
	checkClaimsConsistent(t, db)
}

// TestAbandonedNameIsFreedAMinuteOn: the owner never retries the rename
// and changes nothing. Within a minute of its commit the name is taken
// (the rename may be in flight); a signup on a process a minute on
// (domain.StaleClaimAge) fences the owner's account and takes the name
// over, and the owner keeps the old name (U1, U4).
func TestAbandonedNameIsFreedAMinuteOn(t *testing.T) {
	t.Parallel()
	rn := renameUnder(t, func(*app.App, string) faultinject.Func { return neverSent("users.update") })
	db, api, old, next := rn.db, rn.api, rn.old, rn.next
	if r := signup(api, next, name("early")+"@example.org"); r.StatusCode != http.StatusConflict {
		t.Fatalf("someone took a name whose rename may still land: %d %s", r.StatusCode, r.Body)
	}
	_, later := newTestApp(t, db, nil, app.ClockOffset(domain.StaleClaimAge+time.Second))
	mustSignup(t, later, next, name("taker")+"@example.org")
	mustLogin(t, api, old)
	checkClaimsConsistent(t, db)
}
