package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// The outbox worker discards a mark only once no attempt of its change
// can still apply: it fences the item (a compare-and-set that moves the
// version on and changes nothing else) and fans out the state as of the
// fence, and a change whose compare-and-set rests on a read of a row
// whose fences may have taken its mark marks again first. These are the
// schedules that fail without them (A: a held change applying after the
// worker, without the fence; B: a change slower than the grace, without
// the second mark), each on its own (docs/design/libraries.md#queues).

// holdFirst makes the first call named stmt take fault; every other call
// runs as usual.
func holdFirst(st *memstore.Store, stmt string, fault memstore.Fault) {
	fired := false
	st.FaultAt = func(_ int, name string) memstore.Fault {
		if name == stmt && !fired {
			fired = true
			return fault
		}
		return memstore.None
	}
}

// heldAcrossTheWorker runs action with its first call named stmt held
// back, so that it answers 503; then, past the grace, the outbox worker
// while the call is still held; then the call lands.
func heldAcrossTheWorker(t *testing.T, l *libWorld, stmt string, action func() error) {
	t.Helper()
	holdFirst(l.store, stmt, memstore.LandLate)
	if err := action(); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("an action whose %s is held answered %v, want 503", stmt, err)
	}
	l.store.FaultAt = nil
	if err := l.drain(); err != nil {
		t.Fatalf("the worker while %s is held: %v", stmt, err)
	}
	l.store.Land()
}

// TestAHeldDeleteLandingAfterTheWorkerLeavesNoGhost is schedule A: the
// owner's delete has its compare-and-set held back and answers 503; past
// the grace the worker runs while it is still held; then it lands; the
// client retries; the worker runs again. The item must be gone from every
// library (without the fence the worker fans out the live item and
// discards the mark, the held delete lands, the retry answers 404, and
// the friend keeps the deleted item for good).
func TestAHeldDeleteLandingAfterTheWorkerLeavesNoGhost(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	del := func() error { return l.lib.Delete(context.Background(), as(l.owner), l.item) }
	heldAcrossTheWorker(t, l, "content.update", del)
	if err := del(); err != nil {
		t.Errorf("the client's retry answered %v, want success (the held attempt was fenced)", err)
	}
	if err := l.drain(); err != nil {
		t.Fatalf("the worker after the retry: %v", err)
	}
	snap := l.store.ContentSnapshot()
	if !itemOf(snap, l.item).Deleted {
		t.Errorf("the item is not deleted: %+v", itemOf(snap, l.item))
	}
	checkContent(t, "held delete", l, snap)
}

// TestAHeldUpdateToPrivateLandingAfterTheWorkerLeaksNothing is schedule A
// with an update to private whose client gives up after the 503: once the
// held compare-and-set lands, the libraries must show the item as its row
// says (without the fence: private in the row, public with its old name in
// every member's library, for anonymous callers too).
func TestAHeldUpdateToPrivateLandingAfterTheWorkerLeaksNothing(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	heldAcrossTheWorker(t, l, "content.update", func() error { return l.update("hidden", string(library.VisibilityPrivate)) })
	if err := l.drain(); err != nil {
		t.Fatalf("the worker after the landing: %v", err)
	}
	checkContent(t, "held update to private", l, l.store.ContentSnapshot())
}

// TestAHeldCreationLandingAfterTheWorkerIsWholeOrNothing: a creation
// whose insert is held back answers 503; the worker finds no item
// (without the fence: "never happened", mark discarded); then the insert
// lands. The item must be whole (its creator a member, in their library)
// or never appear.
func TestAHeldCreationLandingAfterTheWorkerIsWholeOrNothing(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	name, private := "new", string(library.VisibilityPrivate)
	heldAcrossTheWorker(t, l, "content.create", func() error {
		_, err := l.lib.Create(context.Background(), as(l.other), library.Input{Name: &name, Visibility: &private})
		return err
	})
	if err := l.drain(); err != nil {
		t.Fatalf("the worker after the landing: %v", err)
	}
	checkContent(t, "held creation", l, l.store.ContentSnapshot())
}

