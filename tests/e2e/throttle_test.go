//go:build integration

package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"shelf/internal/app"
	"shelf/tests/testkit"
)

// Throttling (docs/design/throttle.md): password guesses are throttled
// per login by every instance together, and every mail counts against one
// limit per address. These tests send everything from one address
// (loopback), so the per-address tier (5 by default) is the one that
// bites.

// throttleEnv turns the throttle on at its defaults (the tests' testEnv
// leaves it at them too; said here so the numbers below read true).
var throttleEnv = map[string]string{
	"SHELF_THROTTLE_PER_ADDRESS": "5",
	"SHELF_THROTTLE_PER_LOGIN":   "50",
	"SHELF_THROTTLE_WINDOW":      "15m",
}

// hashes is how many argon2id runs (a Verify, a Burn for an unknown login,
// a Hash) an app's hasher has made: every run waits for a slot once, and
// the wait is observed in the hash-queue histogram.
func hashes(t *testing.T, a *app.App) uint64 {
	t.Helper()
	var m dto.Metric
	if err := a.Metrics.HashWait.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// guesses sends n wrong requests at once, alternating between two
// instances, and returns how many argon2id runs they cost and their
// answers by status.
func guesses(t *testing.T, apps [2]*app.App, apis [2]*testkit.API, n int, send func(api *testkit.API) *testkit.Response) (uint64, map[int][]*testkit.Response) {
	t.Helper()
	before := hashes(t, apps[0]) + hashes(t, apps[1])
	rs := burst(n, func(i int) *testkit.Response { return send(apis[i%2]) })
	byStatus := map[int][]*testkit.Response{}
	for _, r := range rs {
		byStatus[r.StatusCode] = append(byStatus[r.StatusCode], r)
	}
	return hashes(t, apps[0]) + hashes(t, apps[1]) - before, byStatus
}

// throttled checks that every answer of rs is 429 too_many_attempts with a
// Retry-After in whole seconds, no more than the window, and returns the
// problem's detail (the same for every one).
func throttled(t *testing.T, what string, rs []*testkit.Response) string {
	t.Helper()
	detail := ""
	for _, r := range rs {
		p := r.Problem(t)
		secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if p.Code != "too_many_attempts" || err != nil || secs < 1 || secs > 15*60 {
			t.Fatalf("%s: %d %s Retry-After %q, want 429 too_many_attempts with 1..900 seconds", what, r.StatusCode, r.Body, r.Header.Get("Retry-After"))
		}
		detail = strings.Split(p.Detail, " Try again in ")[0]
	}
	return detail
}

// TestThrottleHoldsAcrossTwoInstances: 64 wrong passwords at once against
// one account, half through each of two instances on one keyspace, run at
// most 5 argon2id verifications (the per-address limit); all others are
// refused 429 with Retry-After before any verification. The same 64
// against a login that names no account: at most 5 runs (Burn), and
// answers of the same statuses and words.
func TestThrottleHoldsAcrossTwoInstances(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	a0, api0 := newTestApp(t, db, throttleEnv)
	a1, api1 := newTestApp(t, db, throttleEnv)
	apps, apis := [2]*app.App{a0, a1}, [2]*testkit.API{api0, api1}
	n := name("guessed")
	mustSignup(t, api0, n, n+"@example.org")

	known, byStatus := guesses(t, apps, apis, 64, func(api *testkit.API) *testkit.Response { return login(api, n, "wrong guess 1") })
	t.Logf("known login: %d argon2id runs for 64 guesses; answers %d×401, %d×429", known, len(byStatus[401]), len(byStatus[429]))
	if known > 5 || len(byStatus[http.StatusUnauthorized]) > 5 || len(byStatus[http.StatusUnauthorized])+len(byStatus[http.StatusTooManyRequests]) != 64 {
		t.Fatalf("64 parallel guesses at one account on two instances: %d verifications, answers %v; want at most 5, the rest 429", known, statuses(byStatus))
	}
	knownWords := throttled(t, "a refused guess at a known login", byStatus[http.StatusTooManyRequests])

	nobody := name("nobody")
	unknown, byStatus := guesses(t, apps, apis, 64, func(api *testkit.API) *testkit.Response { return login(api, nobody, "wrong guess 1") })
	t.Logf("unknown login: %d argon2id runs for 64 guesses; answers %d×401, %d×429", unknown, len(byStatus[401]), len(byStatus[429]))
	if unknown > 5 || len(byStatus[http.StatusUnauthorized]) > 5 || len(byStatus[http.StatusUnauthorized])+len(byStatus[http.StatusTooManyRequests]) != 64 {
		t.Fatalf("64 parallel guesses at an unknown login: %d runs, answers %v; want at most 5, the rest 429", unknown, statuses(byStatus))
	}
	if words := throttled(t, "a refused guess at an unknown login", byStatus[http.StatusTooManyRequests]); words != knownWords {
		t.Fatalf("refusals differ: known %q, unknown %q", knownWords, words)
	}

	// Refused attempts count for nothing, so the guesses that were let
	// through are all that count: fill the budget one by one, and then the
	// right password from this address is refused too, before it is
	// checked, until the window ends.
	for i := range 6 {
		r := login(apis[i%2], n, "wrong guess 2")
		if r.StatusCode == http.StatusTooManyRequests {
			break
		}
		if r.StatusCode != http.StatusUnauthorized || i == 5 {
			t.Fatalf("wrong guess %d after the burst: %d %s", i, r.StatusCode, r.Body)
		}
	}
	throttled(t, "the right password while throttled", []*testkit.Response{login(api1, n, testPassword)})
}

// TestPasswordChangeIsThrottled: with a stolen session, PUT
// /v1/users/{id}/password is no free oracle for the current password: 64
// wrong ones at once over two instances verify at most 5, the rest are
// 429 with Retry-After.
func TestPasswordChangeIsThrottled(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	a0, api0 := newTestApp(t, db, throttleEnv)
	a1, api1 := newTestApp(t, db, throttleEnv)
	n := name("oracle")
	u := mustSignup(t, api0, n, n+"@example.org")
	token := mustLogin(t, api0, n).Token
	apps, apis := [2]*app.App{a0, a1}, [2]*testkit.API{api0.As(token), api1.As(token)}
	ran, byStatus := guesses(t, apps, apis, 64, func(api *testkit.API) *testkit.Response {
		return api.Send(http.MethodPut, "/v1/users/"+u.ID+"/password",
			map[string]string{"currentPassword": "wrong guess 1", "newPassword": "a quite new passphrase"})
	})
	t.Logf("password change: %d argon2id runs for 64 guesses; answers %v", ran, statuses(byStatus))
	if ran > 5 || len(byStatus[http.StatusUnauthorized]) > 5 || len(byStatus[http.StatusUnauthorized])+len(byStatus[http.StatusTooManyRequests]) != 64 {
		t.Fatalf("64 parallel wrong current passwords: %d verifications, answers %v; want at most 5, the rest 429", ran, statuses(byStatus))
	}
	throttled(t, "a refused current password", byStatus[http.StatusTooManyRequests])
}

// TestFailuresAreCountedOneByOne: the 6th wrong password from one address
// is refused, with the same answer for a known and an unknown login; a
// right password clears its own attempt, so the owner's successes never
// count against them.
func TestFailuresAreCountedOneByOne(t *testing.T) {
	t.Parallel()
	_, api := newTestApp(t, testkit.PackageDB(t), throttleEnv)
	n := name("counted")
	mustSignup(t, api, n, n+"@example.org")
	for range 3 {
		mustLogin(t, api, n) // successes: no count
	}
	for _, who := range []string{n, name("nobody")} {
		for i := range 5 {
			if r := login(api, who, "wrong guess 1"); r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%s: wrong guess %d: %d %s, want 401", who, i+1, r.StatusCode, r.Body)
			}
		}
		throttled(t, who+": the 6th wrong guess", []*testkit.Response{login(api, who, "wrong guess 1")})
	}
	// The email is a login of its own: its budget is its own too, so a
	// refusal at the username says nothing of which email is the
	// account's.
	if r := login(api, n+"@example.org", testPassword); r.StatusCode != http.StatusCreated {
		t.Fatalf("login by email while the username is throttled: %d %s", r.StatusCode, r.Body)
	}
}

