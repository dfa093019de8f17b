//go:build bench

package bench

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/tests/testkit"
)

// TestBenchJobs is `make bench-jobs`: what a deletion and a closing cost
// the one who asks, and what their jobs then take. Accounts of 0, 100,
// 1 000 and 10 000 items (their own, public: each deleted with its
// fan-out) are all seeded first; then, one at a time and in rounds that
// take one account of each size in turn: the deletion's answer (202), and
// the time from that answer until its job reads finished (the names
// free). Then the
// same for groups of 1 and of 1 000 members. Then a 10 000-item deletion
// whose api is killed (SIGKILL) a third of the way through its job and
// started again: the time until the job, taken over once its lease ran
// out, reads finished. The empty account's answer is the baseline each
// size is judged against (answers flat: within 2x). It prints the table
// and saves it under .bench/jobs-<time>.md.
func TestBenchJobs(t *testing.T) {
	h := setup(t)
	s := h.db.Session.Session
	var table strings.Builder
	fmt.Fprintf(&table, "Jobs, %s, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04"), machine())
	fmt.Fprintln(&table, "| what | runs | answer p50 | answer p99 | answer / empty account's (p50) | answer to finished p50 | items (or members) a second |")
	fmt.Fprintln(&table, "|---|---:|---:|---:|---:|---:|---:|")
	sizes := []struct{ items, runs int }{{0, 8}, {100, 8}, {1000, 4}, {10_000, 3}}
	if os.Getenv("BENCH_JOBS_QUICK") != "" { // a look at the job's rate alone
		sizes = []struct{ items, runs int }{{0, 4}, {1000, 2}}
	}
	// Every account is seeded first, then the node left to settle (the
	// seeding's flushes and compactions), then the deletions run in rounds
	// that take one account of each size in turn: what the node does in
	// the background falls on every size alike.
	accounts := make([][]account, len(sizes))
	for i, size := range sizes {
		for range size.runs {
			a, err := signup(h.api.Base)
			if err != nil {
				t.Fatal(err)
			}
			if err := seedOwnItems(s, a.id, size.items); err != nil {
				t.Fatal(err)
			}
			accounts[i] = append(accounts[i], a)
		}
	}
	time.Sleep(10 * time.Second)
	answers, finishes := make([][]time.Duration, len(sizes)), make([][]time.Duration, len(sizes))
	for round := 0; ; round++ {
		more := false
		for i := range sizes {
			if round >= len(accounts[i]) {
				continue
			}
			more = true
			a := accounts[i][round]
			answer, finish := timeJob(t, h.api.Base, http.MethodPost, "/v1/users/"+a.id+"/deletion", a.token, fmt.Sprintf(`{"currentPassword":%q}`, testPassword))
			answers[i], finishes[i] = append(answers[i], answer), append(finishes[i], finish)
		}
		if !more {
			break
		}
	}
	empty := percentile(answers[0], 50)
	for i, size := range sizes {
		jobRow(&table, fmt.Sprintf("delete an account of %d items", size.items), answers[i], finishes[i], empty, size.items)
	}
	var emptyGroup time.Duration
	for _, size := range []struct{ members, runs int }{{1, 6}, {1000, 3}} {
		var answers, finishes []time.Duration
		for range size.runs {
			owner, err := signup(h.api.Base)
			if err != nil {
				t.Fatal(err)
			}
			id, err := groupOf(h, owner, size.members)
			if err != nil {
				t.Fatal(err)
			}
			answer, finish := timeJob(t, h.api.Base, http.MethodPost, "/v1/groups/"+id+"/closing", owner.token, fmt.Sprintf(`{"currentPassword":%q}`, testPassword))
			answers, finishes = append(answers, answer), append(finishes, finish)
		}
		if size.members == 1 {
			emptyGroup = percentile(answers, 50)
		}
		jobRow(&table, fmt.Sprintf("close a group of %d members", size.members), answers, finishes, emptyGroup, size.members)
	}
	if os.Getenv("BENCH_JOBS_QUICK") == "" {
		fmt.Fprintf(&table, "\n%s\n", besideAJob(t, h, 10_000))
		fmt.Fprintf(&table, "\n%s\n", killMidJob(t, h, 10_000))
	}
	fmt.Println("\n" + table.String())
	if err := os.MkdirAll(".bench", 0o755); err == nil {
		name := filepath.Join(".bench", "jobs-"+time.Now().UTC().Format("20060102-150405")+".md")
		if err := os.WriteFile(name, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range strings.Split(table.String(), "\n") {
		t.Log(line)
	}
}

// jobRow writes one size's line: the answers' p50 and p99, p50 against the
// baseline's, the finishes' p50 and the units handled a second.
func jobRow(table *strings.Builder, what string, answers, finishes []time.Duration, baseline time.Duration, units int) {
	p50 := percentile(answers, 50)
	rate := "-"
	if f := percentile(finishes, 50); units > 1 && f > 0 {
		rate = fmt.Sprintf("%.0f", float64(units)/f.Seconds())
	}
	fmt.Fprintf(table, "| %s | %d | %s | %s | %.2f | %s | %s |\n", what, len(answers), ms(p50), ms(percentile(answers, 99)),
		float64(p50)/float64(max(baseline, 1)), ms(percentile(finishes, 50)), rate)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)]
}

