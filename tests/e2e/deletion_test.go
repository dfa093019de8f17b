//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain/lifecycle"
	"shelf/internal/app"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// deletionWorld is a user about to be deleted, with everything a deletion
// has to undo: two sessions, a group it co-manages and one it is a member
// of, an item it made (shared with a friend), an item of the friend's it
// views and one it co-manages.
type deletionWorld struct {
	m                 *moderators
	user, friend      userBody
	userAPI, second   *testkit.API
	friendAPI         *testkit.API
	comanaged, joined groupBody
	own, viewed, kept contentBody
}

func newDeletionWorld(t *testing.T, m *moderators) *deletionWorld {
	t.Helper()
	w := &deletionWorld{m: m}
	w.user, w.userAPI = newUser(t, m.api, "doomed")
	w.second = m.api.As(mustLogin(t, m.api, w.user.Username).Token)
	w.friend, w.friendAPI = newUser(t, m.api, "friend")
	w.comanaged = createGroup(t, w.userAPI, 0)
	addToGroup(t, w.userAPI, w.comanaged.ID, w.friend.ID, "manager")
	w.joined = createGroup(t, w.friendAPI, 0)
	addToGroup(t, w.friendAPI, w.joined.ID, w.user.ID, "member")
	w.own = createContent(t, w.userAPI, name("own"), "public")
	share(t, w.userAPI, w.own.ID, w.friend.ID, "viewer")
	w.viewed = createContent(t, w.friendAPI, name("viewed"), "private")
	share(t, w.friendAPI, w.viewed.ID, w.user.ID, "viewer")
	w.kept = createContent(t, w.friendAPI, name("kept"), "loggedin")
	share(t, w.friendAPI, w.kept.ID, w.user.ID, "manager")
	share(t, w.friendAPI, w.kept.ID, w.joined.ID, "viewer")
	return w
}

// check asserts the deletion is complete: the account is gone (checkGone),
// its own item is gone from everywhere, the friend's items stay with exact
// counts and without the user, both groups stay without the user, and its
// names can be signed up for.
func (w *deletionWorld) check(t *testing.T) {
	t.Helper()
	m := w.m
	checkGone(t, m.api, m.db, w.user, w.userAPI, w.second)
	if r := w.friendAPI.Get("/v1/content/" + w.own.ID); r.StatusCode != http.StatusNotFound {
		t.Errorf("the deleted user's item: %d %s", r.StatusCode, r.Body)
	}
	for _, it := range libraryOf(t, w.friendAPI, "/v1/users/"+w.friend.ID+"/library", 100) {
		if it.ID == w.own.ID {
			t.Errorf("the deleted user's item is still in the friend's library")
		}
	}
	for _, c := range []contentBody{w.viewed, w.kept} {
		if r := w.friendAPI.Get("/v1/content/" + c.ID); r.StatusCode != http.StatusOK {
			t.Errorf("the friend's item %s: %d %s", c.ID, r.StatusCode, r.Body)
		}
		checkNotAMember(t, w.friendAPI, c.ID, w.user.ID)
		checkCountsExact(t, m.db, c.ID)
	}
	for _, g := range []groupBody{w.comanaged, w.joined} {
		members := listGroupMembers(t, w.friendAPI, g.ID, 100)
		if len(members) != 1 || members[0].PrincipalID != w.friend.ID || members[0].Role != "manager" {
			t.Errorf("group %s after the deletion: %+v", g.ID, members)
		}
		checkGroupAgrees(t, m.db, g.ID, []string{w.user.ID, w.friend.ID})
	}
	heir := mustSignup(t, m.api, w.user.Username, w.user.Email)
	if heir.ID == w.user.ID {
		t.Fatal("a deleted id was given again")
	}
}

