package faults

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// TestExploreGroupClosedWithItsDeletedCreator: a group's creation whose
// creator's deletion runs to the end inside the creation's write of the
// creator's member rows (Slow), after the group was activated: the
// deletion, reading the creator's groups, finds none, and the creation,
// reading the account after the rows, finds it deleted and closes the
// group (closeDeparted: the closing's entry, then one compare-and-set).
// Each fault at each store call after that slow one; then the group's
// next reader and the closings' repair (finishNewGroups) run once the held
// writes landed, and in two of the three finishers also before: at once,
// or once the closing's entry is past its stale age (the repair fencing
// the group while a compare-and-set is held); and the deletion is checked
// as TestExploreDeletion checks it: the deleted account is a member of
// nothing, the group closed with no member row, its name no longer its
// claim, no closing's entry left.
func TestExploreGroupClosedWithItsDeletedCreator(t *testing.T) {
	t.Parallel()
	probe, _, _ := newMembershipRaceWorld(t)
	calls, err := createRacingItsCreator(t, "probe", probe, -1, memstore.None)
	if !gone(err) {
		t.Fatalf("the creation whose creator was deleted meanwhile answered %v, want 401", err)
	}
	finishers := []string{"land-finish", "finish-land-finish", "stale-finish-land-finish"}
	n := everySchedule(t, "closed-with-creator", calls, finishers, func(name string, k int, fault memstore.Fault, finish int) {
		d, _, _ := newMembershipRaceWorld(t)
		if _, err := createRacingItsCreator(t, name, d, k, fault); err != nil && !expected(err) && !gone(err) {
			t.Errorf("%s: the creation answered %v", name, err)
		}
		switch finish {
		case 1:
			finishNewGroups(t, name, d)
		case 2:
			d.store.Advance(11 * time.Minute)
			finishNewGroups(t, name, d)
		}
		d.store.Land()
		finishNewGroups(t, name, d)
		checkDeletion(t, name, d)
	})
	t.Logf("%d schedules", n)
}

// createRacingItsCreator runs doomed's creation of a group with doomed's
// deletion run inside its first write of a member row (Slow) and fault at
// its k-th store call after that one (-1: none); the deletion's own calls
// take no fault. It returns how many calls followed the slow one and the
// creation's answer.
func createRacingItsCreator(t *testing.T, name string, d *delWorld, k int, fault memstore.Fault) (int, error) {
	t.Helper()
	var racing atomic.Bool
	after := -1 // calls since the slow one; -1: not reached
	d.store.FaultAt = func(_ int, call string) memstore.Fault {
		switch {
		case racing.Load():
			return memstore.None
		case after < 0 && strings.HasPrefix(call, "group_members"):
			after = 0
			return memstore.Slow
		case after < 0:
			return memstore.None
		}
		after++
		if after-1 == k {
			return fault
		}
		return memstore.None
	}
	deleted := false
	d.store.Meanwhile = func() {
		if deleted {
			return // a second slow call: the deletion ran in the first
		}
		deleted = true
		racing.Store(true)
		defer racing.Store(false)
		if err := d.deleteAs(delScenarios[0]); err != nil {
			t.Errorf("%s: the deletion answered %v", name, err)
		}
	}
	_, err := d.grp.CreateGroup(context.Background(), as(d.doomed), groups.CreateInput{Name: "founded"})
	d.store.Meanwhile = nil
	recovered(d.store)
	if after < 0 {
		t.Fatalf("%s: the creation wrote no member row", name)
	}
	return after, err
}

// TestReadersCloseTheGroupOfADeletedCreator: a creation that died after
// activating its group (its process crashed at the first member write)
// leaves the creator's membership pending; the creator's deletion,
// reading the creator's groups, finds none. The group's next reader (an
// admin's member list, or anyone's read of its page by id or by name)
// finishes the creation, finds the creator deleted and closes the group,
// and answers as for a group that is gone (404), not with the deleted
// creator's group; the closings' repair finishes it. Until then the group
// reads as active (GetGroup, which finishes nothing, shows it).
func TestReadersCloseTheGroupOfADeletedCreator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		read func(d *delWorld, id string) error
	}{
		{"member-list", func(d *delWorld, id string) error {
			_, err := d.grp.ListMembers(ctx, d.admin, id, "", 10)
			return err
		}},
		{"page", func(d *delWorld, id string) error {
			_, err := d.grp.ShowGroup(ctx, id)
			return err
		}},
		{"page-by-name", func(d *delWorld, _ string) error {
			_, err := d.grp.GetGroupByName(ctx, "founded")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, _, _ := newMembershipRaceWorld(t)
			crashed := false
			d.store.FaultAt = func(_ int, call string) memstore.Fault {
				if !crashed && strings.HasPrefix(call, "group_members") {
					crashed = true
					return memstore.Crash
				}
				return memstore.None
			}
			if _, err := d.grp.CreateGroup(ctx, as(d.doomed), groups.CreateInput{Name: "founded"}); err == nil {
				t.Fatal("a creation whose process crashed answered success")
			}
			recovered(d.store)
			if err := d.deleteAs(delScenarios[0]); err != nil {
				t.Fatalf("the deletion: %v", err)
			}
			var id string
			for _, gr := range d.store.GroupSnapshot().Groups {
				if gr.Name == "founded" {
					id = gr.ID
					if gr.Status != domain.StatusActive || gr.Pending == nil {
						t.Fatalf("the crashed creation left %s, pending %+v; want active with the creator pending", gr.Status, gr.Pending)
					}
				}
			}
			if _, err := d.grp.GetGroup(ctx, id); err != nil {
				t.Fatalf("the group before its reader: %v; want it shown as active", err)
			}
			if err := tc.read(d, id); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("the %s of the deleted creator's group answered %v; want 404", tc.name, err)
			}
			if _, err := d.grp.GetGroup(ctx, id); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("the group after its %s: %v; want it closed", tc.name, err)
			}
			finishNewGroups(t, tc.name, d)
			checkDeletion(t, tc.name, d)
		})
	}
}
