package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/moderation"
)

// errStopped is a process dying at a test hook.
var errStopped = errors.New("stopped (test hook)")

// racePair runs two attempts of one operation on one row at once, in the
// order that loses the winner's index entry when one entry is shared
// (docs/design/deletion.md, "Every attempt's record is its own"): the
// winner writes its entry, then the loser writes its own, then the
// winner's compare-and-set applies and its process dies, then the loser's
// compare-and-set loses. The test installs entry and afterApplied in the
// operation's step hook; run runs the attempts.
type racePair struct {
	winnerEntered, loserEntered, winnerApplied chan struct{}
	entries                                    atomic.Int32
	once                                       sync.Once
}

func newRacePair() *racePair {
	return &racePair{winnerEntered: make(chan struct{}), loserEntered: make(chan struct{}), winnerApplied: make(chan struct{})}
}

// entry is the hook at an attempt's "entry" step (its index entry written,
// its compare-and-set not yet sent): the first attempt there waits for the
// second's entry, the second for the first's compare-and-set.
func (r *racePair) entry() {
	switch r.entries.Add(1) {
	case 1:
		close(r.winnerEntered)
		<-r.loserEntered
	case 2:
		close(r.loserEntered)
		<-r.winnerApplied
	}
}

// afterApplied is the hook at the first step after a compare-and-set that
// applied: the process dies there (every attempt's).
func (r *racePair) afterApplied() error {
	r.once.Do(func() { close(r.winnerApplied) })
	return errStopped
}

// run starts the winner, waits for its entry, calls advance (the test
// moves the clock there) and runs the loser; it returns both answers.
func (r *racePair) run(advance func(), winner, loser func() error) (werr, lerr error) {
	done := make(chan error, 1)
	go func() { done <- winner() }()
	<-r.winnerEntered
	advance()
	lerr = loser()
	return <-done, lerr
}

// TestTwoClosingsAtOnceAreFinishedByTheRepair: two managers close one
// group at once (in the same millisecond, or a second apart), no fault.
// The first's compare-and-set applies and its process dies; the second's
// loses (404: the group is gone to it), and it ends its own index entry.
// The repair must still find the first's closing and finish it: every
// attempt's entry is its own (docs/design/closing.md), where one entry
// per group and day, ended by the loser, would leave the group closing
// for good.
func TestTwoClosingsAtOnceAreFinishedByTheRepair(t *testing.T) {
	t.Parallel()
	for _, apart := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("apart-", apart), func(t *testing.T) {
			t.Parallel()
			c := newCloseWorld(t)
			if err := c.set(c.owner, c.friend, groups.RoleManager); err != nil {
				t.Fatal(err)
			}
			r := newRacePair()
			c.grp.Hooks.AfterStep = func(op, step string) error {
				switch {
				case op == "close" && step == "entry":
					r.entry()
				case op == "close" && step == "cas":
					return r.afterApplied()
				}
				return nil
			}
			werr, lerr := r.run(func() { c.store.Advance(apart) },
				func() error { return c.close(c.owner) }, func() error { return c.close(c.friend) })
			if !errors.Is(werr, errStopped) || !domainIs(lerr, domain.ErrNotFound) {
				t.Fatalf("the closings answered %v and %v; want the stop and 404", werr, lerr)
			}
			c.grp.Hooks.AfterStep = nil
			if len(c.store.ClosingSnapshot()) == 0 {
				t.Errorf("the closing group has no entry left: nothing can find it")
			}
			if err := repairClosings(c, nil); err != nil {
				t.Fatal(err)
			}
			if st := c.status(c.group); st != domain.StatusClosed {
				t.Errorf("after the repair the group is %q", st)
			}
			if left := c.store.ClosingSnapshot(); len(left) != 0 {
				t.Errorf("entries left after the repair: %+v", left)
			}
		})
	}
}