// TestASlowCreationFencedByTheWorkerSaysItWasNeverMade: a creation's
// insert is slow past the outbox's grace, and the worker runs meanwhile,
// finds no item behind the mark and fences the id, so the insert applies
// nothing. The answer was the bare 503 "The database could not answer in
// time; try again.", the words of a request that may or may not have
// taken effect; this one did not, for certain, and the caller should be
// told the item was not made and may be created again (a retry of the
// same request makes a new item, not a second copy).
func TestASlowCreationFencedByTheWorkerSaysItWasNeverMade(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	slowFirst(l.store, "content.create", func() {
		l.store.Meanwhile = nil
		if err := l.drain(); err != nil {
			t.Errorf("the worker while the creation is slow: %v", err)
		}
	})
	name, public := "new", string(library.VisibilityPublic)
	_, err := l.lib.Create(context.Background(), as(l.other), library.Input{Name: &name, Visibility: &public})
	l.store.FaultAt = nil
	var de *domain.Error
	if !errors.Is(err, domain.ErrUnavailable) || !errors.As(err, &de) || !strings.Contains(de.Message, "not created") {
		t.Fatalf("a creation fenced by the worker answered %v, want a 503 saying the item was not created", err)
	}
	if err := l.drain(); err != nil {
		t.Fatal(err)
	}
	checkContent(t, "fenced creation", l, l.store.ContentSnapshot())
}

// TestASlowChangeKeepsAMarkForItsOwnFanout is schedule B: an update's
// compare-and-set outlasts the grace (the worker runs meanwhile, finds
// the item as it was and finishes its mark); then it applies, answers
// success, and its own fan-out fails at the friend. The friend's library
// must still get the new name from the worker (without a mark of its own,
// nothing would ever finish the friend).
func TestASlowChangeKeepsAMarkForItsOwnFanout(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	stopFriend := func(_, principalID string) error {
		if principalID == l.friend.ID {
			return errors.New("stopped (test hook)")
		}
		return nil
	}
	l.store.Meanwhile = func() {
		if err := l.drain(); err != nil {
			t.Errorf("the worker while the update is slow: %v", err)
		}
		l.lib.Hooks.BeforeMember = stopFriend // the change's own fan-out fails there
	}
	holdFirst(l.store, "content.update", memstore.Slow)
	if err := l.update("renamed", ""); err != nil {
		t.Fatalf("the slow update answered %v", err)
	}
	l.store.FaultAt, l.store.Meanwhile, l.lib.Hooks.BeforeMember = nil, nil, nil
	if err := l.drain(); err != nil {
		t.Fatalf("the worker after the update: %v", err)
	}
	snap := l.store.ContentSnapshot()
	if itemOf(snap, l.item).Name != "renamed" {
		t.Errorf("the update is lost: %+v", itemOf(snap, l.item))
	}
	checkContent(t, "slow update", l, snap)
}

// TestAChangePausedPastTheGraceMarksAgain is schedule B without a slow
// store call: a share pauses after its mark, before its compare-and-set
// (here: its read of the principal's membership stalls) for longer than
// the grace, and the worker runs in the pause. The share must mark again
// before its compare-and-set, so that when carrying it out fails, the
// worker still finishes it (else the pause's worker discards the only
// mark, and the share stays pending for good).
func TestAChangePausedPastTheGraceMarksAgain(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	sharePausedAfterItsMark(t, l, "paused share", func() {
		if err := l.drain(); err != nil {
			t.Errorf("the worker in the pause: %v", err)
		}
	})
}

// sharePausedAfterItsMark runs the owner's share of the world's item with
// the other user: after its mark, before its compare-and-set, it pauses
// (pause runs), and once resumed its own fan-out to the user fails. Then
// the worker runs, and the share must be whole (named name in failures).
func sharePausedAfterItsMark(t *testing.T, l *libWorld, name string, pause func()) {
	t.Helper()
	stores := l.store.Contents()
	p := &pauseAfterMark{Outbox: stores.Outbox, pause: pause}
	stores.Outbox = p
	stores.Members = pausedMembers{MemberStore: stores.Members, p: p}
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: l.store.Now, Background: atOnce},
		l.svc, l.store.Users(), noGroups{}, stores, nopLog{})
	lib.Hooks.BeforeMember = func(_, principalID string) error {
		if p.done && principalID == l.other.ID {
			return errors.New("stopped (test hook)")
		}
		return nil
	}
	if _, err := lib.Share(context.Background(), as(l.owner), l.item, l.other.ID, library.RoleViewer); err != nil {
		t.Fatalf("the paused share answered %v", err)
	}
	if !p.done {
		t.Fatal("the share never paused")
	}
	lib.Hooks.BeforeMember = nil
	if err := l.drain(); err != nil {
		t.Fatalf("the worker after the share: %v", err)
	}
	snap := l.store.ContentSnapshot()
	if memberRole(snap, l.item, l.other.ID) != library.RoleViewer {
		t.Errorf("the share is lost")
	}
	checkContent(t, name, l, snap)
}

