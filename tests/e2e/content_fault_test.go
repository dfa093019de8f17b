//go:build integration

package e2e

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/internal/app"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// drain runs the outbox worker over every mark, however young.
func drain(t *testing.T, m *moderators) {
	t.Helper()
	if _, err := m.app.Contents.DrainOutbox(context.Background(), 0, 1000); err != nil {
		t.Fatal(err)
	}
}

// failWrite makes every plain write named stmt fail before it is sent.
func failWrite(stmt string) faultinject.Func {
	return func(name string, at faultinject.Point) error {
		if name == stmt && at == faultinject.BeforeWrite {
			return &gocql.RequestErrUnavailable{}
		}
		return nil
	}
}

// sharedItem is an owner's item of a visibility shared with a friend as
// viewer, on an app of its own.
func sharedItem(t *testing.T, name, visibility string) (*moderators, *testkit.API, userBody, *testkit.API, contentBody) {
	t.Helper()
	m := newModerators(t, nil)
	_, ownerAPI := m.member(t)
	friend, friendAPI := m.member(t)
	c := createContent(t, ownerAPI, name, visibility)
	share(t, ownerAPI, c.ID, friend.ID, "viewer")
	return m, ownerAPI, friend, friendAPI, c
}

// TestUnshareWhoseMemberDeleteFailsStaysUnshared: the unshare is decided,
// then its content_members delete fails. The principal must lose the item
// at once (the answer says it is done), and the outbox worker must not fan
// it back out: a worker that took the member row still there for "shared
// again" would fan the private item back into the principal's library
// (L1, L3; docs/design/libraries.md).
func TestUnshareWhoseMemberDeleteFailsStaysUnshared(t *testing.T) {
	t.Parallel()
	m, ownerAPI, friend, friendAPI, c := sharedItem(t, "secret", "private")
	faults(m.app).Set(failWrite("content_members.delete"))
	r := unshare(ownerAPI, c.ID, friend.ID)
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusNoContent {
		t.Fatalf("unshare whose member delete failed: %d %s", r.StatusCode, r.Body)
	}
	if g := friendAPI.Get("/v1/content/" + c.ID); g.StatusCode != http.StatusNotFound {
		t.Fatalf("the unshared friend still opens the private item: %d", g.StatusCode)
	}
	drain(t, m)
	if g := friendAPI.Get("/v1/content/" + c.ID); g.StatusCode != http.StatusNotFound {
		t.Fatalf("after the outbox worker, the friend opens the private item again: %d", g.StatusCode)
	}
	if lib := libraryOf(t, friendAPI, "/v1/users/"+friend.ID+"/library", 10); len(lib) != 0 {
		t.Fatalf("after the outbox worker, the item is back in the friend's library: %+v", lib)
	}
	if r := unshare(ownerAPI, c.ID, friend.ID); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unsharing again: %d %s", r.StatusCode, r.Body)
	}
}

// TestShareRacingDeleteLeavesNoGhost: the item is deleted between a
// share's compare-and-set and its writes. Nobody may find the deleted item
// in a library afterwards: a share's catch-up that wrote the newest
// (deleted) version into the principal's library would leave a ghost for
// good (L3; docs/design/libraries.md).
func TestShareRacingDeleteLeavesNoGhost(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	owner, ownerAPI := m.member(t)
	friend, friendAPI := m.member(t)
	c := createContent(t, ownerAPI, "doomed", "loggedin")
	var fired atomic.Bool
	var del *testkit.Response
	faults(m.app).Set(func(name string, at faultinject.Point) error {
		if name == "content_members.put" && at == faultinject.BeforeWrite && fired.CompareAndSwap(false, true) {
			del = ownerAPI.Do(http.MethodDelete, "/v1/content/"+c.ID, "", nil)
		}
		return nil
	})
	r := ownerAPI.Send(http.MethodPut, "/v1/content/"+c.ID+"/members/"+friend.ID, map[string]string{"role": "viewer"})
	faults(m.app).Set(nil)
	if !fired.Load() || del.StatusCode != http.StatusNoContent {
		t.Fatalf("the delete in the middle of the share did not run: %v %+v", fired.Load(), del)
	}
	if r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusNotFound {
		t.Fatalf("the share: %d %s", r.StatusCode, r.Body)
	}
	for _, when := range []string{"after both answered", "after the outbox worker"} {
		if when != "after both answered" {
			drain(t, m)
		}
		for _, u := range []struct {
			id  string
			api *testkit.API
		}{{friend.ID, friendAPI}, {owner.ID, ownerAPI}} {
			if lib := libraryOf(t, u.api, "/v1/users/"+u.id+"/library", 10); len(lib) != 0 {
				t.Fatalf("%s: the deleted item is in %s's library: %+v", when, u.id, lib)
			}
		}
		if g := friendAPI.Get("/v1/content/" + c.ID); g.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: the deleted item opens: %d", when, g.StatusCode)
		}
	}
}