// TestTwoDeletionsAtOnceAreFinishedByTheRepair: the user and an admin
// delete one account at once. The user's compare-and-set applies and its
// process dies; the admin's loses, ends its own entry, finds the account
// deleting and dies too while finishing it. The repair must still find the
// deletion and finish it: every attempt's entry is its own, where a shared
// one, ended by the admin's attempt, would leave the account deleting,
// its names held, for good.
func TestTwoDeletionsAtOnceAreFinishedByTheRepair(t *testing.T) {
	t.Parallel()
	for _, apart := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprint("apart-", apart), func(t *testing.T) {
			t.Parallel()
			sc := delScenarios[0]
			d := newDelWorld(t, sc)
			r := newRacePair()
			d.life.Hooks.AfterDeletionStep = func(step string) error {
				if step == "entry" {
					r.entry()
					return nil
				}
				return r.afterApplied()
			}
			werr, lerr := r.run(func() { d.store.Advance(apart) },
				func() error { return d.deleteAs(sc) },
				func() error {
					return worked(d.life)(d.life.DeleteUser(context.Background(), d.admin, d.doomed.ID, accounts.Proof{}))
				})
			if !errors.Is(werr, errStopped) || !errors.Is(lerr, errStopped) {
				t.Fatalf("the deletions answered %v and %v; want both stopped", werr, lerr)
			}
			d.life.Hooks.AfterDeletionStep = nil
			if len(d.store.DeletionSnapshot()) == 0 {
				t.Errorf("the account is deleting with no entry left: nothing can find it")
			}
			d.store.Advance(11 * time.Minute)
			if _, err := d.life.RepairDeletions(context.Background(), false); err != nil {
				t.Fatal(err)
			}
			checkDeletion(t, "two deletions at once", d)
		})
	}
}

// TestDeletionHandsAGroupToAnActiveMember: the deletion finds itself the
// last manager of a group (its co-manager left after the check) whose
// other members are a suspended one, listed first, and an active one: it
// hands the group to the active one, not to the first visible member,
// which would leave a suspended account its only manager. With only
// suspended members left it hands the group to the first of them, so the
// group keeps a manager and the deletion finishes.
func TestDeletionHandsAGroupToAnActiveMember(t *testing.T) {
	t.Parallel()
	for _, onlySuspended := range []bool{false, true} {
		t.Run(fmt.Sprint("only-suspended-", onlySuspended), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sc := delScenarios[0]
			d := newDelWorld(t, sc)
			if err := d.signup("extra", "extra@example.org"); err != nil {
				t.Fatal(err)
			}
			extra := d.created[len(d.created)-1]
			if _, _, err := d.grp.SetMember(ctx, as(d.doomed), d.comanaged, extra.ID, groups.RoleMember, nil); err != nil {
				t.Fatal(err)
			}
			page, err := d.grp.ListMembers(ctx, as(d.doomed), d.comanaged, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			var members []string // other and extra, as the deletion lists them
			for _, m := range page.Items {
				if m.UserID == d.other.ID || m.UserID == extra.ID {
					members = append(members, m.UserID)
				}
			}
			suspend := members[:1]
			if onlySuspended {
				suspend = members
			}
			mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: d.store.Now},
				d.svc, d.store.Users(), d.store.Suspensions())
			until := d.store.Now().Add(time.Hour)
			for _, id := range suspend {
				if _, err := mod.Suspend(ctx, d.admin, id, moderation.SuspendInput{Reason: "spam", Until: &until}); err != nil {
					t.Fatal(err)
				}
			}
			d.life.Hooks.AfterDeletionStep = func(step string) error {
				if step == "entry" {
					// After the check: the co-manager leaves.
					return d.grp.RemoveMember(ctx, as(d.friend), d.comanaged, d.friend.ID)
				}
				return nil
			}
			if err := d.deleteAs(sc); err != nil {
				t.Fatal(err)
			}
			d.life.Hooks.AfterDeletionStep = nil
			var managers []string
			for _, m := range d.store.GroupSnapshot().Members[d.comanaged] {
				if m.Role == groups.RoleManager {
					managers = append(managers, m.UserID)
				}
			}
			want := members[1]
			if onlySuspended {
				want = members[0]
			}
			if len(managers) != 1 || managers[0] != want {
				t.Errorf("the group's managers are %v; want %v (suspended: %v)", managers, want, suspend)
			}
		})
	}
}
