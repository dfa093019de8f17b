//go:build integration

package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/gocql/gocql"

	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// TestHeldDeleteLandingAfterTheWorkerLeavesNoGhost is the first schedule
// of the outbox's fence (docs/design/libraries.md#queues) against the real
// node: the owner's delete has its first compare-and-set attempt held
// back (a hung node's queue) and every retry unanswered, so it answers
// 503; the outbox worker runs while the attempt is still held; then it
// lands; the client retries; the worker runs again. The item must be gone
// from every library. Without the fence the worker would fan out the live
// item and discard the mark, the held attempt then delete the item, the
// retry answer 404, and the friend's library keep the deleted item for
// good.
func TestHeldDeleteLandingAfterTheWorkerLeavesNoGhost(t *testing.T) {
	t.Parallel()
	m, ownerAPI, friend, friendAPI, c := sharedItem(t, "doomed", "public")
	var mu sync.Mutex
	first := true
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		if stmt != "content.update" || at != faultinject.BeforeLWT {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return faultinject.ErrHoldWrite
		}
		return gocql.ErrTimeoutNoResponse
	})
	r := ownerAPI.Do(http.MethodDelete, "/v1/content/"+c.ID, "", nil)
	faults(m.app).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a delete whose compare-and-set is held: %d %s", r.StatusCode, r.Body)
	}
	drain(t, m) // past the grace (0 here), the attempt still held
	if err := faults(m.app).LandHeld(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := ownerAPI.Do(http.MethodDelete, "/v1/content/"+c.ID, "", nil); r.StatusCode != http.StatusNoContent {
		t.Errorf("the client's retry: %d %s (the held attempt must have been fenced)", r.StatusCode, r.Body)
	}
	drain(t, m)
	if g := ownerAPI.Get("/v1/content/" + c.ID); g.StatusCode != http.StatusNotFound {
		t.Errorf("the deleted item reads %d", g.StatusCode)
	}
	for _, api := range []*testkit.API{friendAPI, m.api} {
		if lib := libraryOf(t, api, "/v1/users/"+friend.ID+"/library", 10); len(lib) != 0 {
			t.Errorf("the deleted item is still in the friend's library: %+v", lib)
		}
	}
}
