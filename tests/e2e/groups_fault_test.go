//go:build integration

package e2e

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/tests/faultinject"
)

// crashOnce makes the group service stop once at op/step, as a crash would.
func crashOnce(w *groupWorld, op, step string) {
	var mu sync.Mutex
	done := false
	w.app.Groups.Hooks.AfterStep = func(o, s string) error {
		mu.Lock()
		defer mu.Unlock()
		if o == op && s == step && !done {
			done = true
			return errCrash
		}
		return nil
	}
}

// TestCrashedMemberChangeIsFinishedByTheNext stops membership changes after
// their compare-and-set on the group (the change recorded, no member row
// written) and after writing the member rows (the change not yet cleared).
// The next operation on the group, whatever it is, finishes the change
// first: the counts and the rows agree, and a crashed add still counts
// against maxMembers, so it can never let the group overflow.
func TestCrashedMemberChangeIsFinishedByTheNext(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	users := signupJoiners(t, w.api, 4)
	all := append([]string{w.owner.ID}, users...)
	for _, step := range []string{"cas", "apply"} {
		g := mustPostGroup(t, w.ownerAPI, name("crash"), 3)
		mustPutGroupMember(t, w.ownerAPI, g.ID, users[0], "member", http.StatusCreated)

		// A crashed add of users[1]: the group is full with it.
		crashOnce(w, "set", step)
		if r := putGroupMember(w.ownerAPI, g.ID, users[1], "manager"); r.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%s: crashed add answered %d %s", step, r.StatusCode, r.Body)
		}
		w.app.Groups.Hooks.AfterStep = nil
		if st := readGroupState(t, w.db, g.ID, nil); st.PendingUser != users[1] || st.MemberCount != 3 || st.ManagerCount != 2 {
			t.Fatalf("%s: after the crash the group row is %+v", step, st)
		}
		r := putGroupMember(w.ownerAPI, g.ID, users[2], "member")
		if r.StatusCode != http.StatusConflict || r.Problem(t).Code != "group_full" {
			t.Fatalf("%s: add to a group full with a crashed add: %d %s", step, r.StatusCode, r.Body)
		}
		st := checkGroupAgrees(t, w.db, g.ID, all)
		if st.Members[users[1]] != "manager" || len(st.Members) != 3 {
			t.Fatalf("%s: the crashed add was not finished: %v", step, st.Members)
		}

		// A crashed removal is finished by the next reader of the list.
		crashOnce(w, "remove", step)
		if r := deleteGroupMember(w.ownerAPI, g.ID, users[0]); r.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%s: crashed removal answered %d %s", step, r.StatusCode, r.Body)
		}
		w.app.Groups.Hooks.AfterStep = nil
		if got := listGroupMembers(t, w.ownerAPI, g.ID, 10); len(got) != 2 {
			t.Fatalf("%s: after a crashed removal the list has %v", step, got)
		}
		checkGroupAgrees(t, w.db, g.ID, all)
		// ... and its retry answers as if it had been the first.
		if r := deleteGroupMember(w.ownerAPI, g.ID, users[0]); r.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: retried removal: %d %s", step, r.StatusCode, r.Body)
		}
	}
}

// TestGroupChangesResolveAmbiguousAnswers loses the answer of each
// lightweight transaction of a creation and of a member change once, after
// it applied and (separately) before it was sent: each still ends as it
// would have, read back at SERIAL, never guessed (U5).
func TestGroupChangesResolveAmbiguousAnswers(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	users := signupJoiners(t, w.api, 1)
	for _, stmt := range []string{"group_names.claim", "groups.create", "group_names.commit", "groups.activate", "groups.update"} {
		for _, at := range []faultinject.Point{faultinject.AfterLWT, faultinject.BeforeLWT} {
			faults(w.app).Set(onceFault(stmt, at))
			g := mustPostGroup(t, w.ownerAPI, name("amb"), 2)
			faults(w.app).Set(onceFault("groups.update", at))
			mustPutGroupMember(t, w.ownerAPI, g.ID, users[0], "member", http.StatusCreated)
			faults(w.app).Set(onceFault("groups.update", at))
			if r := deleteGroupMember(w.ownerAPI, g.ID, users[0]); r.StatusCode != http.StatusNoContent {
				t.Fatalf("%s: remove: %d %s", stmt, r.StatusCode, r.Body)
			}
			faults(w.app).Set(nil)
			checkGroupAgrees(t, w.db, g.ID, []string{w.owner.ID, users[0]})
		}
	}
}

