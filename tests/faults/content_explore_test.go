package faults

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// noGroups is a group directory without groups (groups are explored on
// their own).
type noGroups struct{}

func (noGroups) MemberRole(context.Context, string, string) (string, error) {
	return "", domain.ErrNotFound
}
func (noGroups) GroupsAmong(context.Context, string, []string) ([]string, error) { return nil, nil }
func (noGroups) Listed(context.Context, string, []string) ([]string, error)      { return nil, nil }
func (noGroups) Exists(context.Context, string) (bool, error)                    { return false, nil }
func (noGroups) Standing(context.Context, string, string) (bool, string, error) {
	return false, "", nil
}

// libWorld is a schedule's content on fresh tables: an owner's public
// item shared with a friend as viewer and with the owner's group "club"
// (the owner its manager, the third user a member) as viewer; an admin.
type libWorld struct {
	*world
	lib                  *library.Service
	admin                domain.Principal
	owner, friend, other domain.User
	item                 string
	// group is the club's id; empty in worlds without groups.
	group string
	// leanMembers is the most members an item keeps lean rows for (0:
	// the service's default).
	leanMembers int

	mu sync.Mutex
	// stop is a member whose library writes fail (the test hook); failNext
	// fails the next member library write, once.
	stop     string
	failNext bool
	// later is the work a change left to go on after its answer (a
	// background fan-out, a mark's delete), once the schedule holds it
	// (holding); until then that work runs inside the change.
	later   []func()
	holding bool

	// runs are the oldest-first runs a schedule's slow call began,
	// finished after the schedule.
	runs []oldestRun
}

// oldestRun is an oldest-first run of one library as one viewer: what its
// pages listed so far, and the cursor of its next page.
type oldestRun struct {
	library string
	viewer  domain.Principal
	listed  []string
	next    string
}

// beginRuns reads the first page (one item) of oldest-first runs: of the
// owner's and the friend's libraries as their owners, of the owner's
// anonymously, and of the group's as a member.
func (l *libWorld) beginRuns(t *testing.T, name string) {
	views := []oldestRun{{library: l.owner.ID, viewer: as(l.owner)}, {library: l.friend.ID, viewer: as(l.friend)}, {library: l.owner.ID}}
	if l.group != "" {
		views = append(views, oldestRun{library: l.group, viewer: as(l.other)})
	}
	for _, r := range views {
		if l.page(t, name, &r) {
			l.runs = append(l.runs, r)
		}
	}
}

// page reads a run's next page (its first when it has no cursor yet).
func (l *libWorld) page(t *testing.T, name string, r *oldestRun) bool {
	page, err := l.lib.Library(context.Background(), r.viewer, r.library, library.OldestFirst, r.next, 1)
	if err != nil {
		t.Errorf("%s: an oldest-first page of %s: %v", name, r.library, err)
		return false
	}
	for _, e := range page.Items {
		r.listed = append(r.listed, e.ContentID)
	}
	r.next = page.Next
	return true
}

// finishRuns pages every run begun to its end: none may list an item
// twice, whatever changed while it paged (L2), a compare-and-set in
// flight when it began included.
func (l *libWorld) finishRuns(t *testing.T, name string) {
	for _, r := range l.runs {
		for pages := 0; r.next != "" && pages < 100; pages++ {
			if !l.page(t, name, &r) {
				break
			}
		}
		seen := map[string]bool{}
		for _, id := range r.listed {
			if seen[id] {
				t.Errorf("%s: an oldest-first run of %s as %q, begun in the slow call, listed %s twice: %v", name, r.library, r.viewer.UserID, id, r.listed)
			}
			seen[id] = true
		}
	}
	l.runs = nil
}

// newLibWorld is a world whose changes fan out before they answer.
func newLibWorld(t *testing.T) *libWorld { return newLibWorldOf(t, 1000, 0) }

