//go:build integration

package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// deleteUser deletes the account as api: POST /v1/users/{id}/deletion
// with the current password every test account has (an admin's deletion
// of another account does not read it).
func deleteUser(api *testkit.API, id string) *testkit.Response {
	return api.Send(http.MethodPost, "/v1/users/"+id+"/deletion", map[string]string{"currentPassword": testPassword})
}

// mustDelete deletes the account and fails unless it answers 202 and its
// job finishes.
func mustDelete(t *testing.T, api *testkit.API, id string) {
	t.Helper()
	mustFinish(t, api, deleteUser(api, id), "POST /v1/users/"+id+"/deletion")
}

// deleteAndFinish deletes the account as api, finishing its job when it
// answers 202 (what a client that follows the job sees once it reads
// finished).
func deleteAndFinish(t *testing.T, api *testkit.API, id string) *testkit.Response {
	return finished(t, api, deleteUser(api, id))
}

// adminDeleteAndFinish is deleteAndFinish by DELETE /v1/users/{id} (an
// admin's, with no password).
func adminDeleteAndFinish(t *testing.T, api *testkit.API, id string) *testkit.Response {
	return finished(t, api, api.Do(http.MethodDelete, "/v1/users/"+id, "", nil))
}

// mustFinish fails unless r, what's answer, is a 202 whose job finishes.
func mustFinish(t *testing.T, api *testkit.API, r *testkit.Response, what string) {
	t.Helper()
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: %d %s", what, r.StatusCode, r.Body)
	}
	finishJob(t, api, r)
}

// finished finishes the job r names when r is a 202, and returns r.
func finished(t *testing.T, api *testkit.API, r *testkit.Response) *testkit.Response {
	if r.StatusCode == http.StatusAccepted {
		finishJob(t, api, r)
	}
	return r
}

// jobBody is a job as the API answers it.
type jobBody struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Subject  string `json:"subject"`
	State    string `json:"state"`
	Phase    string `json:"phase"`
	Done     int    `json:"done"`
	Total    int    `json:"total"`
	Left     int    `json:"left"`
	Runs     int    `json:"runs"`
	Retrying bool   `json:"retrying"`
}