// timeJob sends the request that begins a job, and returns how long its
// 202 took and how long after it the job read finished.
func timeJob(t *testing.T, base, method, path, token, body string) (answer, finish time.Duration) {
	t.Helper()
	start := time.Now()
	var job struct{ ID, State string }
	if err := call(method, base+path, token, body, http.StatusAccepted, &job); err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	waitFinished(t, base, job.ID, nil)
	return answered.Sub(start), time.Since(answered)
}

// waitFinished follows a job until it reads finished (10 minutes at most);
// each reading goes to seen when set.
func waitFinished(t *testing.T, base, id string, seen func(done int) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		var j struct {
			State string
			Done  int
		}
		if err := call(http.MethodGet, base+"/v1/jobs/"+id, "", "", http.StatusOK, &j); err != nil {
			t.Fatal(err)
		}
		if j.State == "finished" || (seen != nil && seen(j.Done)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job %s after 10 minutes: %+v", id, j)
		}
	}
}

// seedOwnItems writes n public items made by user, as a creation leaves
// them: the item's row (one member, one manager), its membership and the
// creator's library (its index entry and a row per bucket).
func seedOwnItems(s *gocql.Session, user string, n int) error {
	ids := make([]string, n)
	at := make([]time.Time, n)
	for i := range n {
		ids[i], at[i] = domain.NewID(domain.ContentIDPrefix), seedStart.Add(-time.Duration(i)*time.Second)
	}
	item := func(i int) string { return fmt.Sprint("own item ", i) }
	if err := inBatches(s, n, func(i int) (string, string, []any) {
		return ids[i], `INSERT INTO content (id, name, description, visibility, link, created_by, created_at, last_modified, deleted, members, managers, version) VALUES (?, ?, '', 'public', '', ?, ?, ?, false, 1, 1, 1)`,
			[]any{ids[i], item(i), user, at[i], at[i]}
	}); err != nil {
		return err
	}
	if err := inBatches(s, n, func(i int) (string, string, []any) {
		return ids[i], `INSERT INTO content_members (content_id, principal_id, role) VALUES (?, ?, 'manager') USING TIMESTAMP 1`, []any{ids[i], user}
	}); err != nil {
		return err
	}
	if err := inBatches(s, n, func(i int) (string, string, []any) {
		return "index", `INSERT INTO library_index (principal_id, content_id, role, version, last_modified, name, visibility) VALUES (?, ?, 'manager', 1, ?, ?, 'public') USING TIMESTAMP 1`,
			[]any{user, ids[i], at[i], item(i)}
	}); err != nil {
		return err
	}
	for _, bucket := range library.BucketsFor(library.VisibilityPublic) {
		if err := inBatches(s, n, func(i int) (string, string, []any) {
			return bucket, `INSERT INTO library_by_principal (principal_id, bucket, last_modified, content_id, name, visibility, version) VALUES (?, ?, ?, ?, ?, 'public', 1) USING TIMESTAMP 1`,
				[]any{user, bucket, at[i], ids[i], item(i)}
		}); err != nil {
			return err
		}
	}
	return nil
}

