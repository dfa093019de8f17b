//go:build integration

package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/rs/zerolog"

	"shelf/domain/moderation"
	"shelf/internal/app"
	"shelf/internal/config"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// TestInterruptedSuspensionsAreFinishedOrRepaired stops suspend and
// unsuspend after each of their steps, as a crash would. The records may
// disagree then; the retry of the same operation, the sweeper's pass over
// the attempts left in progress (nobody retrying, no operator), or the
// repair command, must leave them in agreement (S2).
func TestInterruptedSuspensionsAreFinishedOrRepaired(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	steps := []struct{ op, step string }{
		{"suspend", "cas"}, {"suspend", "records"},
		{"unsuspend", "cas"}, {"unsuspend", "records"},
	}
	for _, fix := range []string{"retry", "worker", "repair"} {
		for _, st := range steps {
			u, session := m.member(t)
			if st.op == "unsuspend" {
				if r := m.suspend(u.ID, "setup"); r.StatusCode != http.StatusCreated {
					t.Fatalf("setup: %d", r.StatusCode)
				}
			}
			m.stopAfter(t, st.op, st.step, u.ID)
			var r *testkit.Response
			switch fix {
			case "retry":
				// The interrupted operation took effect at its compare-and-set:
				// its retry answers 409 / 404 and finishes the records.
				want := http.StatusNotFound
				if st.op == "suspend" {
					r, want = m.suspend(u.ID, "retry"), http.StatusConflict
				} else {
					r = m.unsuspend(u.ID)
				}
				if r.StatusCode != want {
					t.Fatalf("retry of %s after %s: %d %s", st.op, st.step, r.StatusCode, r.Body)
				}
			case "worker":
				// What every process's sweeper does on its own, its grace
				// (past any request's deadline) taken as passed.
				n, err := m.app.Moderation.FinishInterrupted(context.Background(), 0)
				if err != nil || n < 1 {
					t.Fatalf("the sweeper's pass after %s/%s: %d finished, %v", st.op, st.step, n, err)
				}
			case "repair":
				out, err := runAdmin(t, m, "repair-suspensions")
				if err != nil {
					t.Fatalf("repair after %s/%s: %v\n%s", st.op, st.step, err, out)
				}
			}
			if agreement(t, m.db); t.Failed() {
				t.Fatalf("records disagree after %s stopped after %s and a %s", st.op, st.step, fix)
			}
			if st.op == "suspend" {
				// S3 holds once finished: no session survives.
				if r := session.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("a session survived %s after %s + %s: %d", st.op, st.step, fix, r.StatusCode)
				}
			}
		}
	}
	out, err := runAdmin(t, m, "repair-suspensions", "--dry-run")
	if err != nil || !strings.Contains(out, "all records agree") {
		t.Fatalf("a final dry run found problems: %v\n%s", err, out)
	}
}

// TestASuspensionKeepsItsUsernameThroughARename: a suspension stopped
// after its compare-and-set, an admin's rename of the member, then the
// retry, the sweeper's pass or the repair writes the records. The read
// and the list show the username the member had when suspended: the
// account row keeps it with the suspension (schema 040). Before, the read
// showed the new name and the list the one the finisher wrote.
func TestASuspensionKeepsItsUsernameThroughARename(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for _, fix := range []string{"retry", "worker", "repair"} {
		u, _ := m.member(t)
		m.stopAfter(t, "suspend", "cas", u.ID)
		if r := m.admin.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"username": name("renamed")}); r.StatusCode != http.StatusOK {
			t.Fatalf("%s: the rename: %d %s", fix, r.StatusCode, r.Body)
		}
		switch fix {
		case "retry":
			if r := m.suspend(u.ID, "retry"); r.StatusCode != http.StatusConflict {
				t.Fatalf("the retry: %d %s", r.StatusCode, r.Body)
			}
		case "worker":
			if _, err := m.app.Moderation.FinishInterrupted(context.Background(), 0); err != nil {
				t.Fatalf("the sweeper's pass: %v", err)
			}
		case "repair":
			if out, err := runAdmin(t, m, "repair-suspensions"); err != nil {
				t.Fatalf("the repair: %v\n%s", err, out)
			}
		}
		var s suspensionBody
		r := m.admin.Get("/v1/users/" + u.ID + "/suspension")
		r.JSON(t, &s)
		if r.StatusCode != http.StatusOK || s.Username != u.Username {
			t.Errorf("%s: the suspension reads as %q (%d), want %q", fix, s.Username, r.StatusCode, u.Username)
		}
		listed := 0
		for _, s := range m.listAll(t, 100) {
			if s.UserID == u.ID {
				listed++
				if s.Username != u.Username {
					t.Errorf("%s: the list shows %q, want %q", fix, s.Username, u.Username)
				}
			}
		}
		if listed != 1 {
			t.Errorf("%s: listed %d times", fix, listed)
		}
	}
}