// newLibWorldOf is a world whose changes of items with more than
// syncLimit members fan out in the background, and whose items keep lean
// rows up to leanMembers members (0: the default). Once the world is set
// up, the store watches the lean rows after every write: none may say
// what its item does not (a wrong row the set-up left is still one then,
// seen after the first write).
func newLibWorldOf(t *testing.T, syncLimit, leanMembers int) *libWorld {
	t.Helper()
	w := newWorld()
	for _, n := range []string{"root", "owner", "friend", "other"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	admin, err := w.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	l := &libWorld{world: w, admin: domain.Principal{UserID: admin.ID},
		owner: w.created[1], friend: w.created[2], other: w.created[3], leanMembers: leanMembers}
	lib := library.New(library.Config{SyncFanoutLimit: syncLimit, FanoutConcurrency: 1, Now: w.store.Now, LeanMembers: leanMembers,
		Background: l.background}, w.svc, w.store.Users(), grp, w.store.Contents(), nopLog{})
	l.lib = lib
	lib.Hooks.BeforeMember = l.beforeMember
	gr, err := grp.CreateGroup(ctx, as(l.owner), groups.CreateInput{Name: "club"})
	if err != nil {
		t.Fatal(err)
	}
	l.group = gr.ID
	if _, _, err := grp.SetMember(ctx, as(l.owner), l.group, l.other.ID, groups.RoleMember, nil); err != nil {
		t.Fatal(err)
	}
	name, public := "item", string(library.VisibilityPublic)
	c, err := lib.Create(ctx, as(l.owner), library.Input{Name: &name, Visibility: &public})
	if err != nil {
		t.Fatal(err)
	}
	l.item = c.ID
	for _, p := range []string{l.friend.ID, l.group} {
		if _, err := lib.Share(ctx, as(l.owner), c.ID, p, library.RoleViewer); err != nil {
			t.Fatal(err)
		}
	}
	w.store.WatchLean = true
	return l
}

// withNewer adds a newer item of the owner's, shared as the world's item
// is (the owner's, the friend's and the group's libraries hold it), left
// alone: an oldest-first run that lists the world's item on its first
// page goes on past it.
func withNewer(t *testing.T, l *libWorld) {
	t.Helper()
	ctx := context.Background()
	l.store.Advance(time.Second)
	name, public := "newer", string(library.VisibilityPublic)
	newer, err := l.lib.Create(ctx, as(l.owner), library.Input{Name: &name, Visibility: &public})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{l.friend.ID, l.group} {
		if _, err := l.lib.Share(ctx, as(l.owner), newer.ID, p, library.RoleViewer); err != nil {
			t.Fatal(err)
		}
	}
}

// beforeMember is the world's fan-out hook: it fails the writes of the
// stopped member, and the next write once failNext is set.
func (l *libWorld) beforeMember(_, principalID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if principalID == l.stop || l.failNext {
		l.failNext = false
		return errStopped
	}
	return nil
}

// background runs the work a change leaves for after its answer
// (library.Config.Background): inside the change, for one call order per
// schedule, or, once the schedule holds it, at the next flush.
func (l *libWorld) background(f func()) {
	l.mu.Lock()
	if l.holding {
		l.later = append(l.later, f)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	f()
}

// hold keeps the work changes leave for after their answer until flush.
func (l *libWorld) hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holding = true
}

// flush runs the work held for after the answers, and what it leaves.
func (l *libWorld) flush() {
	for {
		l.mu.Lock()
		later := l.later
		l.later = nil
		l.mu.Unlock()
		if len(later) == 0 {
			return
		}
		for _, f := range later {
			f()
		}
	}
}

func as(u domain.User) domain.Principal { return domain.Principal{UserID: u.ID} }

func (l *libWorld) update(name, visibility string) error {
	in := library.Input{Name: &name}
	if visibility != "" {
		in.Visibility = &visibility
	}
	_, err := l.lib.Update(context.Background(), as(l.owner), l.item, in)
	return err
}

func (l *libWorld) share(u domain.User, role string) error {
	_, err := l.lib.Share(context.Background(), as(l.owner), l.item, u.ID, role)
	return err
}

func (l *libWorld) unshare(by, u domain.User) error {
	return l.lib.Unshare(context.Background(), as(by), l.item, u.ID)
}

func (l *libWorld) unshareGroup() error {
	return l.lib.Unshare(context.Background(), as(l.owner), l.item, l.group)
}

// workers runs what runs beside every request: the outbox worker (the
// clock past its grace), and rebuilds of the friend's and the group's
// libraries.
func (l *libWorld) workers() error {
	if err := l.drain(); err != nil {
		return err
	}
	for _, p := range []string{l.friend.ID, l.group} {
		if _, err := l.lib.Rebuild(context.Background(), p, noReport); err != nil {
			return err
		}
	}
	return nil
}

func (l *libWorld) drain() error {
	l.store.Advance(time.Minute)
	_, err := l.lib.DrainOutbox(context.Background(), 30*time.Second, 100)
	return err
}

// libOperation is one content action; want, when set, checks its effect
// once it answered success and nobody else acted.
type libOperation struct {
	name  string
	setup func(l *libWorld) error
	run   func(l *libWorld) error
	want  func(l *libWorld, snap memstore.ContentSnapshot) error
}

func memberRole(snap memstore.ContentSnapshot, item, principal string) string {
	for _, m := range snap.Members[item] {
		if m.PrincipalID == principal {
			return m.Role
		}
	}
	return ""
}

func itemOf(snap memstore.ContentSnapshot, id string) library.Content {
	for _, c := range snap.Items {
		if c.ID == id {
			return c
		}
	}
	return library.Content{}
}

var libOperations = []libOperation{
	{name: "create", run: func(l *libWorld) error {
		name, private := "new", string(library.VisibilityPrivate)
		_, err := l.lib.Create(context.Background(), as(l.other), library.Input{Name: &name, Visibility: &private})
		return err
	}},
	{name: "update", run: func(l *libWorld) error { return l.update("renamed", "") },
		want: func(l *libWorld, snap memstore.ContentSnapshot) error {
			if itemOf(snap, l.item).Name != "renamed" {
				return errors.New("the update is lost")
			}
			return nil
		}},
	{name: "update-private", run: func(l *libWorld) error { return l.update("hidden", string(library.VisibilityPrivate)) }},
	{name: "delete", run: func(l *libWorld) error { return l.lib.Delete(context.Background(), as(l.owner), l.item) },
		want: func(l *libWorld, snap memstore.ContentSnapshot) error {
			if !itemOf(snap, l.item).Deleted {
				return errors.New("the delete is lost")
			}
			return nil
		}},
	{name: "share", run: func(l *libWorld) error { return l.share(l.other, library.RoleViewer) },
		want: func(l *libWorld, snap memstore.ContentSnapshot) error {
			if memberRole(snap, l.item, l.other.ID) != library.RoleViewer {
				return errors.New("the share is lost")
			}
			return nil
		}},
	{name: "promote", run: func(l *libWorld) error { return l.share(l.friend, library.RoleManager) },
		want: func(l *libWorld, snap memstore.ContentSnapshot) error {
			if memberRole(snap, l.item, l.friend.ID) != library.RoleManager {
				return errors.New("the promotion is lost")
			}
			return nil
		}},
	{name: "unshare", run: func(l *libWorld) error { return l.unshare(l.owner, l.friend) },
		want: func(l *libWorld, snap memstore.ContentSnapshot) error {
			if memberRole(snap, l.item, l.friend.ID) != "" {
				return errors.New("the unshare is lost")
			}
			return nil
		}},
	{name: "leave", run: func(l *libWorld) error { return l.unshare(l.friend, l.friend) }},
	{name: "unshare-group", run: func(l *libWorld) error { return l.unshareGroup() },
		want: func(l *libWorld, snap memstore.ContentSnapshot) error {
			if memberRole(snap, l.item, l.group) != "" {
				return errors.New("the group's unshare is lost")
			}
			return nil
		}},
	{
		name: "drain",
		setup: func(l *libWorld) error {
			l.mu.Lock()
			l.stop = l.friend.ID
			l.mu.Unlock()
			defer func() { l.mu.Lock(); l.stop = ""; l.mu.Unlock() }()
			return l.update("half done", string(library.VisibilityLoggedIn))
		},
		run: func(l *libWorld) error { return l.drain() },
	},
	{name: "rebuild", run: func(l *libWorld) error {
		_, err := l.lib.Rebuild(context.Background(), l.friend.ID, noReport)
		return err
	}},
}

// libCompetitor acts on the same item while a faulted action's writes
// are still held back.
type libCompetitor struct {
	name string
	run  func(l *libWorld) error
	// beforeBackground: it runs before the work the action left for after
	// its answer (a background fan-out, a mark's delete), which waits
	// until it is done; other competitors run after that work.
	beforeBackground bool
}

var competitors = []libCompetitor{
	{name: "none"},
	{name: "update", run: func(l *libWorld) error { return l.update("theirs", "") }},
	{name: "unshare", run: func(l *libWorld) error { return l.unshare(l.owner, l.friend) }},
	{name: "reshare-manager", run: func(l *libWorld) error { return l.share(l.friend, library.RoleManager) }},
	{name: "share-other", run: func(l *libWorld) error { return l.share(l.other, library.RoleManager) }},
	// The same request as the share action: two shares of one principal.
	{name: "share-other-too", run: func(l *libWorld) error { return l.share(l.other, library.RoleViewer) }},
	{name: "delete", run: func(l *libWorld) error { return l.lib.Delete(context.Background(), as(l.owner), l.item) }},
	// The outbox worker and rebuilds, past the grace, while the action's
	// writes are held and before its background work.
	{name: "workers", run: (*libWorld).workers, beforeBackground: true},
}

// competitorNames are the competitors' names, in order.
func competitorNames(cs []libCompetitor) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.name)
	}
	return names
}

