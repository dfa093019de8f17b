package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/library"
)

// poolWorld: items owned by one user, each shared with two others, so
// every change of them (three members, sync limit 1) is fanned out in the
// background pool: one worker, room for two waiting items. The first
// member write of a held item waits until the test lets it go.
type poolWorld struct {
	*world
	lib    *library.Service
	owner  domain.User
	others []domain.User
	items  []string

	mu        sync.Mutex
	held      map[string]chan struct{} // item -> closed to let it go
	writes    map[string]int           // member libraries written, by item
	coalesced int
	left      int
}

func newPoolWorld(t *testing.T, items int) *poolWorld {
	t.Helper()
	w := newWorld()
	for _, n := range []string{"owner", "ann", "bob"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	p := &poolWorld{world: w, owner: w.created[0], others: w.created[1:], held: map[string]chan struct{}{}, writes: map[string]int{}}
	p.lib = library.New(library.Config{SyncFanoutLimit: 1, FanoutConcurrency: 1, FanoutWorkers: 1, FanoutQueue: 2, Now: w.store.Now,
		ObservePool: func(e library.PoolEvent) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if e.Coalesced {
				p.coalesced++
			}
			if e.LeftToOutbox {
				p.left++
			}
		}},
		w.svc, w.store.Users(), noGroups{}, w.store.Contents(), nopLog{})
	p.lib.Hooks.BeforeMember = func(item, _ string) error {
		p.mu.Lock()
		gate := p.held[item]
		p.writes[item]++
		p.mu.Unlock()
		if gate != nil {
			<-gate
		}
		return nil
	}
	for i := range items {
		name, public := fmt.Sprintf("item%d", i), string(library.VisibilityPublic)
		c, err := p.lib.Create(context.Background(), as(p.owner), library.Input{Name: &name, Visibility: &public})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range p.others {
			if _, err := p.lib.Share(context.Background(), as(p.owner), c.ID, u.ID, library.RoleViewer); err != nil {
				t.Fatal(err)
			}
		}
		p.items = append(p.items, c.ID)
	}
	p.writes = map[string]int{}
	return p
}

func (p *poolWorld) hold(item string) func() {
	gate := make(chan struct{})
	p.mu.Lock()
	p.held[item] = gate
	p.mu.Unlock()
	return func() { close(gate) }
}

func (p *poolWorld) rename(t *testing.T, item, name string) {
	t.Helper()
	if _, err := p.lib.Update(context.Background(), as(p.owner), item, library.Input{Name: &name}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls until cond holds (the pool works in goroutines).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// names lists the item names a user's library shows.
func (p *poolWorld) names(t *testing.T, u domain.User) map[string]string {
	t.Helper()
	page, err := p.lib.Library(context.Background(), as(u), u.ID, library.NewestFirst, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range page.Items {
		out[it.ContentID] = it.Name
	}
	return out
}

func (p *poolWorld) marks(t *testing.T) int {
	t.Helper()
	all, err := p.store.Contents().Outbox.Pending(context.Background(), p.store.Now().Add(time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

// TestRepeatedChangesOfAWaitingItemCoalesce: while the worker is busy,
// five renames of another item make one waiting fan-out; it writes the
// last name once to each member, and every rename's mark is done.
func TestRepeatedChangesOfAWaitingItemCoalesce(t *testing.T) {
	p := newPoolWorld(t, 2)
	busy, item := p.items[0], p.items[1]
	release := p.hold(busy)
	p.rename(t, busy, "busy")
	waitFor(t, "the busy item's fan-out to start", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.writes[busy] > 0 })
	for i := range 5 {
		p.rename(t, item, fmt.Sprintf("name%d", i))
	}
	release()
	waitFor(t, "every mark done", func() bool { return p.marks(t) == 0 })
	p.mu.Lock()
	coalesced, writes := p.coalesced, p.writes[item]
	p.mu.Unlock()
	if coalesced != 4 || writes != 3 {
		t.Fatalf("coalesced %d (want 4), member libraries written for the item %d (want 3: one fan-out)", coalesced, writes)
	}
	for _, u := range append([]domain.User{p.owner}, p.others...) {
		if got := p.names(t, u)[item]; got != "name4" {
			t.Errorf("%s's library shows %q, want the last name", u.Username, got)
		}
	}
}

// TestAFullQueueLeavesTheChangeToTheOutbox: with the worker busy and two
// items waiting, a change of a fourth item is not queued; its mark stays
// (the item hidden meanwhile) and the outbox worker does it.
func TestAFullQueueLeavesTheChangeToTheOutbox(t *testing.T) {
	p := newPoolWorld(t, 4)
	release := p.hold(p.items[0])
	p.rename(t, p.items[0], "busy")
	waitFor(t, "the busy item's fan-out to start", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.writes[p.items[0]] > 0 })
	for _, item := range p.items[1:] {
		p.rename(t, item, "renamed")
	}
	p.mu.Lock()
	left := p.left
	p.mu.Unlock()
	if left != 1 {
		t.Fatalf("changes left to the outbox: %d, want 1", left)
	}
	release()
	waitFor(t, "the queued fan-outs to finish", func() bool { return p.marks(t) == 1 })
	// Until then the page hides it: its rows show a name the item no
	// longer has.
	if got, listed := p.names(t, p.others[0])[p.items[3]]; listed {
		t.Fatalf("the fourth item shows %q before the outbox worker ran, want it hidden until its fan-out", got)
	}
	p.store.Advance(time.Minute)
	if _, err := p.lib.DrainOutbox(context.Background(), 30*time.Second, 100); err != nil {
		t.Fatal(err)
	}
	if p.marks(t) != 0 || p.names(t, p.others[0])[p.items[3]] != "renamed" {
		t.Fatalf("after the outbox worker: %d marks, name %q", p.marks(t), p.names(t, p.others[0])[p.items[3]])
	}
}

// TestCloseLeavesUnfinishedFanoutsToTheOutbox: Close waits for the fan-out
// under way only until its deadline; that one and the one waiting keep
// their marks, the pool takes nothing more, and the outbox worker of the
// next process finishes both.
func TestCloseLeavesUnfinishedFanoutsToTheOutbox(t *testing.T) {
	p := newPoolWorld(t, 3)
	release := p.hold(p.items[0])
	p.rename(t, p.items[0], "busy")
	waitFor(t, "the busy item's fan-out to start", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.writes[p.items[0]] > 0 })
	p.rename(t, p.items[1], "waiting")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if left := p.lib.Close(ctx); left != 2 {
		t.Fatalf("Close left %d items, want 2 (one under way, one waiting)", left)
	}
	p.rename(t, p.items[2], "after close")
	if p.marks(t) != 3 {
		t.Fatalf("marks after Close: %d, want 3", p.marks(t))
	}
	release() // the stopped fan-out's member write returns; nothing more starts

	// The next process: a new service on the same tables.
	next := library.New(library.Config{SyncFanoutLimit: 1, Now: p.store.Now}, p.svc, p.store.Users(), noGroups{}, p.store.Contents(), nopLog{})
	p.store.Advance(time.Minute)
	waitFor(t, "the outbox worker to finish every item", func() bool {
		_, _ = next.DrainOutbox(context.Background(), 30*time.Second, 100)
		return p.marks(t) == 0
	})
	want := map[string]string{p.items[0]: "busy", p.items[1]: "waiting", p.items[2]: "after close"}
	for _, u := range p.others {
		got := p.names(t, u)
		for item, name := range want {
			if got[item] != name {
				t.Errorf("%s's library shows %q for %s, want %q", u.Username, got[item], item, name)
			}
		}
	}
}
