package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/tests/memstore"
)

// groupWorld is a schedule's groups on fresh tables: an owner's group
// "club" of at most 3 members with a friend in it; a third user.
type groupWorld struct {
	*world
	grp                  *groups.Service
	owner, friend, other domain.User
	group                string
	// created are the groups whose creation answered success.
	created []groups.Group
	// mayClose: a group whose last member was a deleted account may be
	// closed with it (docs/design/deletion.md); only the deletion explorer
	// sets it.
	mayClose bool
}

func newGroupWorld(t *testing.T) *groupWorld {
	t.Helper()
	w := newWorld()
	for _, n := range []string{"owner", "friend", "other"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	// Changes take turns as in the api, with a patience of a millisecond:
	// a schedule that holds one change lets the others of the group go
	// ahead without their turn, as a change stuck on a node would.
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, TurnWait: time.Millisecond, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	g := &groupWorld{world: w, grp: grp, owner: w.created[0], friend: w.created[1], other: w.created[2]}
	if err := g.create("club"); err != nil {
		t.Fatal(err)
	}
	g.group = g.created[0].ID
	if _, _, err := grp.SetMember(context.Background(), as(g.owner), g.group, g.friend.ID, groups.RoleMember, nil); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *groupWorld) create(name string) error {
	limit := 3
	gr, err := g.grp.CreateGroup(context.Background(), as(g.owner), groups.CreateInput{Name: name, MaxMembers: &limit})
	if err == nil {
		g.created = append(g.created, gr)
	}
	return err
}

func (g *groupWorld) set(by, u domain.User, role string) error {
	_, _, err := g.grp.SetMember(context.Background(), as(by), g.group, u.ID, role, nil)
	return err
}

func (g *groupWorld) remove(by, u domain.User) error {
	return g.grp.RemoveMember(context.Background(), as(by), g.group, u.ID)
}

func (g *groupWorld) roleOf(snap memstore.GroupSnapshot, u domain.User) string {
	for _, m := range snap.Members[g.group] {
		if m.UserID == u.ID {
			return m.Role
		}
	}
	return ""
}

// groupOperation is one groups action; want checks its effect once it
// answered success and nobody else acted.
type groupOperation struct {
	name string
	run  func(g *groupWorld) error
	want func(g *groupWorld, snap memstore.GroupSnapshot) error
}

var groupOperations = []groupOperation{
	{name: "create", run: func(g *groupWorld) error { return g.create("guild") }},
	{name: "add", run: func(g *groupWorld) error { return g.set(g.owner, g.other, groups.RoleMember) },
		want: func(g *groupWorld, snap memstore.GroupSnapshot) error {
			if g.roleOf(snap, g.other) != groups.RoleMember {
				return errors.New("the add is lost")
			}
			return nil
		}},
	{name: "promote", run: func(g *groupWorld) error { return g.set(g.owner, g.friend, groups.RoleManager) },
		want: func(g *groupWorld, snap memstore.GroupSnapshot) error {
			if g.roleOf(snap, g.friend) != groups.RoleManager {
				return errors.New("the promotion is lost")
			}
			return nil
		}},
	{name: "remove", run: func(g *groupWorld) error { return g.remove(g.owner, g.friend) },
		want: func(g *groupWorld, snap memstore.GroupSnapshot) error {
			if g.roleOf(snap, g.friend) != "" {
				return errors.New("the removal is lost")
			}
			return nil
		}},
	{name: "leave", run: func(g *groupWorld) error { return g.remove(g.friend, g.friend) }},
}

// groupCompetitor acts on the same group (or name) as the action, before
// its held writes land.
type groupCompetitor struct {
	name string
	run  func(g *groupWorld) error
	// gaveUp: the action's client does not ask again after an error, so
	// nothing but the worker finishes what it left.
	gaveUp bool
}

// groupCompetitors act on the same group (or name) before held writes land.
var groupCompetitors = []groupCompetitor{
	{name: "none", run: nil},
	{name: "add-other", run: func(g *groupWorld) error { return g.set(g.owner, g.other, groups.RoleManager) }},
	{name: "remove-friend", run: func(g *groupWorld) error { return g.remove(g.owner, g.friend) }},
	{name: "promote-friend", run: func(g *groupWorld) error { return g.set(g.owner, g.friend, groups.RoleManager) }},
	{name: "create-same-name", run: func(g *groupWorld) error { return g.create("guild") }},
	// The jobs' worker past the stale age while the action's writes are
	// held: it fences each group before it forgets an entry, so a
	// compare-and-set landing after it cannot record a change no entry
	// points at.
	{name: "worker-while-held", gaveUp: true, run: func(g *groupWorld) error {
		g.store.Advance(staleChangeAge)
		_, err := g.grp.FinishInterruptedChanges(context.Background(), staleChangeAge)
		return err
	}},
}

// TestExploreGroups runs every groups action with every fault at every
// store call, alone and with each competitor; then held writes land, the
// leases run out, the client retries, the jobs' worker finishes whatever
// is pending (FinishInterruptedChanges), and L7, the group-name claims,
// the member tables and the index of changes are checked.
func TestExploreGroups(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range groupCompetitors {
		names = append(names, c.name)
	}
	total := 0
	for _, op := range groupOperations {
		probe := newGroupWorld(t)
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(probe) })
		total += everySchedule(t, op.name, calls, names, func(name string, k int, fault memstore.Fault, c int) {
			exploreGroups(t, name, op, k, fault, groupCompetitors[c])
		})
	}
	t.Logf("%d schedules in all", total)
}