// TestExploreContent runs every content action with every fault at every
// store call, alone and with each competitor acting before the held writes
// land (the outbox worker and rebuilds among them). A slow call begins
// oldest-first runs (beginRuns: their first page; each library holds a
// newer item too, left alone) and runs the outbox worker inside it, past
// the grace; it is explored again with the action's next member library
// write failing after the worker (the slow change's own fan-out stopping
// part-way), and once more with nothing in it but the runs' first pages.
// Then the client retries a failed action, the outbox worker runs, and the
// libraries are checked (checkContent: L1, L3, L4, the counts, nothing
// pending, no mark, no wrong lean row), and the runs paged to their ends:
// none lists an item twice (L2).
func TestExploreContent(t *testing.T) {
	t.Parallel()
	total := exploreContentOps(t, libOperations, competitors, newLibWorld)
	t.Logf("%d schedules in all", total)
}

// TestExploreContentInThePool is TestExploreContent for an item fanned
// out in the background (more members than the sync limit), for the
// changes that fan out (update, update-private, delete, share, unshare),
// alone and against the workers: the worker fences the item while a
// background fan-out of it is still to run.
func TestExploreContentInThePool(t *testing.T) {
	t.Parallel()
	ops := named(libOperations, func(op libOperation) string { return op.name }, "update", "update-private", "delete", "share", "unshare")
	comps := named(competitors, func(c libCompetitor) string { return c.name }, "none", "workers")
	total := exploreContentOps(t, ops, comps, func(t *testing.T) *libWorld { return newLibWorldOf(t, 1, 0) })
	t.Logf("%d schedules in all", total)
}

