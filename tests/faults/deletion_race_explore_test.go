package faults

import (
	"context"
	"errors"
	"slices"
	"testing"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// raceOp is a membership of the user being deleted, granted while the
// deletion runs: a share to the user, an add of the user, a creation by
// the user, a group's creation by the user.
type raceOp struct {
	name string
	run  func(d *delWorld, item, group string) error
	// retry: the client asks again after the deletion (the creator
	// cannot: its session is gone).
	retry bool
	// creates: the operation may leave a group of its own, which its
	// next reader and the closings' repair finish (finishNewGroups).
	creates bool
}

var raceOps = []raceOp{
	{name: "share", retry: true, run: func(d *delWorld, item, _ string) error {
		_, err := d.lib.Share(context.Background(), as(d.friend), item, d.doomed.ID, library.RoleManager)
		return err
	}},
	{name: "add", retry: true, run: func(d *delWorld, _, group string) error {
		_, _, err := d.grp.SetMember(context.Background(), as(d.friend), group, d.doomed.ID, groups.RoleManager, nil)
		return err
	}},
	{name: "create-group", creates: true, run: func(d *delWorld, _, _ string) error {
		_, err := d.grp.CreateGroup(context.Background(), as(d.doomed), groups.CreateInput{Name: "founded"})
		return err
	}},
	{name: "create", run: func(d *delWorld, _, _ string) error {
		name, vis := "made", string(library.VisibilityPublic)
		_, err := d.lib.Create(context.Background(), as(d.doomed), library.Input{Name: &name, Visibility: &vis})
		return err
	}},
}

// raceFinishes are when the operation's held writes land: before its
// retry, or after it (and so after the deletion either way).
var raceFinishes = []string{"delete-land-retry", "delete-retry-land"}

// TestExploreMembershipsRacingADeletion runs a share to the user, an add
// of the user, and a group's and an item's creation by the user with
// every fault at every store call, the user's deletion running after the
// fault (inside the call when it is slow: the operation decided on a
// visible account and carries it out once the deletion is done), the held
// writes landing before or after the client's retry; then the groups'
// next reader (and, after a group's creation, the closings' repair:
// finishNewGroups) and the outbox worker run, and the deletion is checked
// as TestExploreDeletion checks it: the deleted account is a member of
// nothing, its library is empty, its own item deleted, every count exact.
func TestExploreMembershipsRacingADeletion(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range raceOps {
		probe, item, group := newMembershipRaceWorld(t)
		calls := callsOf(t, probe.store, "race-"+op.name, func() error { return op.run(probe, item, group) })
		total += everySchedule(t, "race-"+op.name, calls, raceFinishes, func(name string, k int, fault memstore.Fault, finish int) {
			exploreRace(t, name, op, k, fault, finish == 1)
		})
	}
	t.Logf("%d schedules in all", total)
}

// newMembershipRaceWorld is the deletion's world with an item and a group of
// friend's, to share and add the user to.
func newMembershipRaceWorld(t *testing.T) (*delWorld, string, string) {
	t.Helper()
	d := newDelWorld(t, delScenarios[0])
	return d, newItemOf(t, d, "raced"), newGroupOf(t, d, "raced")
}

func exploreRace(t *testing.T, name string, op raceOp, k int, fault memstore.Fault, landAfterRetry bool) {
	sc := delScenarios[0]
	d, item, group := newMembershipRaceWorld(t)
	deleted := false
	deleteNow := func() {
		if deleted {
			return
		}
		deleted = true
		if err := d.deleteAs(sc); err != nil {
			t.Errorf("%s: the deletion answered %v", name, err)
		}
	}
	// Call k of the operation takes the fault; the deletion's calls
	// (inside a slow one) take none.
	racing := faultKthUnlessRacing(d.store, k, fault)
	d.store.Meanwhile = func() {
		racing.Store(true)
		defer racing.Store(false)
		deleteNow()
	}
	err := op.run(d, item, group)
	d.store.Meanwhile = nil
	recovered(d.store)
	if err != nil && !expected(err) && !gone(err) {
		t.Errorf("%s: the %s answered %v", name, op.name, err)
	}
	deleteNow()
	if !landAfterRetry {
		d.store.Land()
	}
	if op.retry {
		if err := op.run(d, item, group); err != nil && !gone(err) {
			t.Errorf("%s: the %s's retry answered %v, want 404", name, op.name, err)
		}
	}
	d.store.Land()
	if op.creates {
		finishNewGroups(t, name, d)
	}
	checkDeletion(t, name, d)
}

// finishNewGroups has a reader of the members of every group the
// set-up did not make finish its creation, as the group's next change
// or member list would (a creation the deletion raced closes the group:
// closeDeparted), and then the closings' repair run, as the jobs' worker
// does on its own.
func finishNewGroups(t *testing.T, name string, d *delWorld) {
	t.Helper()
	ctx := context.Background()
	for _, gr := range d.store.GroupSnapshot().Groups {
		if slices.ContainsFunc(d.groupIDs, func(g groups.Group) bool { return g.ID == gr.ID }) {
			continue
		}
		if _, err := d.grp.ListMembers(ctx, d.admin, gr.ID, "", 1); err != nil && !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s: the members of the new group %s (%s): %v", name, gr.ID, gr.Status, err)
		}
	}
	if _, err := d.life.RepairClosings(ctx, false); err != nil {
		t.Errorf("%s: the repair of closings: %v", name, err)
	}
}

// gone reports the answers of an operation on a deleted account: 404 for
// the target of a share or an add, 401 for the creator.
func gone(err error) bool {
	return errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrNoSession)
}