// statuses counts answers by status, for messages.
func statuses(byStatus map[int][]*testkit.Response) map[int]int {
	out := map[int]int{}
	for s, rs := range byStatus {
		out[s] = len(rs)
	}
	return out
}

// TestEveryMailCountsAgainstTheAddressLimit: eight changes of email to one
// address mail it four times, shared by two instances: a change's
// verification mail counts like any other, and verification links take
// all but the last of the limit's 5 (kept for a mail that recovers an
// account). And a mail to an
// address that is not verified carries no text the sender chose: the
// display name and the username stay out of it. The
// account's own address is verified first: eight changes mail it eight
// notices, which the limit holds back only for an address that is not
// verified (TestNoticesNoStrangerCanAim).
func TestEveryMailCountsAgainstTheAddressLimit(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	env := map[string]string{"SHELF_MAIL_PER_HOUR": "5"}
	_, api0 := newMailApp(t, db, mp, env)
	_, api1 := newMailApp(t, db, mp, env)
	n := name("aimer")
	home, target := n+"@example.org", name("target")+"@example.org"
	u := mustSignup(t, api0, n, home)
	verify := testkit.TokenIn(t, mp.WaitFor(t, home, 1)[0].Text, "verify")
	if r := api0.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": verify}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("verifying %s: %d %s", home, r.StatusCode, r.Body)
	}
	bait := "URGENT your bank account is locked call 555 0100"
	token := mustLogin(t, api0, n).Token
	as := [2]*testkit.API{api0.As(token), api1.As(token)}
	if r := as[0].Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"displayName": bait}); r.StatusCode != http.StatusOK {
		t.Fatalf("display name: %d %s", r.StatusCode, r.Body)
	}
	for i := range 8 {
		for _, email := range []string{target, home} {
			if r := as[i%2].Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"email": email, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
				t.Fatalf("change %d of email to %s: %d %s", i, email, r.StatusCode, r.Body)
			}
		}
	}
	mp.WaitFor(t, target, 4)
	got := mp.Messages(t, target)
	t.Logf("eight changes of email to one address mailed it %d times (limit 5, 4 for verification links)", len(got))
	if len(got) != 4 {
		t.Fatalf("eight changes of email to %s mailed it %d times; want the limit's 4 for verification links", target, len(got))
	}
	for _, m := range got {
		if strings.Contains(m.Text, "URGENT") || strings.Contains(m.Text, n) {
			t.Fatalf("a mail to an unverified address carries the sender's words:\n%s", m.Text)
		}
	}
}