// TestExploreContentPastItsLeanRows is TestExploreContent for an item at
// its lean limit (3 members): the share takes it past, so every member's
// row is written again checked before the share is cleared, with every
// fault at every call and every competitor; the changes after it no
// longer remove rows first.
func TestExploreContentPastItsLeanRows(t *testing.T) {
	t.Parallel()
	ops := named(libOperations, func(op libOperation) string { return op.name }, "share", "update", "unshare", "delete")
	total := exploreContentOps(t, ops, competitors, func(t *testing.T) *libWorld { return newLibWorldOf(t, 1000, 3) })
	t.Logf("%d schedules in all", total)
}

// TestExploreContentNotLean is TestExploreContent for an item past its
// lean rows from the start (a limit of 1 member, three members): its
// changes remove nothing first, and pages check its rows against it. No
// oldest-first run lists it twice, even one begun while its
// compare-and-set was in flight: an update takes its place only once that
// answered (docs/design/libraries.md, "oldest first").
func TestExploreContentNotLean(t *testing.T) {
	t.Parallel()
	ops := named(libOperations, func(op libOperation) string { return op.name }, "update", "update-private", "delete", "unshare")
	total := exploreContentOps(t, ops, competitors, func(t *testing.T) *libWorld { return newLibWorldOf(t, 1000, 1) })
	t.Logf("%d schedules in all", total)
}

// named keeps the elements of all whose name is among names, in all's
// order.
func named[T any](all []T, name func(T) string, names ...string) []T {
	var out []T
	for _, e := range all {
		if slices.Contains(names, name(e)) {
			out = append(out, e)
		}
	}
	return out
}

