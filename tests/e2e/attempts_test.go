//go:build integration

package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"shelf/tests/testkit"
)

// twoAtOnce runs two requests of one operation on one row in the order
// that would lose the winner's index entry were the attempts to share
// one (every attempt's entry is its own: docs/design/deletion.md): the
// first writes its entry, then the second its own, then the first's
// compare-and-set applies and its process dies (stop, at the step after
// it), then the second's loses and ends its own entry. Install entry at
// the operation's "entry" step and stop at the step after a
// compare-and-set applied.
type twoAtOnce struct {
	mu                                        sync.Mutex
	entries                                   int
	firstEntered, secondEntered, firstStopped chan struct{}
	once                                      sync.Once
}

func newTwoAtOnce() *twoAtOnce {
	return &twoAtOnce{firstEntered: make(chan struct{}), secondEntered: make(chan struct{}), firstStopped: make(chan struct{})}
}

func (r *twoAtOnce) entry() {
	r.mu.Lock()
	r.entries++
	n := r.entries
	r.mu.Unlock()
	switch n {
	case 1:
		close(r.firstEntered)
		<-r.secondEntered
	case 2:
		close(r.secondEntered)
		<-r.firstStopped
	}
}

func (r *twoAtOnce) stop() error {
	r.once.Do(func() { close(r.firstStopped) })
	return errCrash
}

// run sends first, waits for its entry, sends second; it returns both
// answers.
func (r *twoAtOnce) run(first, second func() *testkit.Response) (*testkit.Response, *testkit.Response) {
	done := make(chan *testkit.Response, 1)
	go func() { done <- first() }()
	<-r.firstEntered
	b := second()
	return <-done, b
}

// TestTwoClosingsAtOnceAreFinishedByTheRepair: the group's two managers
// close it at once. The owner's compare-and-set applies and its process
// dies; the other manager's loses (404: the group is gone to it). The
// repair finds the owner's closing by its own entry and finishes it.
func TestTwoClosingsAtOnceAreFinishedByTheRepair(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	w := newClosingWorld(t, m)
	race := newTwoAtOnce()
	m.app.Groups.Hooks.AfterStep = func(op, step string) error {
		switch {
		case op == "close" && step == "entry":
			race.entry()
		case op == "close" && step == "cas":
			return race.stop()
		}
		return nil
	}
	first, second := race.run(func() *testkit.Response { return closeGroup(w.ownerAPI, w.group.ID) },
		func() *testkit.Response { return closeGroup(w.mgrAPI, w.group.ID) })
	m.app.Groups.Hooks.AfterStep = nil
	if first.StatusCode != http.StatusInternalServerError || second.StatusCode != http.StatusNotFound {
		t.Fatalf("the closings answered %d %s and %d %s; want 500 (stopped) and 404", first.StatusCode, first.Body, second.StatusCode, second.Body)
	}
	if n := ownEntries(t, m.db, "groups", "closed_at", "closing_attempt", "group_closing_attempts_by_start", "group_id", w.group.ID); n != 1 {
		t.Fatalf("the closing group has %d entries of its closing; want 1", n)
	}
	rep, err := m.app.Lifecycle.RepairClosings(context.Background(), false)
	if err != nil || rep.Finished < 1 {
		t.Fatalf("repair: %v (%+v)", err, rep)
	}
	w.check(t)
}

// TestTwoDeletionsAtOnceAreFinishedByTheRepair: the user and an admin
// delete the account at once. The user's compare-and-set applies and its
// process dies before it writes the job's row; the admin's loses, ends its
// own entry, finds the account deleting, and dies too. The worker's pass
// finds the user's deletion by its own entry, makes the job's row and
// finishes it.
func TestTwoDeletionsAtOnceAreFinishedByTheRepair(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	w := newDeletionWorld(t, m)
	race := newTwoAtOnce()
	m.app.Lifecycle.Hooks.AfterDeletionStep = func(step string) error {
		if step == "entry" {
			race.entry()
			return nil
		}
		return race.stop()
	}
	first, second := race.run(func() *testkit.Response { return deleteUser(w.userAPI, w.user.ID) },
		func() *testkit.Response { return deleteUser(m.admin, w.user.ID) })
	m.app.Lifecycle.Hooks.AfterDeletionStep = nil
	if first.StatusCode != http.StatusInternalServerError || second.StatusCode != http.StatusInternalServerError {
		t.Fatalf("the deletions answered %d %s and %d %s; want both stopped (500)", first.StatusCode, first.Body, second.StatusCode, second.Body)
	}
	if n := ownEntries(t, m.db, "users", "deleted_at", "deletion_attempt", "account_deletion_attempts_by_start", "user_id", w.user.ID); n != 1 {
		t.Fatalf("the deleting account has %d entries of its deletion; want 1", n)
	}
	rep, err := m.app.Lifecycle.RepairDeletions(context.Background(), false)
	if err != nil || rep.Finished < 1 {
		t.Fatalf("repair: %v (%+v)", err, rep)
	}
	w.check(t)
}
