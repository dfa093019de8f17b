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

// TestAGrantsProofHoldsNoTurnFromTheGroupsOtherChanges: making a manager
// asks the caller's proof, a password's argon2id verification behind the
// hasher's line, and asked inside the change's decision it held this
// process's turn at the group all that while. A queue that moves is
// waited in however long, so a stolen manager session sending grants with
// wrong passwords (each limited per address, but a burst passes the
// throttle's look at once and hashes) kept the managers' changes of the
// group in line, one hash after another, past their timeout. The proof is
// asked with no turn held: a change that comes while it is being checked
// goes ahead at once, and the grant then decides again, asking nothing
// more.
func TestAGrantsProofHoldsNoTurnFromTheGroupsOtherChanges(t *testing.T) {
	t.Parallel()
	g := newGroupWorld(t)
	// Patience as the api's or longer: nobody gives up waiting in line.
	g.grp = groups.New(groups.Config{ClaimLease: lease, Now: g.store.Now, TurnWait: time.Minute, Closings: g.store.Closings(), Changes: g.store.GroupChanges()},
		g.svc, g.store.Users(), g.store.Claims(), groupRows(g.store), g.store.GroupMembers(), nopLog{})
	ctx := context.Background()
	proving, release := make(chan struct{}), make(chan struct{})
	asked := 0
	proof := func(context.Context) error {
		asked++
		close(proving)
		<-release // the hasher's line
		return nil
	}
	granted := make(chan error, 1)
	go func() {
		_, _, err := g.grp.SetMember(ctx, as(g.owner), g.group, g.friend.ID, groups.RoleManager, proof)
		granted <- err
	}()
	<-proving
	added := make(chan error, 1)
	go func() { added <- g.set(g.owner, g.other, groups.RoleMember) }()
	var addErr error
	waited := false
	select {
	case addErr = <-added:
	case <-time.After(2 * time.Second):
		waited = true
	}
	close(release)
	grantErr := <-granted
	if waited {
		addErr = <-added
		t.Error("the add waited in line for the grant's proof to be checked")
	}
	if grantErr != nil {
		t.Fatalf("the grant: %v", grantErr)
	}
	if addErr != nil {
		t.Fatalf("the add while the grant's proof was checked: %v", addErr)
	}
	gr, err := g.grp.GetSerial(ctx, g.group)
	if err != nil || gr.MemberCount != 3 || gr.ManagerCount != 2 || gr.Pending != nil {
		t.Fatalf("the group counts %d members, %d managers, pending %+v (%v), want 3, 2, none", gr.MemberCount, gr.ManagerCount, gr.Pending, err)
	}
	if asked != 1 {
		t.Errorf("the proof was asked %d times, want once", asked)
	}
}