// TestTheRepairNamesAnOlderSuspensionsListRowAsItsRead: a suspension from
// before schema 040 (no suspended_username) whose user the release
// before renamed while suspended reads as named by the new username,
// while its list row shows the old one; its records are all there. The
// repair writes the list row again at the account's version, with the
// name the read shows.
func TestTheRepairNamesAnOlderSuspensionsListRowAsItsRead(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, _ := m.member(t)
	if r := m.suspend(u.ID, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	var version int
	if err := m.db.Session.Query(`SELECT version FROM users WHERE id = ?`, nil).Bind(u.ID).Scan(&version); err != nil {
		t.Fatal(err)
	}
	// The release before's rename, as its compare-and-set wrote the row:
	// a new username and version, no suspended_username.
	renamed := name("renamed")
	applied, err := m.db.Session.Query(`UPDATE users SET username = ?, suspended_username = null, version = ? WHERE id = ? IF version = ?`, nil).
		Bind(renamed, version+1, u.ID, version).ExecCAS()
	if err != nil || !applied {
		t.Fatalf("the rename of the release before: %v %v", applied, err)
	}
	if out, err := runAdmin(t, m, "repair-suspensions"); err != nil || !strings.Contains(out, "naming") {
		t.Fatalf("the repair: %v\n%s", err, out)
	}
	var s suspensionBody
	r := m.admin.Get("/v1/users/" + u.ID + "/suspension")
	r.JSON(t, &s)
	if r.StatusCode != http.StatusOK || s.Username != renamed {
		t.Errorf("the suspension reads as %q (%d), want %q", s.Username, r.StatusCode, renamed)
	}
	for _, s := range m.listAll(t, 100) {
		if s.UserID == u.ID && s.Username != renamed {
			t.Errorf("the list shows %q, want %q", s.Username, renamed)
		}
	}
}

// TestRepairFindsAndFixesEveryKindOfDisagreement leaves one of each kind
// of disagreement behind (a suspension without its records, records of a
// lifted suspension, a bucket missing from the index, an indexed empty
// bucket) and checks the dry run reports them all and the repair fixes them.
func TestRepairFindsAndFixesEveryKindOfDisagreement(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	ctx := context.Background()
	unrecorded, _ := m.member(t)
	lifted, _ := m.member(t)
	listed, _ := m.member(t)
	for _, u := range []userBody{lifted, listed} {
		if r := m.suspend(u.ID, "setup"); r.StatusCode != http.StatusCreated {
			t.Fatal(r.StatusCode)
		}
	}
	crashAfter := func(op string) {
		m.app.Moderation.Hooks.AfterStep = func(o, step string) error {
			if o == op && step == "cas" {
				return errCrash
			}
			return nil
		}
	}
	crashAfter("suspend")
	m.suspend(unrecorded.ID, "never recorded")
	crashAfter("unsuspend")
	m.unsuspend(lifted.ID)
	m.app.Moderation.Hooks.AfterStep = nil
	bucket := moderation.BucketOf(time.Now(), moderation.BucketMonth)
	if err := m.db.Session.ContextQuery(ctx, "DELETE FROM status_buckets WHERE status = 'suspended' AND bucket = ?", nil).Bind(bucket).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	if err := m.db.Session.ContextQuery(ctx, "INSERT INTO status_buckets (status, bucket) VALUES ('suspended', '2001-01-01')", nil).ExecRelease(); err != nil {
		t.Fatal(err)
	}

	out, err := runAdmin(t, m, "repair-suspensions", "--dry-run")
	for _, want := range []string{unrecorded.ID, lifted.ID, "bucket " + bucket + " holds suspensions but is not indexed", "bucket 2001-01-01 is indexed but empty", "dry run"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("dry run does not report %q: %v\n%s", want, err, out)
		}
	}
	if strings.Contains(out, listed.ID) {
		t.Fatalf("dry run reports the healthy suspension of %s:\n%s", listed.ID, out)
	}
	if out, err := runAdmin(t, m, "repair-suspensions"); err != nil || !strings.Contains(out, "fixes applied") {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	if agreement(t, m.db) != 2 {
		t.Fatalf("want 2 suspended after the repair")
	}
	if out, err := runAdmin(t, m, "repair-suspensions", "--dry-run"); err != nil || !strings.Contains(out, "all records agree") {
		t.Fatalf("after repair: %v\n%s", err, out)
	}
}

// TestLostAnswersInModeration: the account's compare-and-set loses its
// answer; suspend and unsuspend still answer right (U5 reused).
func TestLostAnswersInModeration(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, _ := m.member(t)
	faults(m.app).Set(onceFault("users.update", faultinject.AfterLWT))
	if r := m.suspend(u.ID, "lost answer"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	faults(m.app).Set(onceFault("users.update", faultinject.AfterLWT))
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend: %d %s", r.StatusCode, r.Body)
	}
	faults(m.app).Set(nil)
	agreement(t, m.db)
}

// runAdmin runs `api admin ...` against the test's keyspace.
func runAdmin(t *testing.T, m *moderators, args ...string) (string, error) {
	t.Helper()
	return runAdminOn(m.db, args...)
}

// runAdminOn runs `api admin ...` against a test keyspace.
func runAdminOn(db *testkit.DB, args ...string) (string, error) {
	env := map[string]string{"SHELF_CASSANDRA_HOSTS": strings.Join(db.Conn.Hosts, ","), "SHELF_KEYSPACE": db.Keyspace()}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	err = app.Admin(context.Background(), cfg, zerolog.Nop(), args, &out)
	return out.String(), err
}

// TestUnsuspendWhoseListDeleteFailsIsFinishedByItsRetry: the account is
// lifted, then the list row's delete (or the expiry entry's) fails. The
// reverse lookup is erased after the list row, so it is still there for the
// retry, which erases what is left (the last lift's list row and expiry
// entry by their own keys, then what the lookup names); the user is not
// left listed while active (S2). Were
// the deletes sent at once, the lookup's could land alone, the retry find
// nothing to finish, and an active user stay in the suspended list
// (docs/design/suspension.md).
func TestUnsuspendWhoseListDeleteFailsIsFinishedByItsRetry(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for _, failing := range []string{"users_by_status.delete", "suspension_expiries.delete"} {
		u, _ := m.member(t)
		// An end the node's clock passes during the test: the sweeper
		// reads only entries ended by its clock and the node's both.
		end := time.Now().Add(3 * time.Second).Truncate(time.Second)
		until := end.UTC().Format(time.RFC3339)
		if r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]string{"reason": "spam", "until": until}); r.StatusCode != http.StatusCreated {
			t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
		}
		faults(m.app).Set(func(name string, at faultinject.Point) error {
			if name == failing && at == faultinject.BeforeWrite {
				return &gocql.RequestErrUnavailable{}
			}
			return nil
		})
		r := m.unsuspend(u.ID)
		faults(m.app).Set(nil)
		if r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s failed: unsuspend answered %d %s", failing, r.StatusCode, r.Body)
		}
		if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNotFound {
			t.Fatalf("the retry: %d %s", r.StatusCode, r.Body)
		}
		for _, s := range m.listAll(t, 100) {
			if s.UserID == u.ID {
				t.Fatalf("%s failed: the active user %s is still listed after the retry", failing, u.ID)
			}
		}
		// The retry erases the last lift's expiry entry by its keys too;
		// the sweeper past its end lifts nothing (the user is active).
		if n := countRows(t, m.db, `SELECT user_id FROM suspension_expiries WHERE user_id = ? ALLOW FILTERING`, u.ID); n != 0 {
			t.Fatalf("%s failed: %d expiry entries of the user after the retry, want none", failing, n)
		}
		if failing != "suspension_expiries.delete" {
			continue
		}
		time.Sleep(time.Until(end.Add(time.Second)))
		lifted, err := m.app.Moderation.SweepExpired(context.Background(), 100)
		if err != nil || lifted != 0 {
			t.Fatalf("the sweep past the entry's end lifted %d, %v; want none (the user is active)", lifted, err)
		}
		if r := m.admin.Get("/v1/users/" + u.ID); !strings.Contains(string(r.Body), `"status":"active"`) {
			t.Fatalf("after the sweep: %d %s", r.StatusCode, r.Body)
		}
	}
	agreement(t, m.db)
}