// exploreContentOps runs every schedule of ops with comps and returns how
// many it ran.
func exploreContentOps(t *testing.T, ops []libOperation, comps []libCompetitor, fresh func(*testing.T) *libWorld) int {
	t.Helper()
	names := competitorNames(comps)
	total := 0
	base := fresh
	fresh = func(t *testing.T) *libWorld {
		l := base(t)
		withNewer(t, l) // so that a run's first page has a next (runsBegin)
		return l
	}
	for _, op := range ops {
		probe := fresh(t)
		if op.setup != nil {
			if err := op.setup(probe); err != nil {
				t.Fatal(err)
			}
		}
		probe.hold()
		calls := callsOf(t, probe.store, op.name, func() error {
			err := op.run(probe)
			probe.flush()
			return err
		})
		total += everySchedule(t, op.name, calls, names, func(name string, k int, fault memstore.Fault, c int) {
			exploreContent(t, name, fresh(t), op, k, fault, comps[c], workerRuns)
		})
		total += everyScheduleOf(t, op.name+"/then-fail", calls, []memstore.Fault{memstore.Slow}, names, func(name string, k int, fault memstore.Fault, c int) {
			exploreContent(t, name, fresh(t), op, k, fault, comps[c], workerThenFail)
		})
		total += everyScheduleOf(t, op.name+"/runs", calls, []memstore.Fault{memstore.Slow}, names, func(name string, k int, fault memstore.Fault, c int) {
			exploreContent(t, name, fresh(t), op, k, fault, comps[c], runsBegin)
		})
	}
	return total
}

// slowCall is what happens inside a schedule's slow call, once the clock
// has moved past every grace and lease.
type slowCall int

const (
	// workerRuns: the outbox worker runs.
	workerRuns slowCall = iota
	// workerThenFail: the outbox worker runs, and the action's next
	// member library write fails after it.
	workerThenFail
	// runsBegin: oldest-first runs begin (their first page) and nothing
	// else happens, so the action goes on as it was.
	runsBegin
	// pagesChecked: every library's page is checked as every viewer
	// (checkPagesNow), the outbox worker runs, and the pages are checked
	// again.
	pagesChecked
)

// exploreContent runs one schedule: the action with the fault at its
// call k (a slow call begins oldest-first runs of the libraries, and then
// does what slow says), counting the work it leaves for after its answer
// (a background fan-out, a mark's delete) as its own; the competitor; the
// held writes landing; the client's retry; the outbox worker; the checks.
// A competitor that runs before the background work runs after the
// action's answer, and the background work after it, without faults (or
// never, when the action's process crashed).
func exploreContent(t *testing.T, name string, l *libWorld, op libOperation, k int, fault memstore.Fault, comp libCompetitor, slow slowCall) {
	if op.setup != nil {
		if err := op.setup(l); err != nil {
			t.Fatalf("%s: set-up: %v", name, err)
		}
	}
	l.hold()
	l.store.Meanwhile = func() {
		if l.runs == nil {
			l.beginRuns(t, name)
		}
		if slow == runsBegin {
			return
		}
		if slow == pagesChecked {
			l.checkPagesNow(t, name, "in the slow call")
		}
		if err := l.drain(); err != nil {
			t.Errorf("%s: the outbox worker inside the slow call: %v", name, err)
		}
		if slow == pagesChecked {
			l.checkPagesNow(t, name, "in the slow call, after the outbox worker")
		}
		l.mu.Lock()
		l.failNext = slow == workerThenFail
		l.mu.Unlock()
	}
	hit := faultOnceSeen(l.store, k, fault)
	err := op.run(l)
	if !comp.beforeBackground {
		l.flush()
	}
	if *hit && fault == memstore.Crash {
		l.later = nil // the process died with it
	}
	recovered(l.store)
	l.store.Meanwhile = nil
	l.mu.Lock()
	l.failNext = false
	l.mu.Unlock()
	if err != nil && !expected(err) && !(slow == workerThenFail && errors.Is(err, errStopped)) {
		t.Errorf("%s: the action answered %v", name, err)
	}
	if comp.run != nil {
		if cerr := comp.run(l); cerr != nil && !expected(cerr) && !domainIs(cerr, domain.ErrNotFound) && !domainIs(cerr, domain.ErrConflict) {
			t.Errorf("%s: the competitor answered %v", name, cerr)
		}
	}
	l.flush()
	l.store.Land()
	if err != nil {
		_ = op.run(l) // the client retries
		l.flush()
	}
	if err := l.drain(); err != nil {
		t.Errorf("%s: the outbox worker: %v", name, err)
	}
	l.flush()
	snap := l.store.ContentSnapshot()
	if err == nil && comp.run == nil && op.want != nil {
		if werr := op.want(l, snap); werr != nil {
			t.Errorf("%s: %v", name, werr)
		}
	}
	checkContent(t, name, l, snap)
	l.finishRuns(t, name)
}

// faultOnceSeen is faultOnce that tells whether the call was reached.
func faultOnceSeen(st *memstore.Store, k int, fault memstore.Fault) *bool {
	at, hit := st.Calls()+k, new(bool)
	st.FaultAt = func(n int, _ string) memstore.Fault {
		if n == at {
			*hit = true
			return fault
		}
		return memstore.None
	}
	return hit
}