// TestConcurrentSharesOfOnePrincipalCountOnce: eight shares of one user as
// manager at once, with the member write slowed down. One of them adds the
// user (201), the others find a member (200); the item counts the user
// once, so once the user is removed the owner is the last manager again
// (409 last_manager). A share that lost the compare-and-set and read the
// member rows before the winner had written them would count the user
// again: an item could end with no manager while its count said one (L3,
// L4; docs/design/libraries.md).
func TestConcurrentSharesOfOnePrincipalCountOnce(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	owner, ownerAPI := m.member(t)
	friend, _ := m.member(t)
	for round := 0; round < 4; round++ {
		c := createContent(t, ownerAPI, "counted", "private")
		faults(m.app).Set(func(name string, at faultinject.Point) error {
			if name == "content_members.put" && at == faultinject.BeforeWrite {
				time.Sleep(30 * time.Millisecond)
			}
			return nil
		})
		var created atomic.Int32
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := ownerAPI.Send(http.MethodPut, "/v1/content/"+c.ID+"/members/"+friend.ID, map[string]string{"role": "manager"})
				switch r.StatusCode {
				case http.StatusCreated:
					created.Add(1)
				case http.StatusOK:
				default:
					t.Errorf("share: %d %s", r.StatusCode, r.Body)
				}
			}()
		}
		wg.Wait()
		faults(m.app).Set(nil)
		if n := created.Load(); n != 1 {
			t.Fatalf("round %d: %d shares answered 201 for one new member", round, n)
		}
		if r := unshare(ownerAPI, c.ID, friend.ID); r.StatusCode != http.StatusNoContent {
			t.Fatalf("round %d: unshare: %d %s", round, r.StatusCode, r.Body)
		}
		r := unshare(ownerAPI, c.ID, owner.ID)
		if r.StatusCode != http.StatusConflict || r.Problem(t).Code != "last_manager" {
			t.Fatalf("round %d: the last manager left the item: %d %s, want 409 last_manager", round, r.StatusCode, r.Body)
		}
	}
}

// TestReshareDuringUnshareKeepsTheItem: the user is shared again while the
// unshare is writing the library. Both answer; the user is a member again
// and finds the item in their library. An unshare's catch-up that removed
// the library entry at the re-share's version would win the tie, and a
// member's library would lack the item (L3).
func TestReshareDuringUnshareKeepsTheItem(t *testing.T) {
	t.Parallel()
	m, ownerAPI, friend, friendAPI, c := sharedItem(t, "again", "private")
	var fired atomic.Bool
	var reshare *testkit.Response
	faults(m.app).Set(func(name string, at faultinject.Point) error {
		if name == "library_index.delete" && at == faultinject.BeforeWrite && fired.CompareAndSwap(false, true) {
			reshare = ownerAPI.Send(http.MethodPut, "/v1/content/"+c.ID+"/members/"+friend.ID, map[string]string{"role": "viewer"})
		}
		return nil
	})
	r := unshare(ownerAPI, c.ID, friend.ID)
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusNoContent || !fired.Load() || reshare.StatusCode != http.StatusCreated {
		t.Fatalf("unshare %d %s; re-share in its middle: %v %+v", r.StatusCode, r.Body, fired.Load(), reshare)
	}
	for _, when := range []string{"after both answered", "after the outbox worker"} {
		if when != "after both answered" {
			drain(t, m)
		}
		if g := friendAPI.Get("/v1/content/" + c.ID); g.StatusCode != http.StatusOK {
			t.Fatalf("%s: the member cannot open the item: %d", when, g.StatusCode)
		}
		if lib := libraryOf(t, friendAPI, "/v1/users/"+friend.ID+"/library", 10); len(lib) != 1 || lib[0].ID != c.ID {
			t.Fatalf("%s: the member's library: %+v", when, lib)
		}
	}
}