// checkNotAMember asserts the item's member list, as a manager reads it,
// does not list the user.
func checkNotAMember(t *testing.T, api *testkit.API, contentID, userID string) {
	t.Helper()
	for _, mb := range pageAll[struct {
		PrincipalID string `json:"principalId"`
	}](t, api, "/v1/content/"+contentID+"/members", 100) {
		if mb.PrincipalID == userID {
			t.Errorf("the deleted user is still a member of %s", contentID)
		}
	}
}

func TestDeleteAccount(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	w := newDeletionWorld(t, m)
	stranger, strangerAPI := newUser(t, m.api, "stranger")

	if r := deleteUser(m.api, w.user.ID); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d %s", r.StatusCode, r.Body)
	}
	if r := deleteUser(strangerAPI, w.user.ID); r.StatusCode != http.StatusForbidden {
		t.Fatalf("another user: %d %s", r.StatusCode, r.Body)
	}
	for _, id := range []string{"u_nosuchuser", "u_" + strings.Repeat("a", 26), "c_x"} {
		if r := deleteUser(m.admin, id); r.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown %s: %d %s", id, r.StatusCode, r.Body)
		}
	}
	mustDelete(t, w.userAPI, w.user.ID)
	w.check(t)

	// Idempotent: an admin's repeat answers 202 with the deletion's job;
	// the user's session ended.
	mustDelete(t, m.admin, w.user.ID)
	if r := deleteUser(w.userAPI, w.user.ID); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the user's repeat after the end: %d %s", r.StatusCode, r.Body)
	}
	// An admin deletes someone else's account the same way.
	mustDelete(t, m.admin, stranger.ID)
	checkGone(t, m.api, m.db, stranger, strangerAPI)
}

// TestAStrangerCannotHoldADeletionByMakingTheUserALastManager: a
// stranger makes the user the manager of their group, with a member of
// their own, and leaves it. The user's deletion is accepted all the same
// (decision 79): its job hands that group to the other member, closes
// the group the user was alone in, and the account is gone.
func TestAStrangerCannotHoldADeletionByMakingTheUserALastManager(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, api := newUser(t, m.api, "lastmgr")
	stranger, strangerAPI := newUser(t, m.api, "stranger")
	sock, _ := newUser(t, m.api, "sock")
	led := createGroup(t, strangerAPI, 0)
	addToGroup(t, strangerAPI, led.ID, sock.ID, "member")
	addToGroup(t, strangerAPI, led.ID, u.ID, "manager")
	if r := deleteGroupMember(strangerAPI, led.ID, stranger.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the stranger leaves: %d %s", r.StatusCode, r.Body)
	}
	alone := createGroup(t, api, 0)

	mustDelete(t, api, u.ID)
	checkGone(t, m.api, m.db, u, api)
	checkClosed(t, m.api, m.db, alone)
	members := listGroupMembers(t, m.admin, led.ID, 10)
	if len(members) != 1 || members[0].PrincipalID != sock.ID || members[0].Role != "manager" {
		t.Fatalf("the group the user managed alone has %+v, want its other member as its manager", members)
	}
	checkGroupAgrees(t, m.db, led.ID, []string{u.ID, sock.ID, stranger.ID})
}

// TestDeleteSuspendedAccount: a suspended account can be deleted, and it
// leaves the suspended list; its moderation history rows stay.
func TestDeleteSuspendedAccount(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, api := m.member(t)
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]any{"reason": "spam", "until": until}); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	mustDelete(t, m.admin, u.ID)
	for _, s := range m.listAll(t, 10) {
		if s.UserID == u.ID {
			t.Fatal("a deleted account is still listed as suspended")
		}
	}
	for what, cql := range map[string]string{
		"lookup":       `SELECT user_id FROM suspended_users WHERE user_id = ?`,
		"expiry entry": `SELECT user_id FROM suspension_expiries WHERE shard = 0 AND user_id = ? ALLOW FILTERING`,
	} {
		if n := countRows(t, m.db, cql, u.ID); n != 0 {
			t.Errorf("the deleted account's %s is still there", what)
		}
	}
	if n := countRows(t, m.db, `SELECT kind FROM moderation_history WHERE user_id = ?`, u.ID); n != 1 {
		t.Errorf("moderation history of the deleted account: %d entries, want its suspension", n)
	}
	checkGone(t, m.api, m.db, u, api)
}