// TestFaultStormKeepsGroupsWithinCapacity runs concurrent joins and leaves
// while a third of the group row's compare-and-sets lose their answer: the
// group never holds more than maxMembers, every join answered 201 or 200 is
// a member unless it left afterwards (every other user to join is removed
// by the owner at once, while the rest still join, a refused join trying
// again a few times), a leave answered 204 is no member, and the
// counts agree at the end.
func TestFaultStormKeepsGroupsWithinCapacity(t *testing.T) {
	t.Parallel()
	w := newGroupWorld(t, nil)
	const maxMembers = 6
	users := signupJoiners(t, w.api, 24)
	g := mustPostGroup(t, w.ownerAPI, name("storm"), maxMembers)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(3, 4))
	faults(w.app).Set(func(stmt string, _ faultinject.Point) error {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(stmt, "groups.") && rng.IntN(3) == 0 {
			return lostAnswer
		}
		return nil
	})
	codes := make([]int, len(users))
	// leaves[i]: the answer to user i's leave (0: none tried). The first,
	// third, fifth... user to join leaves at once, while the others still
	// join.
	leaves := make([]int, len(users))
	var joins atomic.Int32
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A join refused tries again a few times, so the places the
			// leaves free are raced for.
			r := putGroupMember(w.ownerAPI, g.ID, u, "member")
			for try := 0; try < 4 && r.StatusCode == http.StatusConflict; try++ {
				time.Sleep(5 * time.Millisecond)
				r = putGroupMember(w.ownerAPI, g.ID, u, "member")
			}
			codes[i] = r.StatusCode
			switch {
			case r.StatusCode == http.StatusCreated, r.StatusCode == http.StatusOK:
			case r.StatusCode == http.StatusConflict:
				if c := r.Problem(t).Code; c != "group_full" && c != "concurrent_change" {
					t.Errorf("join: %s", r.Body)
				}
			case r.StatusCode == http.StatusServiceUnavailable:
				// An answer that stayed ambiguous five times running: the
				// change may or may not be recorded; either way it is
				// finished or not, never half-done (checked below).
			default:
				t.Errorf("join: %d %s", r.StatusCode, r.Body)
			}
			if (r.StatusCode == http.StatusCreated || r.StatusCode == http.StatusOK) && joins.Add(1)%2 == 1 {
				l := deleteGroupMember(w.ownerAPI, g.ID, u)
				leaves[i] = l.StatusCode
				switch {
				case l.StatusCode == http.StatusNoContent, l.StatusCode == http.StatusServiceUnavailable:
				case l.StatusCode == http.StatusConflict && l.Problem(t).Code == "concurrent_change":
				default:
					t.Errorf("leave: %d %s", l.StatusCode, l.Body)
				}
			}
		}()
	}
	wg.Wait()
	faults(w.app).Set(nil)
	// One more operation finishes whatever a 503 left pending.
	listGroupMembers(t, w.ownerAPI, g.ID, 100)
	st := checkGroupAgrees(t, w.db, g.ID, append([]string{w.owner.ID}, users...))
	joined, left, leaving := 0, 0, 0
	for i, c := range codes {
		if c != http.StatusCreated && c != http.StatusOK {
			continue
		}
		joined++
		if leaves[i] != 0 {
			leaving++
		}
		switch leaves[i] {
		case 0, http.StatusConflict:
			if st.Members[users[i]] == "" {
				t.Errorf("%s was answered %d (its leave %d) but is not a member", users[i], c, leaves[i])
			}
		case http.StatusNoContent:
			left++
			if role := st.Members[users[i]]; role != "" {
				t.Errorf("%s left (204) but is still a %s", users[i], role)
			}
		}
	}
	if len(st.Members) > maxMembers {
		t.Fatalf("L7 broken: %d members", len(st.Members))
	}
	if joined == 0 || leaving == 0 {
		t.Fatalf("%d joins succeeded, %d leaves tried (%d answered 204); the storm proves nothing", joined, leaving, left)
	}
}