func exploreGroups(t *testing.T, name string, op groupOperation, k int, fault memstore.Fault, comp groupCompetitor) {
	competitor := comp.run
	g := newGroupWorld(t)
	faultOnce(g.store, k, fault)
	err := op.run(g)
	recovered(g.store)
	// Right after the fault, held writes not landed, and again before
	// anything finishes what is left pending, each user's list of groups
	// shows only what the group rows recorded.
	checkUserGroups(t, name+" (after the fault)", g, false)
	if err != nil && !expected(err) {
		t.Errorf("%s: the action answered %v", name, err)
	}
	if competitor != nil {
		if cerr := competitor(g); cerr != nil && !expected(cerr) && !domainIs(cerr, domain.ErrNotFound) {
			t.Errorf("%s: the competitor answered %v", name, cerr)
		}
	}
	g.store.Land()
	g.store.Advance(lease + time.Second)
	if err != nil && !comp.gaveUp {
		err = op.run(g) // the client retries
	}
	checkUserGroups(t, name+" (pending)", g, false)
	// The jobs' worker, once the requests are surely over, finishes every
	// change left pending from its entry, with no further change or
	// member list of the group, and leaves no entry.
	g.store.Advance(staleChangeAge)
	if _, ferr := g.grp.FinishInterruptedChanges(context.Background(), staleChangeAge); ferr != nil {
		t.Errorf("%s: the worker's pass over interrupted changes: %v", name, ferr)
	}
	if left := g.store.ChangeSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of changes left after the worker's pass: %+v", name, left)
	}
	snap := g.store.GroupSnapshot()
	checkUserGroups(t, name, g, true)
	if err == nil && competitor == nil && op.want != nil {
		if werr := op.want(g, snap); werr != nil {
			t.Errorf("%s: %v", name, werr)
		}
	}
	checkGroups(t, name, g, snap)
}

// staleChangeAge is the grace the explorers give the worker's pass over
// interrupted changes, and how far they move the clock before it: past
// every request's end. The api's (lifecycle's staleChangeAge) is a
// minute; only the order of the clock and the grace matters here.
const staleChangeAge = 10 * time.Minute