// TestDeletionRacingSignups: a deletion races signups of its username (and,
// in the second half, of its email), round after round, from many
// goroutines: exactly one signup gets the name, and only once the account
// is deleted (its row's last change is before that signup's answer);
// none gets it while the account is being deleted, and it is never lost.
func TestDeletionRacingSignups(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	const rounds, racers = 12, 6
	for round := range rounds {
		byEmail := round%2 == 1
		u, api := newUser(t, m.api, "racy")
		del, won := raceRemoval(t, fmt.Sprintf("round %d: signup", round), racers, func() *testkit.Response {
			username, email := u.Username, name("racer")+"@example.org"
			if byEmail {
				username, email = name("racer"), u.Email
			}
			return signup(m.api, username, email)
		}, func() *testkit.Response { return deleteAndFinish(t, api, u.ID) })
		if del.StatusCode != http.StatusAccepted {
			t.Fatalf("round %d: delete %d %s", round, del.StatusCode, del.Body)
		}
		if n := len(won); n != 1 {
			t.Fatalf("round %d: %d signups got the name of the deleted account", round, n)
		}
		status, deletedAt := accountState(t, m.db, u.ID)
		for _, at := range won {
			if !at.After(deletedAt) {
				t.Errorf("round %d: a signup got the name at %v, before the account was deleted at %v", round, at, deletedAt)
			}
		}
		if status != "deleted" {
			t.Fatalf("round %d: status %s", round, status)
		}
	}
	checkClaimsConsistent(t, m.db)
}

// deletionSteps are the steps of a deletion, in order (AfterDeletionStep):
// the request's, then the job's.
var deletionSteps = []string{"entry", "begun", "suspension", "groups", "items", "library", "deleted", "claims", "sessions"}

// inRequest reports a step the request takes (the rest are the job's).
func inRequest(step string) bool { return step == "entry" || step == "begun" }