// TestASuspensionsSessionsStayEndedAfterItsLift: a suspension ends the
// user's sessions in its compare-and-set (a new password epoch), not by
// deleting them: it writes no session delete, every session stops at
// once (S3), and the lift brings none back (the rows expire with their
// TTL, never listed); the user logs in again.
func TestASuspensionsSessionsStayEndedAfterItsLift(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, member := m.member(t)
	if r := member.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("before: %d", r.StatusCode)
	}
	var deletes atomic.Int32
	faults(m.app).Set(func(name string, at faultinject.Point) error {
		if name == "sessions.delete" && at == faultinject.BeforeWrite {
			deletes.Add(1)
			return &gocql.RequestErrUnavailable{}
		}
		return nil
	})
	r := m.suspend(u.ID, "spam")
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusCreated || deletes.Load() != 0 {
		t.Fatalf("suspend: %d %s, %d session deletes; want 201 and none", r.StatusCode, r.Body, deletes.Load())
	}
	if r := member.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a suspended user's session still works: %d %s", r.StatusCode, r.Body)
	}
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend: %d", r.StatusCode)
	}
	if r := member.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session from before the suspension works after its lift: %d %s", r.StatusCode, r.Body)
	}
	if r := login(m.api, u.Username, testPassword); r.StatusCode != http.StatusCreated {
		t.Fatalf("the login after the lift: %d %s", r.StatusCode, r.Body)
	}
	agreement(t, m.db)
}

