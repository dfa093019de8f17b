//go:build integration

package e2e

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain/accounts"
	"shelf/internal/app"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// countTouches counts the sightings a's store sends, and holds them back
// (faultinject.ErrHoldWrite: they land at LandHeld) while hold is set.
func countTouches(a *app.App, hold *atomic.Bool) *atomic.Int64 {
	var n atomic.Int64
	faults(a).Set(func(name string, at faultinject.Point) error {
		if name != "sessions.touch" || at != faultinject.BeforeWrite {
			return nil
		}
		n.Add(1)
		if hold != nil && hold.Load() {
			return faultinject.ErrHoldWrite
		}
		return nil
	})
	return &n
}

// sessionCells reads a session's row as Cassandra holds it: whether there
// is one, its user_id and its last_seen.
func sessionCells(t *testing.T, db *testkit.DB, token string) (found bool, userID string, lastSeen time.Time) {
	t.Helper()
	err := db.Session.ContextQuery(context.Background(), `SELECT user_id, last_seen FROM sessions WHERE token_hash = ?`, nil).
		Bind(accounts.HashToken(token)).Scan(&userID, &lastSeen)
	if err == gocql.ErrNotFound {
		return false, "", time.Time{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, userID, lastSeen
}

// TestLastSeenIsRecordedOncePerInterval: a session's requests record when
// it was seen only once what the store holds is SHELF_SESSION_SEEN_INTERVAL
// old: none right after the login, one for a burst once the interval has
// passed, and lastSeenAt moves with it. The interval is long enough for
// a burst's requests to fit in it under -race on two busy cores.
func TestLastSeenIsRecordedOncePerInterval(t *testing.T) {
	t.Parallel()
	const interval = 4 * time.Second
	a, api := newTestApp(t, testkit.PackageDB(t), map[string]string{"SHELF_SESSION_SEEN_INTERVAL": interval.String()}, accountsWorkInRequest)
	touches := countTouches(a, nil)
	u, as := newUser(t, api, "seen")
	for i := 0; i < 5; i++ {
		as.Get("/v1/me")
	}
	if n := touches.Load(); n != 0 {
		t.Fatalf("%d sightings written within the interval after the login", n)
	}
	before := sessionsOf(t, as, u.ID, 10)[0]
	time.Sleep(interval + 100*time.Millisecond)
	for i := 0; i < 5; i++ {
		as.Get("/v1/me")
	}
	if n := touches.Load(); n != 1 {
		t.Fatalf("%d sightings written for 5 requests once the interval had passed, want 1", n)
	}
	after := sessionsOf(t, as, u.ID, 10)[0]
	if !after.LastSeenAt.After(before.LastSeenAt.Add(interval)) || !after.CreatedAt.Equal(before.CreatedAt) {
		t.Fatalf("last seen %v, then %v (created %v)", before.LastSeenAt, after.LastSeenAt, after.CreatedAt)
	}
}

// TestALateSightingNeverBringsARevokedSessionBack tries to break
// revocation with sightings that land late (docs/design/faults.md: any
// write may land at any later time). A sighting sent before a revocation
// and landing after it must leave the session revoked and out of the
// list, whether its timestamp is older than the revocation's delete (the
// delete shadows it) or newer (an instance whose clock runs 5 s ahead:
// its last_seen cell outlives the delete, in a row with no user_id, which
// every read takes for no session). And an older sighting landing after a
// newer one does not move lastSeenAt back.
func TestALateSightingNeverBringsARevokedSessionBack(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	env := map[string]string{"SHELF_SESSION_SEEN_INTERVAL": "0s"}
	here, api := newTestApp(t, db, env, accountsWorkInRequest)
	ahead, aheadAPI := newTestApp(t, db, env, accountsWorkInRequest, app.ClockOffset(5*time.Second))
	var holdHere, holdAhead atomic.Bool
	countTouches(here, &holdHere)
	countTouches(ahead, &holdAhead)
	u, keeper := newUser(t, api, "late")

	revocations := []struct {
		name   string
		revoke func(victim string) *testkit.Response
	}{
		{"revoke one", func(victim string) *testkit.Response {
			return keeper.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions/"+victim, "", nil)
		}},
		{"revoke the others", func(string) *testkit.Response {
			return keeper.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions?keep=current", "", nil)
		}},
		{"logout", nil},
	}
	for _, sighter := range []struct {
		name string
		api  *testkit.API
		hold *atomic.Bool
		app  *app.App
		// partial: the sighting's timestamp is later than the delete's.
		partial bool
	}{
		{"a sighting older than the revocation", api, &holdHere, here, false},
		{"a sighting from a clock 5 s ahead", aheadAPI, &holdAhead, ahead, true},
	} {
		for _, rv := range revocations {
			token := mustLogin(t, api, u.Username).Token
			victim := api.As(token)
			id := currentSession(t, victim, u.ID)
			sighter.hold.Store(true)
			if r := sighter.api.As(token).Get("/v1/me"); r.StatusCode != http.StatusOK {
				t.Fatalf("%s, %s: the request whose sighting is held: %d", sighter.name, rv.name, r.StatusCode)
			}
			sighter.hold.Store(false)
			if rv.revoke == nil {
				if r := victim.Do(http.MethodDelete, "/v1/sessions/current", "", nil); r.StatusCode != http.StatusNoContent {
					t.Fatalf("logout: %d %s", r.StatusCode, r.Body)
				}
			} else if r := rv.revoke(id); r.StatusCode != http.StatusNoContent {
				t.Fatalf("%s: %d %s", rv.name, r.StatusCode, r.Body)
			}
			if err := faults(sighter.app).LandHeld(context.Background()); err != nil {
				t.Fatal(err)
			}
			found, userID, lastSeen := sessionCells(t, db, token)
			if userID != "" || found != sighter.partial || (found && lastSeen.IsZero()) {
				t.Fatalf("%s, %s: the row after the late sighting: found %v, user_id %q, last_seen %v", sighter.name, rv.name, found, userID, lastSeen)
			}
			for _, c := range []*testkit.API{api, aheadAPI} {
				if r := c.As(token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s, %s: the revoked session works again: %d", sighter.name, rv.name, r.StatusCode)
				}
			}
			for _, s := range sessionsOf(t, keeper, u.ID, 100) {
				if s.ID == id {
					t.Fatalf("%s, %s: the revoked session is listed again: %+v", sighter.name, rv.name, s)
				}
			}
			if r := keeper.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions/"+id, "", nil); r.StatusCode != http.StatusNotFound {
				t.Fatalf("%s, %s: revoking it again: %d", sighter.name, rv.name, r.StatusCode)
			}
		}
	}
	if r := keeper.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the keeper's session was ended: %d", r.StatusCode)
	}

	// An older sighting that lands after a newer one changes nothing.
	token := mustLogin(t, api, u.Username).Token
	id := currentSession(t, api.As(token), u.ID)
	holdHere.Store(true)
	api.As(token).Get("/v1/me") // sighting t1, held
	holdHere.Store(false)
	time.Sleep(5 * time.Millisecond)
	api.As(token).Get("/v1/me") // sighting t2, lands
	_, _, newer := sessionCells(t, db, token)
	if err := faults(here).LandHeld(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, got := sessionCells(t, db, token); !got.Equal(newer) {
		t.Fatalf("an older sighting landing late moved last_seen from %v to %v", newer, got)
	}
	var listed time.Time
	for _, s := range sessionsOf(t, keeper, u.ID, 100) { // the keeper's requests sight the keeper's session only
		if s.ID == id {
			listed = s.LastSeenAt
		}
	}
	if !listed.Equal(newer) {
		t.Fatalf("lastSeenAt %v, want the newer sighting's %v", listed, newer)
	}
}

// TestSessionWritesUnderFaults: each write of a revocation fails before
// it is sent, or loses its answer after it applied, and a sighting's and
// a login's session write fail before they are sent: the client's retry
// finishes the revocation (204, or 404 once the session is gone; a
// revocation of all has stopped the session in its epoch's write, and
// answers 204 whatever its deletes after the answer do; a revocation of
// one answers 404 once its entry by id is gone), a failed
// sighting only leaves lastSeenAt behind, and a login whose session write
// failed leaves an index entry that is never listed.
func TestSessionWritesUnderFaults(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	a, api := newTestApp(t, db, map[string]string{"SHELF_SESSION_SEEN_INTERVAL": "0s"}, accountsWorkInRequest)
	u, keeper := newUser(t, api, "faulty")
	lost := &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}
	failAt := func(stmt string, at faultinject.Point) {
		var once sync.Once
		faults(a).Set(func(name string, p faultinject.Point) error {
			var err error
			if name == stmt && p == at {
				once.Do(func() { err = lost })
			}
			return err
		})
	}
	for _, stmt := range []string{"sessions.delete", "sessions_by_user.delete", "sessions_by_user_id.delete", "sessions_by_epoch.delete"} {
		for _, at := range []faultinject.Point{faultinject.BeforeWrite, faultinject.AfterWrite} {
			for _, all := range []bool{false, true} {
				token := mustLogin(t, api, u.Username).Token
				id := currentSession(t, api.As(token), u.ID)
				path := "/v1/users/" + u.ID + "/sessions/" + id
				if all {
					path = "/v1/users/" + u.ID + "/sessions?keep=current"
				}
				failAt(stmt, at)
				r := keeper.Do(http.MethodDelete, path, "", nil)
				faults(a).Set(nil)
				if r.StatusCode != http.StatusServiceUnavailable && r.StatusCode != http.StatusNoContent {
					t.Fatalf("%s %v all=%v: %d %s", stmt, at, all, r.StatusCode, r.Body)
				}
				if stmt == "sessions.delete" && at == faultinject.BeforeWrite && all {
					// Revoking all is a new epoch: every other session
					// stops in that write, and the deletes after the
					// answer only tidy.
					if r.StatusCode != http.StatusNoContent {
						t.Fatalf("a revocation of all whose sweep's delete failed answered %d", r.StatusCode)
					}
					if r := api.As(token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
						t.Fatalf("a session the new epoch stopped works though its delete failed: %d", r.StatusCode)
					}
				}
				if stmt == "sessions.delete" && at == faultinject.BeforeWrite && !all {
					if r.StatusCode != http.StatusServiceUnavailable {
						t.Fatalf("a revocation whose session delete failed answered %d", r.StatusCode)
					}
					if r := api.As(token).Get("/v1/me"); r.StatusCode != http.StatusOK {
						t.Fatalf("a session whose delete was never sent stopped working: %d", r.StatusCode)
					}
				}
				// The client retries until it has its answer.
				r = keeper.Do(http.MethodDelete, path, "", nil)
				// A revocation of one is found by its entry by id: once
				// that entry's delete applied (the index entries' deletes
				// run at once, after the session's), the retry answers 404.
				byIDGone := stmt != "sessions.delete" && (stmt != "sessions_by_user_id.delete" || at == faultinject.AfterWrite)
				if want := http.StatusNoContent; r.StatusCode != want && !(r.StatusCode == http.StatusNotFound && !all && byIDGone) {
					t.Fatalf("%s %v all=%v: the retry answered %d %s", stmt, at, all, r.StatusCode, r.Body)
				}
				if r := api.As(token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s %v all=%v: the session works after the retry: %d", stmt, at, all, r.StatusCode)
				}
				for _, s := range sessionsOf(t, keeper, u.ID, 100) {
					if s.ID == id {
						t.Fatalf("%s %v all=%v: the revoked session is listed", stmt, at, all)
					}
				}
			}
		}
	}
	// A sighting that fails leaves lastSeenAt where it was; the next
	// request records it.
	token := mustLogin(t, api, u.Username).Token
	failAt("sessions.touch", faultinject.BeforeWrite)
	if r := api.As(token).Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("a request whose sighting failed: %d", r.StatusCode)
	}
	faults(a).Set(nil)
	if _, _, seen := sessionCells(t, db, token); !seen.IsZero() {
		t.Fatalf("a failed sighting wrote last_seen %v", seen)
	}
	time.Sleep(2 * time.Millisecond)
	api.As(token).Get("/v1/me")
	if _, _, seen := sessionCells(t, db, token); seen.IsZero() {
		t.Fatal("the next request did not record the sighting")
	}
	// A login whose session write failed after its index entry: 503, and
	// the entry is not listed (it expires with the session's TTL).
	before := len(sessionsOf(t, keeper, u.ID, 100))
	failAt("sessions.insert", faultinject.BeforeWrite)
	if r := login(api, u.Username, testPassword); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a login whose session write failed: %d %s", r.StatusCode, r.Body)
	}
	faults(a).Set(nil)
	if after := len(sessionsOf(t, keeper, u.ID, 1)); after != before {
		t.Fatalf("%d sessions listed after a failed login, %d before", after, before)
	}
}
