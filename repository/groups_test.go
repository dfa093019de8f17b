//go:build integration

package repository_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// newGroupStores returns the group and member stores on the package
// keyspace, with a DB of their own, which a test may decorate
// (faultinject.Install).
func newGroupStores(t *testing.T) (*repository.Groups, *repository.GroupMembers, *repository.DB) {
	t.Helper()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	return repository.NewGroups(db), repository.NewGroupMembers(db), db
}

func newGroup(creator string) groups.Group {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return groups.Group{
		ID: domain.NewID(domain.GroupIDPrefix), Name: key("g"), NameKey: key("g"), DisplayName: "G",
		MaxMembers: 3, MemberCount: 1, ManagerCount: 1, CreatedBy: creator, CreatedAt: now, UpdatedAt: now,
		Status: domain.StatusPending, Version: 1, Pending: &groups.MemberChange{UserID: creator, Role: groups.RoleManager},
	}
}

// TestGroupRowIsCompareAndSet walks a group row through its life: a
// pending row, activation (once), and changes on the version only.
func TestGroupRowIsCompareAndSet(t *testing.T) {
	t.Parallel()
	groups, _, _ := newGroupStores(t)
	ctx := context.Background()
	g := newGroup("u_creator")
	tag, err := groups.Create(ctx, g, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := groups.Create(ctx, g, time.Minute); err == nil {
		t.Fatal("a second create of the same id succeeded")
	}
	got, err := groups.Get(ctx, g.ID)
	if err != nil || got.Status != domain.StatusPending || got.Pending == nil || *got.Pending != *g.Pending || got.MaxMembers != 3 {
		t.Fatalf("pending group: %+v %v", got, err)
	}
	g.Status = domain.StatusActive
	if ok, err := groups.Activate(ctx, g, tag); !ok || err != nil {
		t.Fatalf("activate: %v %v", ok, err)
	}
	if ok, err := groups.Activate(ctx, g, tag); ok || err != nil {
		t.Fatalf("second activation applied=%v err=%v", ok, err)
	}
	if err := groups.Discard(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := groups.Get(ctx, g.ID); err != nil {
		t.Fatalf("discard removed an active group: %v", err)
	}
	next := g
	next.Pending, next.Version = nil, 2
	if ok, err := groups.Update(ctx, next); !ok || err != nil {
		t.Fatalf("update to version 2: %v %v", ok, err)
	}
	if ok, err := groups.Update(ctx, next); ok || err != nil {
		t.Fatalf("a stale update applied=%v err=%v", ok, err)
	}
	got, err = groups.GetSerial(ctx, g.ID)
	if err != nil || got.Version != 2 || got.Pending != nil || got.Status != domain.StatusActive || got.MemberCount != 1 {
		t.Fatalf("after update: %+v %v", got, err)
	}
	if _, err := groups.Get(ctx, domain.NewID(domain.GroupIDPrefix)); err != domain.ErrNotFound {
		t.Fatalf("unknown group: %v", err)
	}
}

// TestPendingGroupExpires: a group never activated is gone after its lease.
func TestPendingGroupExpires(t *testing.T) {
	t.Parallel()
	groups, _, _ := newGroupStores(t)
	ctx := context.Background()
	g := newGroup("u_creator")
	if _, err := groups.Create(ctx, g, time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := groups.Get(ctx, g.ID); err != domain.ErrNotFound {
		t.Fatalf("a pending group outlived its lease: %v", err)
	}
}

// TestAGroupsActivationTakesOnlyItsOwnAttemptsRow: a group's insert whose
// first attempt is held at a node (its answer lost) is sent again, which
// applies, under a tag of its own. The row expires with its lease, and the
// held attempt lands then, writing the pending row again under the first
// attempt's tag. The activation under the tag Create answered must not
// take that row: the creation's entry may be gone by then
// (TestALateFirstInsertOfAResentCreationIsNeverActivated runs the
// creation around it on the fake).
func TestAGroupsActivationTakesOnlyItsOwnAttemptsRow(t *testing.T) {
	t.Parallel()
	groups, _, db := newGroupStores(t)
	faults := faultinject.Install(db)
	ctx := context.Background()
	g := newGroup("u_creator")
	var once sync.Once
	faults.Set(func(stmt string, at faultinject.Point) error {
		var err error
		if stmt == "groups.create" && at == faultinject.BeforeLWT {
			once.Do(func() { err = faultinject.ErrHoldWrite })
		}
		return err
	})
	tag, err := groups.Create(ctx, g, 2*time.Second)
	if err != nil {
		t.Fatalf("the create sent again: %v", err)
	}
	faults.Set(nil)
	time.Sleep(3 * time.Second)
	if _, err := groups.Get(ctx, g.ID); err != domain.ErrNotFound {
		t.Fatalf("a pending group outlived its lease: %v", err)
	}
	if err := faults.LandHeld(ctx); err != nil {
		t.Fatalf("landing the first attempt: %v", err)
	}
	if got, err := groups.GetSerial(ctx, g.ID); err != nil || got.Status != domain.StatusPending {
		t.Fatalf("after the first attempt landed: %+v %v, want its pending row", got, err)
	}
	active := g
	active.Status = domain.StatusActive
	if ok, err := groups.Activate(ctx, active, tag); ok || err != nil {
		t.Fatalf("the activation took the late attempt's row: applied=%v err=%v", ok, err)
	}
	if got, err := groups.GetSerial(ctx, g.ID); err != nil || got.Status != domain.StatusPending {
		t.Fatalf("after the activation: %+v %v, want the late row still pending", got, err)
	}
}

// TestConcurrentGroupUpdatesOneWins: of many compare-and-sets on one
// version, exactly one applies, also when answers are lost and resolved.
func TestConcurrentGroupUpdatesOneWins(t *testing.T) {
	t.Parallel()
	groups, _, db := newGroupStores(t)
	faults := faultinject.Install(db)
	ctx := context.Background()
	g := newGroup("u_creator")
	g.Status = domain.StatusActive
	if _, err := groups.Create(ctx, g, time.Minute); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	faults.Set(func(stmt string, at faultinject.Point) error {
		mu.Lock()
		defer mu.Unlock()
		if stmt == "groups.update" && at == faultinject.AfterLWT && n < 6 {
			n++ // the first six answers are lost, applied or not
			return &gocql.RequestErrCASWriteUnknown{}
		}
		return nil
	})
	var wg sync.WaitGroup
	wins := make([]bool, 12)
	for i := range wins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := g
			next.Pending, next.Version, next.MemberCount = nil, 2, 100+i
			ok, err := groups.Update(ctx, next)
			if err != nil {
				t.Error(err)
			}
			wins[i] = ok
		}()
	}
	wg.Wait()
	faults.Set(nil)
	winner := slices.Index(wins, true)
	if winner < 0 || slices.Index(wins[winner+1:], true) >= 0 {
		t.Fatalf("applied: %v; want exactly one", wins)
	}
	if got, _ := groups.GetSerial(ctx, g.ID); got.MemberCount != 100+winner || got.Version != 2 {
		t.Fatalf("row %+v, the winner was %d", got, winner)
	}
}

// TestMemberWritesOfOlderChangesLose: member-table writes carry the group
// version of their change, so a late write of an older change neither
// overwrites a newer role nor brings back a removed member, in either
// table, and applying a change twice is harmless.
func TestMemberWritesOfOlderChangesLose(t *testing.T) {
	t.Parallel()
	_, members, _ := newGroupStores(t)
	ctx := context.Background()
	gid, uid := domain.NewID(domain.GroupIDPrefix), domain.NewID(domain.UserIDPrefix)
	apply := func(role string, version int) {
		t.Helper()
		if err := members.Apply(ctx, gid, groups.MemberChange{UserID: uid, Role: role}, version); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string) {
		t.Helper()
		role, err := members.Role(ctx, gid, uid)
		if want == "" && err != domain.ErrNotFound || want != "" && (err != nil || role != want) {
			t.Fatalf("role %q, %v; want %q", role, err, want)
		}
		ids, err := members.GroupsOf(ctx, uid)
		if err != nil || (want == "") != (len(ids) == 0) {
			t.Fatalf("reverse index %v, %v; want membership %q", ids, err, want)
		}
		page, err := members.Page(ctx, gid, "", 10)
		if err != nil || (want == "") != (len(page) == 0) || (want != "" && page[0].Role != want) {
			t.Fatalf("page %v, %v; want %q", page, err, want)
		}
	}
	apply(groups.RoleMember, 3)
	apply(groups.RoleMember, 3) // a helper finishing the same change
	check(groups.RoleMember)
	apply("", 5) // removed
	apply(groups.RoleManager, 4)
	apply(groups.RoleMember, 3) // late writes of older changes
	check("")
	apply(groups.RoleManager, 7) // back, as a manager
	apply(groups.RoleMember, 6)
	apply("", 5)
	check(groups.RoleManager)
}

// TestMemberPages: pages are in user id order and continue after the last
// id of the previous page.
func TestMemberPages(t *testing.T) {
	t.Parallel()
	_, members, _ := newGroupStores(t)
	ctx := context.Background()
	gid := domain.NewID(domain.GroupIDPrefix)
	var want []string
	for i := 0; i < 5; i++ {
		u := domain.NewID(domain.UserIDPrefix)
		want = append(want, u)
		if err := members.Apply(ctx, gid, groups.MemberChange{UserID: u, Role: groups.RoleMember}, i+1); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	var got []string
	after := ""
	for {
		page, err := members.Page(ctx, gid, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			got = append(got, m.UserID)
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].UserID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged %v, want %v", got, want)
	}
}

// TestGroupNamesHaveTheirOwnClaimTable: a group name and a username with
// the same key do not collide.
func TestGroupNamesHaveTheirOwnClaimTable(t *testing.T) {
	t.Parallel()
	c, _ := newClaims(t)
	ctx := context.Background()
	k := key("shared")
	if got, err := c.Claim(ctx, domain.KindUsername, k, "u_a", "op", 0, time.Minute); err != nil || got.Owner != "u_a" {
		t.Fatalf("username: %+v %v", got, err)
	}
	if got, err := c.Claim(ctx, domain.KindGroupName, k, "g_a", "g_a", 0, time.Minute); err != nil || got.Owner != "g_a" {
		t.Fatalf("group name: %+v %v", got, err)
	}
	if got, err := c.Lookup(ctx, domain.KindGroupName, k); err != nil || got.Kind != domain.KindGroupName || got.Owner != "g_a" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
}