// TestRepairRestoresAMissingExpiryEntry: a suspension with an end whose
// expiry entry failed (503), then the operator's repair instead of a
// retry. The repair must write the entry, or the sweeper never lifts the
// suspension; checking the list row, the lookup and the sessions alone
// would leave it missing (TestExploreModeration).
func TestRepairRestoresAMissingExpiryEntry(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	n := name("quiet")
	u := mustSignup(t, m.api, n, n+"@example.org") // no session: nothing else for the repair to end
	// Far enough on for the suspend and the repair to end before it under
	// -race on two busy cores.
	until := time.Now().Add(4 * time.Second).UTC()
	faults(m.app).Set(failWrite("suspension_expiries.insert"))
	r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]any{"reason": "cool off", "until": until.Format(time.RFC3339Nano)})
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("suspend whose expiry entry failed: %d %s", r.StatusCode, r.Body)
	}
	report, err := m.app.Moderation.RepairSuspensions(context.Background(), repository.NewAudit(m.app.DB), false)
	if err != nil || report.Fixed != 1 {
		t.Fatalf("repair: %+v, %v", report, err)
	}
	time.Sleep(time.Until(until) + 200*time.Millisecond)
	if lifted, err := m.app.Moderation.SweepExpired(context.Background(), 100); err != nil || lifted != 1 {
		t.Fatalf("the sweeper lifted %d, %v", lifted, err)
	}
	if list := m.listAll(t, 10); len(list) != 0 {
		t.Fatalf("still listed after the sweep: %+v", list)
	}
	agreement(t, m.db)
}