// TestInterruptedDeletionIsFinished stops a deletion after each of its
// steps, as a crash would (in the request, or in the job's run), then
// finishes it by the user's retry (the user's session still works for
// that until the job ends it), an admin's, or the worker's next pass;
// every check of a complete deletion holds after. A stop in the request
// is finished by each of the three; a stop in the job by one, in turn
// (the last step's by the user's retry, which its sessions' end refuses):
// the fault explorer (TestExploreDeletion) runs every finisher after
// every store call, and this is the real node's sample of each.
func TestInterruptedDeletionIsFinished(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	finishers := []string{"retry", "admin", "worker"}
	for i, step := range deletionSteps {
		finishedBy := finishers
		if !inRequest(step) {
			finishedBy = finishers[(i+1)%3 : (i+1)%3+1]
		}
		for _, by := range finishedBy {
			w := newDeletionWorld(t, m)
			m.app.Lifecycle.Hooks.AfterDeletionStep = func(s string) error {
				if s == step {
					return errCrash
				}
				return nil
			}
			r := deleteUser(w.userAPI, w.user.ID)
			if inRequest(step) {
				if r.StatusCode != http.StatusInternalServerError {
					t.Fatalf("stopped after %s: %d %s", step, r.StatusCode, r.Body)
				}
			} else {
				if r.StatusCode != http.StatusAccepted {
					t.Fatalf("delete, to stop after %s: %d %s", step, r.StatusCode, r.Body)
				}
				if _, err := m.app.Lifecycle.WorkJobs(context.Background()); !errors.Is(err, errCrash) {
					t.Fatalf("the job stopped after %s answered %v", step, err)
				}
				// Its follower sees that a run failed and that it goes on.
				var j jobBody
				r.JSON(t, &j)
				if g := m.api.As("").Get("/v1/jobs/" + j.ID); g.StatusCode != http.StatusOK {
					t.Fatalf("stopped after %s, its job reads %d %s", step, g.StatusCode, g.Body)
				} else if g.JSON(t, &j); !j.Retrying || j.State == "finished" {
					t.Fatalf("stopped after %s, its job reads %+v, want retrying and not finished", step, j)
				}
			}
			m.app.Lifecycle.Hooks.AfterDeletionStep = nil
			if step != "entry" {
				if r := m.api.Get("/v1/users/" + w.user.ID); r.StatusCode != http.StatusNotFound {
					t.Fatalf("stopped after %s, the account shows: %d", step, r.StatusCode)
				}
				if r := w.second.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("stopped after %s, another session works: %d", step, r.StatusCode)
				}
				if step != "deleted" && step != "claims" && step != "sessions" {
					if r := signup(m.api, w.user.Username, name("early")+"@example.org"); r.StatusCode != http.StatusConflict {
						t.Fatalf("stopped after %s, its username is free: %d %s", step, r.StatusCode, r.Body)
					}
				}
			}
			switch {
			case by == "retry" && step == "sessions":
				// The job ended every session, the user's own too: the
				// user can no longer ask, and the next pass finishes.
				if r := deleteUser(w.userAPI, w.user.ID); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("the user's retry once the sessions ended: %d %s", r.StatusCode, r.Body)
				}
				mustWork(t, m)
			case by == "retry":
				mustDelete(t, w.userAPI, w.user.ID)
			case by == "admin":
				mustDelete(t, m.admin, w.user.ID)
			case by == "worker":
				rep := mustWork(t, m)
				if step == "entry" {
					// The compare-and-set never ran: the account is
					// untouched, its young entry left to its retry.
					if status, _ := accountState(t, m.db, w.user.ID); status != "active" || rep.Finished != 0 {
						t.Fatalf("status %s, %+v", status, rep)
					}
					mustDelete(t, w.userAPI, w.user.ID)
				} else if rep.Finished < 1 {
					t.Fatalf("after %s the worker finished nothing: %+v", step, rep)
				}
			}
			w.check(t)
		}
	}
}

// mustWork runs a pass of m's job worker and fails on an error.
func mustWork(t *testing.T, m *moderators) lifecycle.Report {
	t.Helper()
	rep, err := m.app.Lifecycle.WorkJobs(context.Background())
	if err != nil {
		t.Fatalf("the worker's pass: %v (%+v)", err, rep)
	}
	return rep
}

// TestDeletionLeavesAGroupEveryoneElseLeft: the user co-manages a group
// (so the check lets the deletion begin), and every other member leaves
// it between the check and the step that leaves the groups. The user is
// then its last member: the deletion closes the group (closeAlone)
// instead of stopping with 409 for good, in the same run of its job, or,
// when the process dies right there, by the user's retry or the worker's
// next pass. The closed group has no members and nothing pending, answers
// 404, and its name is free for a new group.
func TestDeletionLeavesAGroupEveryoneElseLeft(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for _, by := range []string{"same-run", "retry", "worker"} {
		u, api := newUser(t, m.api, "emptier")
		friend, friendAPI := newUser(t, m.api, "leaver")
		g := createGroup(t, api, 0)
		addToGroup(t, api, g.ID, friend.ID, "manager")
		m.app.Lifecycle.Hooks.AfterDeletionStep = func(s string) error {
			if s != "suspension" {
				return nil
			}
			if r := deleteGroupMember(friendAPI, g.ID, friend.ID); r.StatusCode != http.StatusNoContent {
				t.Errorf("%s: the friend leaves: %d %s", by, r.StatusCode, r.Body)
			}
			if by != "same-run" {
				return errCrash
			}
			return nil
		}
		r := deleteUser(api, u.ID)
		if r.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: delete: %d %s", by, r.StatusCode, r.Body)
		}
		_, err := m.app.Lifecycle.WorkJobs(context.Background())
		m.app.Lifecycle.Hooks.AfterDeletionStep = nil
		switch by {
		case "same-run":
			if err != nil {
				t.Fatalf("%s: the job: %v", by, err)
			}
		case "retry":
			mustDelete(t, api, u.ID)
		case "worker":
			if rep := mustWork(t, m); rep.Finished < 1 {
				t.Fatalf("%s: the next pass: %+v", by, rep)
			}
		}
		checkGone(t, m.api, m.db, u, api)
		st := readGroupState(t, m.db, g.ID, []string{u.ID, friend.ID})
		if st.MemberCount != 0 || st.ManagerCount != 0 || len(st.Members) != 0 || len(st.Index) != 0 || st.PendingUser != "" {
			t.Errorf("%s: the closed group: %+v", by, st)
		}
		if r := putGroupMember(friendAPI, g.ID, friend.ID, "manager"); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: joining the closed group: %d %s", by, r.StatusCode, r.Body)
		}
		if r := m.api.Get("/v1/groups/" + g.ID); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: the closed group reads %d %s", by, r.StatusCode, r.Body)
		}
		if r := friendAPI.Send(http.MethodPost, "/v1/groups", map[string]any{"name": g.Name}); r.StatusCode != http.StatusCreated {
			t.Errorf("%s: a new group named as the closed one: %d %s", by, r.StatusCode, r.Body)
		}
	}
}