// pauseAfterMark is an outbox after whose first mark the next member read
// stalls for longer than the grace (the clock moves on and pause runs).
type pauseAfterMark struct {
	library.Outbox
	mu          sync.Mutex
	armed, done bool
	pause       func()
}

func (p *pauseAfterMark) Mark(ctx context.Context, contentID string) (library.OutboxEntry, error) {
	m, err := p.Outbox.Mark(ctx, contentID)
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
	return m, err
}

// stall runs the pause once, the first time it is called after a mark.
func (p *pauseAfterMark) stall() {
	p.mu.Lock()
	fire := p.armed && !p.done
	p.done = p.done || fire
	p.mu.Unlock()
	if fire {
		p.pause()
	}
}

type pausedMembers struct {
	library.MemberStore
	p *pauseAfterMark
}

func (m pausedMembers) Find(ctx context.Context, contentID string, principalIDs []string) ([]library.Member, error) {
	m.p.stall()
	return m.MemberStore.Find(ctx, contentID, principalIDs)
}

// TestAChangeReadingPastAFenceAndAnotherChangeMarksAgain: the owner's
// update marks, reads the item and removes its lean rows; 2 s later,
// before its compare-and-set, a worker whose clock runs 3.5 s ahead takes
// the mark, fences the item and discards the mark, and then a share to
// the other user is recorded and finished on top of the fence. The
// update's compare-and-set fails; it reads again a row last written by
// the share, not by the fence, two versions past its read. Its mark was
// taken all the same: it must mark again before its compare-and-set, so
// that when its own fan-out stops at the friend, the worker finishes it.
// A change that looked only for the fence's own write in the row it
// reads again would not, nor one that went by its clock.
func TestAChangeReadingPastAFenceAndAnotherChangeMarksAgain(t *testing.T) {
	t.Parallel()
	l := newLibWorld(t)
	l.lib.Hooks.BeforeRecord = workerAheadBeforeTheRecord(t, l, func() {
		if err := l.share(l.other, library.RoleViewer); err != nil {
			t.Fatalf("the share on top of the fence: %v", err)
		}
	})
	if err := l.update("renamed", ""); err != nil {
		t.Fatalf("the update answered %v", err)
	}
	l.lib.Hooks.BeforeRecord = nil
	l.mu.Lock()
	l.stop = ""
	l.mu.Unlock()
	if err := l.workers(); err != nil {
		t.Fatal(err)
	}
	snap := l.store.ContentSnapshot()
	if itemOf(snap, l.item).Name != "renamed" || memberRole(snap, l.item, l.other.ID) != library.RoleViewer {
		t.Errorf("the update or the share is lost: %+v", itemOf(snap, l.item))
	}
	checkContent(t, "fence then a share", l, snap)
}

// workerAhead is an outbox worker of l's store whose clock (its
// service's and its outbox's) runs 3.5 s ahead of the store's.
func workerAhead(l *libWorld) *library.Service {
	skew := 3500 * time.Millisecond
	stores := l.store.Contents()
	stores.Outbox = l.store.SkewedOutbox(skew)
	return library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1,
		Now: func() time.Time { return l.store.Now().Add(skew) }, Background: func(f func()) { f() }},
		l.svc, l.store.Users(), noGroups{}, stores, nopLog{})
}

// workerAheadBeforeTheRecord is a BeforeRecord hook for the world's first
// change: 2 s after its mark, an outbox worker whose clock (its
// service's and its outbox's) runs 3.5 s ahead takes the mark, fences the
// item and discards the mark; then runs (nil: nothing), and the
// change's own fan-out is set to stop at the friend. Later compare-and-sets
// (the change's next round, or one of then) pass.
func workerAheadBeforeTheRecord(t *testing.T, l *libWorld, then func()) func(string) {
	return fenceFromAhead(t, l, func() {
		if then != nil {
			then()
		}
		l.mu.Lock()
		l.stop = l.friend.ID // the change's own fan-out stops at the friend
		l.mu.Unlock()
	})
}

// fenceFromAhead is a BeforeRecord hook for the world's first change: 2 s
// after its mark, an outbox worker whose clock runs 3.5 s ahead
// (workerAhead) takes the mark, fences the item and discards the mark;
// then runs.
func fenceFromAhead(t *testing.T, l *libWorld, then func()) func(string) {
	worker := workerAhead(l)
	fired := false
	return func(string) {
		if fired {
			return
		}
		fired = true
		l.store.Advance(2 * time.Second)
		if n, err := worker.DrainOutbox(context.Background(), library.DefaultOutboxGrace, 100); err != nil || n != 1 {
			t.Fatalf("the worker ahead: %d items, %v", n, err)
		}
		then()
	}
}