// groupOf creates a group of owner's through the api and gives it
// members-1 more members, written as adds leave them (both member tables,
// the group's count): accounts nobody logs into, which only its closing
// meets.
func groupOf(h *harness, owner account, members int) (string, error) {
	var g struct{ ID string }
	name, _ := fresh()
	if err := call(http.MethodPost, h.api.Base+"/v1/groups", owner.token, fmt.Sprintf(`{"name":%q}`, "g"+name), http.StatusCreated, &g); err != nil {
		return "", err
	}
	if members <= 1 {
		return g.ID, nil
	}
	s := h.db.Session.Session
	users := make([]string, members-1)
	for i := range users {
		users[i] = domain.NewID(domain.UserIDPrefix)
	}
	if err := inBatches(s, len(users), func(i int) (string, string, []any) {
		return "members", `INSERT INTO group_members (group_id, user_id, role) VALUES (?, ?, 'member') USING TIMESTAMP 1`, []any{g.ID, users[i]}
	}); err != nil {
		return "", err
	}
	if err := inBatches(s, len(users), func(i int) (string, string, []any) {
		return users[i], `INSERT INTO groups_by_member (user_id, group_id, role) VALUES (?, ?, 'member') USING TIMESTAMP 1`, []any{users[i], g.ID}
	}); err != nil {
		return "", err
	}
	return g.ID, s.Query(`UPDATE groups SET member_count = ? WHERE id = ?`, members, g.ID).Exec()
}

// besideAJob times a read (GET /v1/users/{id}, one at a time) with no job
// running, then while the deletion of an account of n items runs its job
// on the same api: what a job costs the requests beside it.
func besideAJob(t *testing.T, h *harness, n int) string {
	t.Helper()
	a, err := signup(h.api.Base)
	if err != nil {
		t.Fatal(err)
	}
	other, err := signup(h.api.Base)
	if err != nil {
		t.Fatal(err)
	}
	if err := seedOwnItems(h.db.Session.Session, a.id, n); err != nil {
		t.Fatal(err)
	}
	sample := func(k int) []time.Duration {
		out := make([]time.Duration, k)
		for i := range out {
			start := time.Now()
			if err := call(http.MethodGet, h.api.Base+"/v1/users/"+other.id, "", "", http.StatusOK, nil); err != nil {
				t.Fatal(err)
			}
			out[i] = time.Since(start)
		}
		return out
	}
	idle := sample(300)
	var job struct{ ID string }
	if err := call(http.MethodPost, h.api.Base+"/v1/users/"+a.id+"/deletion", a.token, fmt.Sprintf(`{"currentPassword":%q}`, testPassword), http.StatusAccepted, &job); err != nil {
		t.Fatal(err)
	}
	busy := sample(300)
	waitFinished(t, h.api.Base, job.ID, nil)
	return fmt.Sprintf("A read (GET /v1/users/{id}) beside the job of a %d-item deletion: p50 %s, p99 %s; with no job running: p50 %s, p99 %s (%.2fx at p50).",
		n, ms(percentile(busy, 50)), ms(percentile(busy, 99)), ms(percentile(idle, 50)), ms(percentile(idle, 99)),
		float64(percentile(busy, 50))/float64(max(percentile(idle, 50), 1)))
}

// killMidJob deletes an account of n items through an api of its own,
// kills that api (SIGKILL) once a third of the items are done, starts
// another, and says how long the job took then, against the same
// deletion's time without the kill (measured before it, on the shared
// api).
func killMidJob(t *testing.T, h *harness, n int) string {
	t.Helper()
	const lease = 5 * time.Second
	env := append(benchEnv(h.db), "SHELF_JOB_LEASE="+lease.String())
	first, stopFirst, err := testkit.Start(h.api.Bin, []string{"serve"}, env, testkit.APIAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stopFirst()
	a, err := signup(first.Base)
	if err != nil {
		t.Fatal(err)
	}
	if err := seedOwnItems(h.db.Session.Session, a.id, n); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var job struct{ ID string }
	if err := call(http.MethodPost, first.Base+"/v1/users/"+a.id+"/deletion", a.token, fmt.Sprintf(`{"currentPassword":%q}`, testPassword), http.StatusAccepted, &job); err != nil {
		t.Fatal(err)
	}
	killedAt := 0
	waitFinished(t, first.Base, job.ID, func(done int) bool { killedAt = done; return done >= n/3 })
	if err := first.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	second, stopSecond, err := testkit.Start(h.api.Bin, []string{"serve"}, env, testkit.APIAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer stopSecond()
	waitFinished(t, second.Base, job.ID, nil)
	return fmt.Sprintf("A deletion of %d items, its api killed (SIGKILL) at %d done and another started: finished %.1f s after the kill (lease %s, so at least that), %.1f s after its answer; no request but GET /v1/jobs.",
		n, killedAt, time.Since(killed).Seconds(), lease, time.Since(start).Seconds())
}
