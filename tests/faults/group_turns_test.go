package faults

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// TestAStrangersRefusedChangesTakeNoTurnFromTheManagers: the changes of
// one group take turns in a process, and a change waiting in a queue that
// moves waits however long (domain.Gate). A stranger, no member of the
// club, sends refused changes of it (adding himself, leaving it), 20 of
// them while another of his holds the turn, then the owner adds a
// member. Nothing limits those requests, and each costs a few cheap
// reads: in line, every one held the turn for its refusal and the owner's
// add waited for all 20 (a stranger who keeps enough in flight holds the
// managers' changes past their timeout). A change its caller's own role
// refuses writes nothing and needs no turn: the stranger's answer while
// the turn is held, and the owner's add waits for none of them but the
// one that held the turn when it came.
func TestAStrangersRefusedChangesTakeNoTurnFromTheManagers(t *testing.T) {
	t.Parallel()
	const strangers = 20
	g := newGroupWorld(t)
	// Patience as the api's or longer: the queue moves, so nobody gives
	// up waiting in it.
	g.grp = groups.New(groups.Config{ClaimLease: lease, Now: g.store.Now, TurnWait: time.Minute, Closings: g.store.Closings(), Changes: g.store.GroupChanges()},
		g.svc, g.store.Users(), g.store.Claims(), groupRows(g.store), g.store.GroupMembers(), nopLog{})
	ctx := context.Background()
	third := g.signupUser(t, "third")
	var (
		mu     sync.Mutex
		events []string
		wg     sync.WaitGroup
	)
	note := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	var slowed atomic.Bool
	g.store.FaultAt = func(_ int, name string) memstore.Fault {
		if slowed.CompareAndSwap(false, true) {
			return memstore.Slow // the stranger's first change, holding the turn
		}
		return memstore.None
	}
	var added error
	addDone := make(chan struct{})
	g.store.Meanwhile = func() {
		done := make(chan struct{})
		for i := range strangers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if i%2 == 0 {
					err = g.set(g.other, g.other, groups.RoleMember)
				} else {
					err = g.remove(g.other, g.other)
				}
				if !errors.Is(err, domain.ErrForbidden) && !errors.Is(err, groups.ErrNotMember) {
					t.Errorf("a stranger's change answered %v, want a refusal", err)
				}
				note("stranger")
			}()
		}
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(300 * time.Millisecond): // in line behind the turn
		}
		note("owner's add sent")
		go func() {
			defer close(addDone)
			_, _, added = g.grp.SetMember(ctx, as(g.owner), g.group, third.ID, groups.RoleMember, nil)
			note("owner's add answered")
		}()
		time.Sleep(100 * time.Millisecond) // the add comes after the strangers
	}
	if err := g.set(g.other, g.other, groups.RoleMember); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("the stranger's change holding the turn answered %v, want forbidden", err)
	}
	select {
	case <-addDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner's add did not answer")
	}
	wg.Wait()
	if added != nil {
		t.Fatalf("the owner's add: %v", added)
	}
	mu.Lock()
	defer mu.Unlock()
	waited, sent := 0, false
	for _, e := range events {
		switch e {
		case "owner's add sent":
			sent = true
		case "owner's add answered":
			sent = false
		case "stranger":
			if sent {
				waited++
			}
		}
	}
	if waited > 0 {
		t.Errorf("the owner's add waited for %d of the stranger's %d refused changes, in line for the group's turn", waited, strangers)
	}
}

// signupUser signs up one more user.
func (g *groupWorld) signupUser(t *testing.T, name string) domain.User {
	t.Helper()
	if err := g.signup(name, name+"@example.org"); err != nil {
		t.Fatal(err)
	}
	return g.world.created[len(g.world.created)-1]
}