// checkGroups asserts, for every group: active ones have nothing pending,
// exact counts within the limit and a manager, both member tables agree;
// every active group holds a committed claim on its name, no two share
// one; every creation that answered success left an active group (or,
// with mayClose, a closed one).
func checkGroups(t *testing.T, name string, g *groupWorld, snap memstore.GroupSnapshot) {
	t.Helper()
	claims, _ := g.store.Snapshot()
	names := map[string]string{}
	for _, gr := range snap.Groups {
		if gr.Status != domain.StatusActive {
			continue
		}
		members := snap.Members[gr.ID]
		managers := 0
		for _, m := range members {
			if m.Role == groups.RoleManager {
				managers++
			}
			if !contains(snap.GroupsOf[m.UserID], gr.ID) {
				t.Errorf("%s: %s: member %s missing from groups_by_member", name, gr.ID, m.UserID)
			}
		}
		if gr.Pending != nil {
			t.Errorf("%s: %s: a change stays pending after the worker's pass: %+v", name, gr.ID, *gr.Pending)
		}
		if gr.MemberCount != len(members) || gr.ManagerCount != managers {
			t.Errorf("%s: %s: L7: counts %d/%d, members %+v", name, gr.ID, gr.MemberCount, gr.ManagerCount, members)
		}
		if managers < 1 || (gr.MaxMembers > 0 && len(members) > gr.MaxMembers) {
			t.Errorf("%s: %s: L7: %d members, %d managers, limit %d", name, gr.ID, len(members), managers, gr.MaxMembers)
		}
		if other, ok := names[gr.NameKey]; ok {
			t.Errorf("%s: U1: groups %s and %s are both named %s", name, other, gr.ID, gr.NameKey)
		}
		names[gr.NameKey] = gr.ID
		held := false
		for _, c := range claims {
			held = held || (c.Kind == domain.KindGroupName && c.Key == gr.NameKey && c.Owner == gr.ID && c.State == domain.ClaimCommitted)
		}
		if !held {
			t.Errorf("%s: U1: group %s holds %s without a committed claim", name, gr.ID, gr.NameKey)
		}
	}
	for user, ids := range snap.GroupsOf {
		for _, id := range ids {
			found := false
			for _, m := range snap.Members[id] {
				found = found || m.UserID == user
			}
			if !found && groupActive(snap, id) {
				t.Errorf("%s: groups_by_member lists %s in %s, group_members does not", name, user, id)
			}
		}
	}
	for _, c := range g.created {
		if !groupActive(snap, c.ID) && !(g.mayClose && groupClosed(snap, c.ID)) {
			t.Errorf("%s: the creation of %s answered success; the group is gone", name, c.ID)
		}
	}
}

// checkUserGroups pages through each user's groups (one at a time) and
// checks every group listed against the group rows: the user is a member
// with that role as recorded (the member rows, with a pending change of
// the group applied). With exact, when nothing is pending any more, the
// list is exactly the groups whose member rows hold the user.
func checkUserGroups(t *testing.T, name string, g *groupWorld, exact bool) {
	t.Helper()
	snap := g.store.GroupSnapshot()
	for _, u := range []domain.User{g.owner, g.friend, g.other} {
		recorded := map[string]string{} // group id -> role
		for _, gr := range snap.Groups {
			if gr.Status != domain.StatusActive {
				continue
			}
			for _, m := range snap.Members[gr.ID] {
				if m.UserID == u.ID {
					recorded[gr.ID] = m.Role
				}
			}
			if c := gr.Pending; c != nil && c.UserID == u.ID {
				recorded[gr.ID] = c.Role // "" for a removal
			}
		}
		var listed []groups.Membership
		cursor := ""
		for pages := 0; pages < 20; pages++ {
			page, err := g.grp.ListUserGroups(context.Background(), as(u), u.ID, cursor, 1)
			if err != nil {
				t.Errorf("%s: %s's groups: %v", name, u.Username, err)
				return
			}
			listed = append(listed, page.Items...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		for _, m := range listed {
			if role := recorded[m.Group.ID]; role == "" || role != m.Role {
				t.Errorf("%s: %s's groups list %s as %s; recorded: %q", name, u.Username, m.Group.ID, m.Role, role)
			}
		}
		if exact {
			n := 0
			for _, role := range recorded {
				if role != "" {
					n++
				}
			}
			if len(listed) != n {
				t.Errorf("%s: %s's groups list %d groups, the member rows %d", name, u.Username, len(listed), n)
			}
		}
	}
}

// groupClosed reports whether the group's row says closed.
func groupClosed(snap memstore.GroupSnapshot, id string) bool {
	for _, gr := range snap.Groups {
		if gr.ID == id {
			return gr.Status == domain.StatusClosed
		}
	}
	return false
}

func groupActive(snap memstore.GroupSnapshot, id string) bool {
	for _, gr := range snap.Groups {
		if gr.ID == id {
			return gr.Status == domain.StatusActive
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