// checkContent asserts, for every item: nothing pending, no mark left, the
// counts match the members and keep a manager; every member's library
// indexes the item as it is, nobody else's does; a deleted item is in no
// library; and each user's library pages (as themself and as an anonymous
// caller) list exactly what their memberships and the visibilities say.
func checkContent(t *testing.T, name string, l *libWorld, snap memstore.ContentSnapshot) {
	t.Helper()
	for _, w := range l.store.LeanWrong {
		t.Errorf("%s: a wrong library row, after %s", name, w)
	}
	if snap.Marks != 0 {
		t.Errorf("%s: %d outbox marks left after the worker ran", name, snap.Marks)
	}
	// Each library, read as its owner (a group's as a member: the
	// private bucket) and anonymously.
	type libView struct {
		id     string
		viewer domain.Principal
	}
	libs := []libView{{l.owner.ID, as(l.owner)}, {l.friend.ID, as(l.friend)}, {l.other.ID, as(l.other)}}
	if l.group != "" {
		libs = append(libs, libView{l.group, as(l.other)})
	}
	want := map[string][]string{}     // principal -> items in their library
	wantAnon := map[string][]string{} // principal -> public items in their library
	for _, c := range snap.Items {
		members := snap.Members[c.ID]
		if c.Pending != nil {
			t.Errorf("%s: %s: a pending change survived the worker: %+v", name, c.ID, *c.Pending)
		}
		if c.Deleted {
			if len(members) != 0 {
				t.Errorf("%s: %s: deleted, still has members %+v", name, c.ID, members)
			}
		} else {
			managers := 0
			for _, m := range members {
				if m.Role == library.RoleManager {
					managers++
				}
			}
			if c.Members != len(members) || c.Managers != managers || managers < 1 {
				t.Errorf("%s: %s: counts %d/%d, members %+v", name, c.ID, c.Members, c.Managers, members)
			}
			// An item that went past its lean rows stays so
			// (docs/design/libraries.md#lean-rows): lean with more members
			// than they allow, a crossing was undone.
			if c.Lean && l.leanMembers > 0 && c.Members > l.leanMembers {
				t.Errorf("%s: %s: lean with %d members, past its lean rows (%d)", name, c.ID, c.Members, l.leanMembers)
			}
		}
		for _, u := range libs {
			role := memberRole(snap, c.ID, u.id)
			var entry *library.Entry
			for _, e := range snap.Index[u.id] {
				if e.ContentID == c.ID {
					entry = &e
				}
			}
			switch {
			case (role == "" || c.Deleted) && entry != nil:
				t.Errorf("%s: %s: %s's library indexes it (deleted %v, role %q)", name, c.ID, u.id, c.Deleted, role)
			case role != "" && !c.Deleted && entry == nil:
				t.Errorf("%s: %s: a member's library (%s) lacks it", name, c.ID, u.id)
			case entry != nil && (entry.Role != role || entry.Name != c.Name || entry.Visibility != c.Visibility || !entry.LastModified.Equal(c.LastModified)):
				t.Errorf("%s: %s: %s's library holds %+v, the item is %+v as %s", name, c.ID, u.id, *entry, c, role)
			}
			if role != "" && !c.Deleted {
				want[u.id] = append(want[u.id], c.ID+"="+c.Name)
				if c.Visibility == library.VisibilityPublic {
					wantAnon[u.id] = append(wantAnon[u.id], c.ID+"="+c.Name)
				}
			}
		}
	}
	for _, u := range libs {
		for _, viewer := range []domain.Principal{u.viewer, {}} {
			page, err := l.lib.Library(context.Background(), viewer, u.id, library.NewestFirst, "", 100)
			if err != nil {
				t.Errorf("%s: %s's library: %v", name, u.id, err)
				continue
			}
			var got []string
			for _, e := range page.Items {
				got = append(got, e.ContentID+"="+e.Name)
			}
			exp := want[u.id]
			if viewer.Anonymous() {
				exp = wantAnon[u.id]
			}
			slices.Sort(got)
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Errorf("%s: %s's library as %q lists %v, want %v", name, u.id, viewer.UserID, got, exp)
			}
		}
	}
}

// noReport is a rebuild's progress, run as the job's work but outside a
// job (the explorer runs the library's own steps).
func noReport(string, int) error { return nil }