// finishJob takes a 202 that named a job, runs the job worker of the app
// that answered (as its background worker would) until the job reads
// finished at GET /v1/jobs/{id}, without a session, and returns it; it
// fails the test after 60 s. A pass that fails is left to the next, as
// the worker leaves it.
func finishJob(t *testing.T, api *testkit.API, r *testkit.Response) jobBody {
	t.Helper()
	var j jobBody
	r.JSON(t, &j)
	if r.Header.Get("Location") != "/v1/jobs/"+j.ID {
		t.Fatalf("the job %s answered with Location %q", j.ID, r.Header.Get("Location"))
	}
	a, anonymous := appOf(api), api.As("")
	deadline := time.Now().Add(60 * time.Second)
	for {
		rep, err := a.Lifecycle.WorkJobs(context.Background())
		g := anonymous.Get("/v1/jobs/" + j.ID)
		if g.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/jobs/%s: %d %s", j.ID, g.StatusCode, g.Body)
		}
		g.JSON(t, &j)
		if j.State == "finished" {
			if j.Retrying {
				t.Fatalf("the job %s reads finished and retrying: %+v", j.ID, j)
			}
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job %s is still %s after 60 s (last pass: %+v, %v)", j.ID, j.State, rep, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countRows counts the rows cql selects (its one column read as text).
func countRows(t *testing.T, db *testkit.DB, cql string, args ...any) int {
	t.Helper()
	iter := db.Session.Session.Query(cql, args...).WithContext(context.Background()).Iter()
	n := 0
	var s string
	for iter.Scan(&s) {
		n++
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// accountState reads an account row's status and when it last changed.
func accountState(t *testing.T, db *testkit.DB, id string) (status string, updated time.Time) {
	t.Helper()
	err := db.Session.Session.Query(`SELECT status, updated_at FROM users WHERE id = ?`, id).
		WithContext(context.Background()).Scan(&status, &updated)
	if err != nil {
		t.Fatal(err)
	}
	return status, updated
}

// checkCountsExact asserts that an item's member and manager counts are
// the rows of content_members.
func checkCountsExact(t *testing.T, db *testkit.DB, contentID string) {
	t.Helper()
	var members, managers int
	var deleted bool
	if err := db.Session.Session.Query(`SELECT members, managers, deleted FROM content WHERE id = ?`, contentID).
		WithContext(context.Background()).Scan(&members, &managers, &deleted); err != nil {
		t.Fatal(err)
	}
	if deleted {
		return
	}
	rows := countRows(t, db, `SELECT principal_id FROM content_members WHERE content_id = ?`, contentID)
	mgrs := 0
	iter := db.Session.Session.Query(`SELECT role FROM content_members WHERE content_id = ?`, contentID).Iter()
	var role string
	for iter.Scan(&role) {
		if role == "manager" {
			mgrs++
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if rows != members || mgrs != managers || managers < 1 {
		t.Errorf("item %s counts %d members, %d managers; its rows: %d, %d", contentID, members, managers, rows, mgrs)
	}
}

// checkGone asserts that a deleted account left nothing that works or
// shows: it and its library are 404, its logins fail, the sessions given
// fail, its library, sessions_by_user and groups_by_member rows are gone,
// its index entry of deletions in progress is gone, its row is deleted,
// and neither of its names is still claimed by it.
func checkGone(t *testing.T, api *testkit.API, db *testkit.DB, u userBody, sessions ...*testkit.API) {
	t.Helper()
	if r := api.Get("/v1/users/" + u.ID); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET deleted %s: %d %s", u.ID, r.StatusCode, r.Body)
	}
	if r := api.Get("/v1/users/" + u.ID + "/library"); r.StatusCode != http.StatusNotFound {
		t.Errorf("library of deleted %s: %d %s", u.ID, r.StatusCode, r.Body)
	}
	for _, l := range []string{u.Username, u.Email} {
		if r := login(api, l, testPassword); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("login %s of a deleted account: %d %s", l, r.StatusCode, r.Body)
		}
	}
	for i, s := range sessions {
		if r := s.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("session %d of a deleted account: %d %s", i, r.StatusCode, r.Body)
		}
	}
	for what, cql := range map[string]string{
		"library_index":        `SELECT content_id FROM library_index WHERE principal_id = ?`,
		"private library rows": `SELECT content_id FROM library_by_principal WHERE principal_id = ? AND bucket = 'private'`,
		"loggedin rows":        `SELECT content_id FROM library_by_principal WHERE principal_id = ? AND bucket = 'loggedin'`,
		"public rows":          `SELECT content_id FROM library_by_principal WHERE principal_id = ? AND bucket = 'public'`,
		"sessions_by_user":     `SELECT token_hash FROM sessions_by_user WHERE user_id = ?`,
		"groups_by_member":     `SELECT group_id FROM groups_by_member WHERE user_id = ?`,
	} {
		if n := countRows(t, db, cql, u.ID); n != 0 {
			t.Errorf("deleted %s still has %d %s", u.ID, n, what)
		}
	}
	if n := ownEntries(t, db, "users", "deleted_at", "deletion_attempt", "account_deletion_attempts_by_start", "user_id", u.ID); n != 0 {
		t.Errorf("deleted %s is still listed in progress", u.ID)
	}
	if status, _ := accountState(t, db, u.ID); status != "deleted" {
		t.Errorf("account %s is %s", u.ID, status)
	}
	for _, c := range []struct{ table, key string }{{"usernames", strings.ToLower(u.Username)}, {"emails", strings.ToLower(u.Email)}} {
		if n := countRows(t, db, `SELECT user_id FROM `+c.table+` WHERE key = ? AND user_id = ? ALLOW FILTERING`, c.key, u.ID); n != 0 {
			t.Errorf("%s %q is still claimed by the deleted %s", c.table, c.key, u.ID)
		}
	}
}

// ownEntries counts the index entries (table, keyed by column) of the
// attempt that began the deletion or closing of the row id of rows (its
// start and attempt columns): its finish ends exactly that one. An entry
// of another attempt, whose compare-and-set nobody saw apply or lose (a
// crash before it, a lost answer), is the repair's to remove once stale.
func ownEntries(t *testing.T, db *testkit.DB, rows, startColumn, attemptColumn, table, column, id string) int {
	t.Helper()
	var at time.Time
	var attempt string
	if err := db.Session.Session.Query(`SELECT `+startColumn+`, `+attemptColumn+` FROM `+rows+` WHERE id = ?`, id).
		WithContext(context.Background()).Scan(&at, &attempt); err != nil {
		t.Fatal(err)
	}
	return countRows(t, db, `SELECT `+column+` FROM `+table+` WHERE day = ? AND started_at = ? AND `+column+` = ? AND attempt = ?`,
		at.UTC().Format(time.DateOnly), at, id, attempt)
}

// raceRemoval races a removal against claims of what it frees: racers
// goroutines, let go together, each call claim until one of them is
// created (201), waiting 2 ms after a 409 or 503 and giving up after 20 s,
// while remove runs. Any other answer fails the test, named by what. It
// returns the removal's answer once every racer stopped, and the times
// the winning claims were answered (one per win).
func raceRemoval(t *testing.T, what string, racers int, claim, remove func() *testkit.Response) (*testkit.Response, []time.Time) {
	t.Helper()
	var wins atomic.Int32
	var mu sync.Mutex
	var won []time.Time
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			deadline := time.Now().Add(20 * time.Second)
			for wins.Load() == 0 && time.Now().Before(deadline) {
				r := claim()
				switch r.StatusCode {
				case http.StatusCreated:
					wins.Add(1)
					mu.Lock()
					won = append(won, time.Now())
					mu.Unlock()
				case http.StatusConflict, http.StatusServiceUnavailable:
					time.Sleep(2 * time.Millisecond)
				default:
					t.Errorf("%s %d %s", what, r.StatusCode, r.Body)
					return
				}
			}
		}()
	}
	close(start)
	removal := remove()
	wg.Wait()
	return removal, won
}
