//go:build integration

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"shelf/tests/testkit"
)

// TestJobFinishesAfterItsProcessIsKilled: an account with 400 items is
// deleted through an `api serve` process, which answers 202 at once. Once
// its job has reported a page of items, that process is killed (SIGKILL:
// no shutdown, its lease still held) and another is started on the
// keyspace. With no request but GET /v1/jobs (no session), the job
// finishes: taken over once the lease ran out (SHELF_JOB_LEASE 2 s),
// resumed where it stopped (the items it deleted are gone from the
// library, so the next holder's pages start after them), the account's
// items gone and its names free.
func TestJobFinishesAfterItsProcessIsKilled(t *testing.T) {
	t.Parallel()
	const items = 400
	db := testkit.NewDB(t)
	bin := apiBinary(t)
	env := testkit.APIEnv(db, "SHELF_RATE_LIMIT_PER_MINUTE=0", "SHELF_JOB_LEASE=2s", "SHELF_JOB_INTERVAL=200ms")
	first, stopFirst, err := testkit.Start(bin, []string{"serve"}, env, testkit.APIAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopFirst)
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(base, method, path, token, body string, want int, out any) {
		t.Helper()
		if err := testkit.Call(client, method, base+path, token, body, want, out); err != nil {
			t.Fatal(err)
		}
	}
	n := name("killed")
	var user struct{ ID string }
	call(first.Base, http.MethodPost, "/v1/users", "", fmt.Sprintf(`{"username":%q,"email":%q,"password":%q}`, n, n+"@example.org", testPassword), http.StatusCreated, &user)
	var session struct{ Token string }
	call(first.Base, http.MethodPost, "/v1/sessions", "", fmt.Sprintf(`{"login":%q,"password":%q}`, n, testPassword), http.StatusCreated, &session)
	ids := make([]string, items)
	var wg sync.WaitGroup
	errs := make(chan error, items)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < items; i += 8 {
				var c struct{ ID string }
				errs <- testkit.Call(client, http.MethodPost, first.Base+"/v1/content", session.Token,
					fmt.Sprintf(`{"name":"item %d","visibility":"public"}`, i), http.StatusCreated, &c)
				ids[i] = c.ID
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	var job jobBody
	call(first.Base, http.MethodPost, "/v1/users/"+user.ID+"/deletion", session.Token,
		fmt.Sprintf(`{"currentPassword":%q}`, testPassword), http.StatusAccepted, &job)
	t.Logf("the deletion of %d items answered in %v", items, time.Since(start))
	follow := func(base string) jobBody {
		t.Helper()
		var j jobBody
		call(base, http.MethodGet, "/v1/jobs/"+job.ID, "", "", http.StatusOK, &j)
		return j
	}
	var atKill jobBody
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		j := follow(first.Base)
		if j.State == "finished" {
			t.Fatalf("the job finished before the process could be killed: %+v", j)
		}
		if j.Phase == "items" && j.Done >= 100 {
			t.Logf("killing the process at %+v", j)
			atKill = j
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no page of items reported in 60 s: %+v", j)
		}
	}
	if err := first.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The items it reported done are gone from the library the next
	// holder pages.
	if left := countRows(t, db, `SELECT content_id FROM library_index WHERE principal_id = ?`, user.ID); left > items-atKill.Done {
		t.Fatalf("%d items left in the library after the kill, though %d of %d were reported done", left, atKill.Done, items)
	}
	second, stopSecond, err := testkit.Start(bin, []string{"serve"}, env, testkit.APIAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopSecond)
	var done jobBody
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		done = follow(second.Base)
		// Resumed where it stopped: never fewer done than at the kill.
		if done.Total != items || done.Done < atKill.Done {
			t.Fatalf("the job after the kill: %+v; at the kill %+v", done, atKill)
		}
		if done.State == "finished" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job after the kill, 90 s on: %+v", done)
		}
	}
	t.Logf("finished %v after the kill: %+v", time.Since(killed), done)
	if done.Runs < 2 || done.Total != items || done.Left != 0 {
		t.Errorf("the finished job: %+v; want taken on at least twice, %d items, none left", done, items)
	}
	for _, id := range []string{ids[0], ids[items/2], ids[items-1]} {
		call(second.Base, http.MethodGet, "/v1/content/"+id, "", "", http.StatusNotFound, nil)
	}
	call(second.Base, http.MethodGet, "/v1/users/"+user.ID, "", "", http.StatusNotFound, nil)
	var heir json.RawMessage
	call(second.Base, http.MethodPost, "/v1/users", "", fmt.Sprintf(`{"username":%q,"email":%q,"password":%q}`, n, n+"@example.org", testPassword), http.StatusCreated, &heir)
}