// TestRejectedChangeKeepsAnEarlierMark: a public item turns private but its
// fan-out stops before one member's library; then a PATCH is rejected
// (400). The outbox worker must still finish the first change: a rejected
// change's Done that deleted the item's whole outbox row would take the
// earlier mark with it (L3, L4; docs/design/libraries.md#queues). The
// item's rows are lean: the change removed them before it was recorded,
// so without the earlier mark the member would never find the item in
// their own library again.
func TestRejectedChangeKeepsAnEarlierMark(t *testing.T) {
	t.Parallel()
	m, ownerAPI, friend, friendAPI, c := sharedItem(t, "going private", "public")
	m.app.Contents.Hooks.BeforeMember = func(_, principalID string) error {
		if principalID == friend.ID {
			return errors.New("stopped here (test hook)")
		}
		return nil
	}
	r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"visibility": "private"})
	m.app.Contents.Hooks.BeforeMember = nil
	if r.StatusCode != http.StatusOK {
		t.Fatalf("update: %d %s", r.StatusCode, r.Body)
	}
	// The rows tell that the fan-out stopped: the change removed the
	// member's lean rows first, and none were written since.
	if n := countRows(t, m.db, `SELECT content_id FROM library_by_principal WHERE principal_id = ? AND bucket = 'private'`, friend.ID); n != 0 {
		t.Fatalf("the hook did not stop the fan-out: %d rows in the member's private bucket", n)
	}
	if r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"name": ""}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad update: %d %s", r.StatusCode, r.Body)
	}
	drain(t, m)
	if lib := libraryOf(t, m.api, "/v1/users/"+friend.ID+"/library", 10); len(lib) != 0 {
		t.Fatalf("anonymous callers still see the private item in the member's library: %+v", lib)
	}
	if n := countRows(t, m.db, `SELECT content_id FROM library_by_principal WHERE principal_id = ? AND bucket = 'public'`, friend.ID); n != 0 {
		t.Fatalf("the outbox worker left %d rows in the member's public bucket", n)
	}
	if lib := libraryOf(t, friendAPI, "/v1/users/"+friend.ID+"/library", 10); len(lib) != 1 || lib[0].ID != c.ID {
		t.Fatalf("the member's own library after the outbox worker: %+v; want the item", lib)
	}
}

// TestFanoutWhoseRowsFailedIsRedoneByTheWorker: an update's fan-out writes
// a member's index entry, then its library rows fail. The outbox worker
// must write them: a worker that took the index entry at the new version
// for "already there" would skip the member, the page would drop the old
// rows as stale, and the item would be missing from the member's library
// until the next change (TestExploreContent).
func TestFanoutWhoseRowsFailedIsRedoneByTheWorker(t *testing.T) {
	t.Parallel()
	m, ownerAPI, friend, friendAPI, c := sharedItem(t, "before", "public")
	faults(m.app).Set(failWrite("library.batch"))
	r := ownerAPI.Send(http.MethodPatch, "/v1/content/"+c.ID, map[string]string{"name": "after"})
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("update whose rows failed: %d %s", r.StatusCode, r.Body)
	}
	drain(t, m)
	for _, api := range []*testkit.API{friendAPI, m.api} {
		if lib := libraryOf(t, api, "/v1/users/"+friend.ID+"/library", 10); len(lib) != 1 || lib[0].Name != "after" {
			t.Fatalf("after the outbox worker, the member's library: %+v", lib)
		}
	}
}

// TestClockOffsetShiftsTheProcessClock: app.ClockOffset (tests of clock
// skew between instances, such as the nemesis's) moves the clock the
// services stamp with: an item made by a process an hour ahead is last
// modified an hour from now, and its outbox mark, written at its own time
// an hour ahead, is still deleted by its key once the creation is done.
func TestClockOffsetShiftsTheProcessClock(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, nil, app.ClockOffset(time.Hour))
	n := name("ahead")
	mustSignup(t, api, n, n+"@example.org")
	me := api.As(mustLogin(t, api, n).Token)
	c := createContent(t, me, "from the future", "public")
	if d := time.Until(c.LastModified); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("lastModified %v is %v from now, want an hour", c.LastModified, d)
	}
	backlog, oldest, err := a.Contents.OutboxBacklog(context.Background())
	if err != nil || backlog != 0 || oldest != 0 {
		t.Fatalf("the creation's mark is left: %d, %v, %v", backlog, oldest, err)
	}
}