// TestLateWritesAfterADeletionChangeNothing: writes held back during and
// before a deletion land after it finished: an entry of deletions in
// progress whose write timed out (the deletion answered 503 and its retry
// finished it), and a fan-out of a friend's item to the user's library.
// Neither brings anything back. (The update's removals of its lean rows,
// before its compare-and-set, go through: held, the update would answer
// 503 before it changed anything.)
func TestLateWritesAfterADeletionChangeNothing(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	w := newDeletionWorld(t, m)
	// A fan-out of the friend's item to the user's library, held back.
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		if at == faultinject.BeforeWrite && ((strings.HasPrefix(stmt, "library") && stmt != "library.delete") || stmt == "account_deletions.insert") {
			return faultinject.ErrHoldWrite
		}
		return nil
	})
	if r := w.friendAPI.Send(http.MethodPatch, "/v1/content/"+w.viewed.ID, map[string]string{"name": "renamed"}); r.StatusCode != http.StatusOK {
		t.Fatalf("update: %d %s", r.StatusCode, r.Body)
	}
	// The held write times out, its outcome unknown: the attempt ends
	// with 503 (unavailable), never a 500.
	if r := deleteUser(w.userAPI, w.user.ID); r.StatusCode != http.StatusServiceUnavailable || r.Problem(t).Code != "unavailable" {
		t.Fatalf("delete whose entry write was held: %d %s, want 503 unavailable", r.StatusCode, r.Body)
	}
	faults(m.app).Set(nil)
	mustDelete(t, w.userAPI, w.user.ID)
	if err := faults(m.app).LandHeld(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	w.check(t)
}