// TestSuspensionRacingADeletionListsNobody (S2), on the node: the
// suspension's compare-and-set applies, then the account is deleted (an
// admin's deletion, its job finished: it finds no records to erase yet),
// then the suspension writes its records. It checks again at its end,
// erases them and answers 404. And with the suspension's list row held
// back (503) and landing after the deletion: the deletion erased the
// records by their keys at its own version, so the late row is shadowed.
// The list never shows the deleted account, and its history keeps the
// suspension (S5) though nobody may read it through the API any more.
func TestSuspensionRacingADeletionListsNobody(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	ctx := context.Background()
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	suspend := func(id string) *testkit.Response {
		return m.admin.Send(http.MethodPost, "/v1/users/"+id+"/suspension", map[string]string{"reason": "spam", "until": until})
	}
	for _, race := range []string{"between", "late-row"} {
		u, _ := m.member(t)
		var r *testkit.Response
		switch race {
		case "between":
			m.app.Moderation.Hooks.AfterStep = func(op, step string) error {
				if op == "suspend" && step == "cas" {
					mustDelete(t, m.admin, u.ID)
				}
				return nil
			}
			r = suspend(u.ID)
			m.app.Moderation.Hooks.AfterStep = nil
			if r.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: the suspension of an account deleted meanwhile: %d %s", race, r.StatusCode, r.Body)
			}
		case "late-row":
			faults(m.app).Set(func(name string, at faultinject.Point) error {
				if name == "users_by_status.insert" && at == faultinject.BeforeWrite {
					return faultinject.ErrHoldWrite
				}
				return nil
			})
			r = suspend(u.ID)
			faults(m.app).Set(nil)
			if r.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s: the suspension whose list row is held: %d %s", race, r.StatusCode, r.Body)
			}
			mustDelete(t, m.admin, u.ID)
			if err := faults(m.app).LandHeld(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range m.listAll(t, 100) {
			if s.UserID == u.ID {
				t.Fatalf("%s: the deleted account is listed as suspended: %+v", race, s)
			}
		}
		for _, table := range []string{"users_by_status", "suspended_users", "suspension_expiries"} {
			if n := countRows(t, m.db, "SELECT user_id FROM "+table+" WHERE user_id = ? ALLOW FILTERING", u.ID); n != 0 {
				t.Fatalf("%s: %d rows of the deleted account left in %s", race, n, table)
			}
		}
		if n := countRows(t, m.db, "SELECT kind FROM moderation_history WHERE user_id = ?", u.ID); n != 1 {
			t.Fatalf("%s: the deleted account's history has %d entries, want its suspension's", race, n)
		}
	}
	agreement(t, m.db)
}

// TestDeletionRecordsTheHistoryOfASuspensionWhoseEntryFailed (S5), on the
// node: the suspension applies, its history entry's write fails (503), and
// the account is deleted before anyone retries.
// The deletion writes the entry (S5): nothing after it would.
func TestDeletionRecordsTheHistoryOfASuspensionWhoseEntryFailed(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, _ := m.member(t)
	faults(m.app).Set(failWrite("moderation_history.insert"))
	r := m.suspend(u.ID, "spam")
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the suspension whose history entry failed: %d %s", r.StatusCode, r.Body)
	}
	mustDelete(t, m.admin, u.ID)
	if n := countRows(t, m.db, "SELECT kind FROM moderation_history WHERE user_id = ? AND kind = 'suspended' ALLOW FILTERING", u.ID); n != 1 {
		t.Fatalf("the deleted account's history has %d suspension entries, want 1", n)
	}
	agreement(t, m.db)
}