// TestCrashedGroupCreationFreesItsNameAfterLease stops creations after
// claiming the name and after committing it, as a crash would: the name
// stays blocked while the lease runs and is free once the pending group
// has expired (a committed claim whose group is gone is taken over). A
// creation that stops after activating keeps its group, and the creator's
// membership is finished by the next operation on it.
//
// The name is certainly blocked only while less than the lease less a
// second has passed since the crashed creation began (a row's TTL is whole
// seconds, counted from the whole second of its write): a 5 s lease leaves
// room for the second try under -race, where 2 s did not surely.
func TestCrashedGroupCreationFreesItsNameAfterLease(t *testing.T) {
	t.Parallel()
	const lease = 5 * time.Second
	w := newGroupWorld(t, map[string]string{"SHELF_CLAIM_LEASE": lease.String()})
	ctx := context.Background()
	for _, step := range []string{"claims", "commit"} {
		n := name("dead")
		crashOnce(w, "create", step)
		started := time.Now()
		if r := postGroup(w.ownerAPI, map[string]any{"name": n}); r.StatusCode != http.StatusInternalServerError {
			t.Fatalf("%s: crashed creation answered %d %s", step, r.StatusCode, r.Body)
		}
		crashed := time.Now()
		w.app.Groups.Hooks.AfterStep = nil
		r := postGroup(w.ownerAPI, map[string]any{"name": n})
		if blocked := time.Since(started) < lease-time.Second; blocked && r.StatusCode != http.StatusConflict {
			t.Fatalf("%s: the name is free during the lease: %d %s", step, r.StatusCode, r.Body)
		} else if !blocked {
			t.Logf("%s: the second try ended %v after the first began: past what the rows surely had left, not checked", step, time.Since(started))
		}
		time.Sleep(time.Until(crashed.Add(lease + time.Second)))
		g := mustPostGroup(t, w.ownerAPI, n, 0)
		checkGroupAgrees(t, w.db, g.ID, []string{w.owner.ID})
	}

	n := name("half")
	crashOnce(w, "create", "activate")
	if r := postGroup(w.ownerAPI, map[string]any{"name": n}); r.StatusCode != http.StatusInternalServerError {
		t.Fatalf("crashed after activation: %d %s", r.StatusCode, r.Body)
	}
	w.app.Groups.Hooks.AfterStep = nil
	var id string
	if err := w.db.Session.ContextQuery(ctx, "SELECT user_id FROM group_names WHERE key = ?", nil).Bind(strings.ToLower(n)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease + time.Second) // an active group does not expire
	var g groupResp
	if r := w.api.Get("/v1/groups/" + id); r.StatusCode != http.StatusOK {
		t.Fatalf("the activated group: %d %s", r.StatusCode, r.Body)
	} else {
		r.JSON(t, &g)
	}
	if g.MemberCount != 1 {
		t.Fatalf("activated group: %+v", g)
	}
	members := listGroupMembers(t, w.ownerAPI, id, 10)
	if len(members) != 1 || members[0].Role != "manager" {
		t.Fatalf("members after the crash: %v", members)
	}
	checkGroupAgrees(t, w.db, id, []string{w.owner.ID})
	if r := postGroup(w.ownerAPI, map[string]any{"name": n}); r.StatusCode != http.StatusConflict {
		t.Fatalf("the name of an activated group: %d %s", r.StatusCode, r.Body)
	}
}