// TestMembershipsTheDeletionCannotSeeAreTakenBack: a share to the user
// and an add of the user whose library and reverse index writes are held
// back (so the deletion, reading those indexes, does not find them), the
// user deleted, the held writes landing after; then the outbox worker
// finishes the share and a member list the add. Both read the account
// again and take the membership back: the deleted account stays in no
// member list, no count and no library (docs/design/deletion.md); a
// finisher that did not read it again would finish both for the deleted
// account.
func TestMembershipsTheDeletionCannotSeeAreTakenBack(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	w := newDeletionWorld(t, m)
	item := createContent(t, w.friendAPI, name("unseen"), "loggedin")
	group := createGroup(t, w.friendAPI, 0)
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		if at == faultinject.BeforeWrite && (stmt == "library_index.put" || stmt == "groups_by_member.insert") {
			return faultinject.ErrHoldWrite
		}
		return nil
	})
	if r := w.friendAPI.Send(http.MethodPut, "/v1/content/"+item.ID+"/members/"+w.user.ID, map[string]string{"role": "manager"}); r.StatusCode != http.StatusCreated {
		t.Fatalf("share whose library write is held: %d %s", r.StatusCode, r.Body)
	}
	if r := putGroupMember(w.friendAPI, group.ID, w.user.ID, "manager"); r.StatusCode != http.StatusServiceUnavailable && r.StatusCode != http.StatusCreated {
		t.Fatalf("add whose reverse index write is held: %d %s", r.StatusCode, r.Body)
	}
	faults(m.app).Set(nil)
	mustDelete(t, w.userAPI, w.user.ID)
	if err := faults(m.app).LandHeld(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if _, err := m.app.Contents.DrainOutbox(context.Background(), 0, 1000); err != nil {
		t.Fatal(err)
	}
	members := listGroupMembers(t, w.friendAPI, group.ID, 100)
	if len(members) != 1 || members[0].PrincipalID != w.friend.ID {
		t.Errorf("group %s after the deletion: %+v", group.ID, members)
	}
	checkGroupAgrees(t, m.db, group.ID, []string{w.user.ID, w.friend.ID})
	checkNotAMember(t, w.friendAPI, item.ID, w.user.ID)
	checkCountsExact(t, m.db, item.ID)
	if r := w.friendAPI.Send(http.MethodPut, "/v1/content/"+item.ID+"/members/"+w.user.ID, map[string]string{"role": "manager"}); r.StatusCode != http.StatusNotFound {
		t.Errorf("a share to the deleted account: %d %s", r.StatusCode, r.Body)
	}
	w.check(t)
}

// TestGroupCreatedByAnAccountBeingDeletedIsClosed: a group's creation
// whose reverse index write is held until the creator's deletion has
// read the creator's groups (so the deletion, which closes a group its
// user is alone in, never sees it) and has finished. The creation then
// reads the account after writing the rows, as every finisher of a
// membership does, finds it deleted and closes the group instead of
// leaving it with a deleted account as its one manager (active for good,
// its name held): it answers 401, the closing's repair finishes it, and
// its name is free again (docs/design/deletion.md).
func TestGroupCreatedByAnAccountBeingDeletedIsClosed(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	creator, creatorAPI := newUser(t, m.api, "founder")
	reached, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		if at == faultinject.BeforeWrite && stmt == "groups_by_member.insert" {
			once.Do(func() {
				close(reached)
				<-proceed
			})
		}
		return nil
	})
	groupName := name("orphan")
	created := make(chan *testkit.Response, 1)
	go func() { created <- creatorAPI.Send(http.MethodPost, "/v1/groups", map[string]any{"name": groupName}) }()
	select {
	case <-reached:
	case r := <-created:
		t.Fatalf("the creation answered before writing its reverse index: %d %s", r.StatusCode, r.Body)
	}
	mustDelete(t, creatorAPI, creator.ID)
	close(proceed)
	r := <-created
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("creation by an account deleted meanwhile: %d %s, want 401", r.StatusCode, r.Body)
	}
	groupID := closingGroupOf(t, m.db, creator.ID)
	if r := m.api.Get("/v1/groups/" + groupID); r.StatusCode != http.StatusNotFound {
		t.Errorf("the group of a deleted creator: %d %s, want 404", r.StatusCode, r.Body)
	}
	rep, err := m.app.Lifecycle.RepairClosings(context.Background(), false)
	if err != nil || rep.Finished != 1 {
		t.Fatalf("repair of the closing: %+v, %v; want one finished", rep, err)
	}
	st := readGroupState(t, m.db, groupID, []string{creator.ID})
	if st.MemberCount != 0 || st.ManagerCount != 0 || len(st.Members) != 0 || len(st.Index) != 0 || st.PendingUser != "" {
		t.Errorf("the closed group keeps %+v", st)
	}
	_, otherAPI := newUser(t, m.api, "heir")
	if r := otherAPI.Send(http.MethodPost, "/v1/groups", map[string]any{"name": groupName}); r.StatusCode != http.StatusCreated {
		t.Errorf("the closed group's name taken again: %d %s, want 201", r.StatusCode, r.Body)
	}
}

// closingGroupOf is the id of the group createdBy created, read from the
// groups table (the creation answered no id).
func closingGroupOf(t *testing.T, db *testkit.DB, createdBy string) string {
	t.Helper()
	var rows []struct {
		ID        string
		CreatedBy string
		Status    string
	}
	if err := db.Session.ContextQuery(context.Background(), "SELECT id, created_by, status FROM groups", nil).SelectRelease(&rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.CreatedBy == createdBy {
			if r.Status != "closing" {
				t.Fatalf("group %s of the deleted creator is %s, want closing", r.ID, r.Status)
			}
			return r.ID
		}
	}
	t.Fatalf("no group created by %s", createdBy)
	return ""
}

// TestAddLeftPendingIsFinishedByTheWorker: an add of the user whose member
// writes fail (503) leaves the add pending in the group row; the user is
// deleted, and nobody changes the group or lists its members after. The
// jobs' worker's pass (WorkJobs) leaves the entry alone while the add's
// request may still run, even on a process whose clock runs a minute
// ahead (an entry's age is judged by the node's clock too), and finishes
// the add from it once the grace has passed (a second here): the add is
// taken back, the counts are exact again, no entry is left. Without the worker
// the group would count the deleted account until its next change.
func TestAddLeftPendingIsFinishedByTheWorker(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	w := newDeletionWorld(t, m)
	group := createGroup(t, w.friendAPI, 0)
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		if at == faultinject.BeforeWrite && (stmt == "group_members.insert" || stmt == "groups_by_member.insert") {
			return &gocql.RequestErrUnavailable{}
		}
		return nil
	})
	r := w.friendAPI.Send(http.MethodPut, "/v1/groups/"+group.ID+"/members/"+w.user.ID, map[string]string{"role": "member"})
	faults(m.app).Set(nil)
	added := time.Now()
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an add whose member writes fail: %d %s, want 503", r.StatusCode, r.Body)
	}
	mustDelete(t, w.userAPI, w.user.ID)
	if st := readGroupState(t, m.db, group.ID, nil); st.PendingUser != w.user.ID || st.MemberCount != 2 {
		t.Fatalf("before the worker the group is %+v; want the add pending, counted", st)
	}
	ahead, _ := newTestApp(t, m.db, nil, app.ClockOffset(time.Minute+time.Second))
	soon, _ := newTestApp(t, m.db, nil, app.ChangeGrace(time.Second))
	time.Sleep(time.Until(added.Add(time.Second)))
	for _, worker := range []struct {
		name  string
		app   *app.App
		young bool
	}{{"a minute ahead", ahead, true}, {"a second's grace", soon, false}} {
		rep, err := worker.app.Lifecycle.WorkJobs(context.Background())
		if err != nil {
			t.Fatalf("the worker's pass (%s): %v", worker.name, err)
		}
		st := readGroupState(t, m.db, group.ID, nil)
		if worker.young != (st.PendingUser == w.user.ID) || worker.young != (rep.Changes == 0) {
			t.Fatalf("the worker's pass (%s) finished %d changes; the group is %+v", worker.name, rep.Changes, st)
		}
	}
	st := checkGroupAgrees(t, m.db, group.ID, []string{w.user.ID, w.friend.ID})
	if st.MemberCount != 1 || st.Members[w.user.ID] != "" {
		t.Errorf("after the worker the group is %+v; want only its creator", st)
	}
	var left int
	if err := m.db.Session.ContextQuery(context.Background(), "SELECT COUNT(*) FROM group_change_attempts_by_start WHERE group_id = ? ALLOW FILTERING", nil).
		Bind(group.ID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d entries of the group's changes left after the worker", left)
	}
	w.check(t)
}
