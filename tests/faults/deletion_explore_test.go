package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
)

// delWorld is a schedule's account about to be deleted, on fresh tables,
// with everything a deletion has to undo: two sessions, a suspension (in
// the admin's scenario), a group it manages with another manager (and a
// member), a group of another's it is a member of, an item it made
// (shared with a viewer and a second manager), an item of another's it
// views and one it co-manages (shared with a group too).
type delWorld struct {
	*world
	grp    *groups.Service
	lib    *library.Service
	admin  domain.Principal
	root   domain.User
	doomed domain.User
	// friend co-manages doomed's group; other is a member there.
	friend, other domain.User
	// tokens are doomed's two sessions; the first is the caller's own
	// when doomed deletes themself.
	tokens []string
	// comanaged is doomed's group, joined friend's.
	comanaged, joined string
	// own is doomed's item; viewed and kept are friend's.
	own, viewed, kept string
	// groupIDs are the groups made in the set-up.
	groupIDs []groups.Group
	// won: the racing signup of doomed's username (0), of its email (1)
	// answered success; early: one did while the account was not yet
	// deleted.
	won   [2]bool
	early []string
	// suspended: doomed was suspended in the set-up.
	suspended bool
}

// delScenario is who deletes whom.
type delScenario struct {
	name string
	// suspended: doomed is suspended first (its sessions stop working, so
	// an admin deletes it).
	suspended bool
	// ownLast: the caller's session (tokens[0]) is the one the deletion
	// ends last: its token's hash sorts after the other's (the store
	// lists a user's sessions by token hash, and the deletion ends them
	// in that order), not one run in two by the tokens' chance.
	ownLast bool
}

var delScenarios = []delScenario{{name: "self"}, {name: "admin-suspended", suspended: true}}

func newDelWorld(t *testing.T, sc delScenario) *delWorld {
	t.Helper()
	ctx := context.Background()
	w := newWorld()
	for _, n := range []string{"root", "doomed", "friend", "other"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	root, err := w.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	grp, lib := wireDeletion(w)
	d := &delWorld{world: w, grp: grp, lib: lib, admin: domain.Principal{UserID: root.ID}, root: root,
		doomed: w.created[1], friend: w.created[2], other: w.created[3]}
	for range 2 {
		r, err := w.svc.Login(ctx, "doomed", password, accounts.Client{})
		if err != nil {
			t.Fatal(err)
		}
		d.tokens = append(d.tokens, r.Token)
	}
	if sc.ownLast && accounts.HashToken(d.tokens[0]) < accounts.HashToken(d.tokens[1]) {
		d.tokens[0], d.tokens[1] = d.tokens[1], d.tokens[0]
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	newGroup := func(by domain.User, name string) string {
		gr, err := grp.CreateGroup(ctx, as(by), groups.CreateInput{Name: name})
		must(err)
		d.groupIDs = append(d.groupIDs, gr)
		return gr.ID
	}
	setMember := func(by domain.User, group string, u domain.User, role string) {
		_, _, err := grp.SetMember(ctx, as(by), group, u.ID, role, nil)
		must(err)
	}
	d.comanaged = newGroup(d.doomed, "comanaged")
	setMember(d.doomed, d.comanaged, d.friend, groups.RoleManager)
	setMember(d.doomed, d.comanaged, d.other, groups.RoleMember)
	d.joined = newGroup(d.friend, "joined")
	setMember(d.friend, d.joined, d.doomed, groups.RoleMember)
	newItem := func(by domain.User, name string, vis library.Visibility) string {
		v := string(vis)
		c, err := lib.Create(ctx, as(by), library.Input{Name: &name, Visibility: &v})
		must(err)
		return c.ID
	}
	share := func(by domain.User, item, principal, role string) {
		_, err := lib.Share(ctx, as(by), item, principal, role)
		must(err)
	}
	d.own = newItem(d.doomed, "own", library.VisibilityPublic)
	share(d.doomed, d.own, d.friend.ID, library.RoleViewer)
	share(d.doomed, d.own, d.other.ID, library.RoleManager)
	d.viewed = newItem(d.friend, "viewed", library.VisibilityPrivate)
	share(d.friend, d.viewed, d.doomed.ID, library.RoleViewer)
	d.kept = newItem(d.friend, "kept", library.VisibilityLoggedIn)
	share(d.friend, d.kept, d.doomed.ID, library.RoleManager)
	share(d.friend, d.kept, d.joined, library.RoleViewer)
	if sc.suspended {
		mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: w.store.Now},
			w.svc, w.store.Users(), w.store.Suspensions())
		until := w.store.Now().Add(time.Hour)
		_, err := mod.Suspend(ctx, d.admin, d.doomed.ID, moderation.SuspendInput{Reason: "spam", Until: &until})
		must(err)
		d.suspended = true
	}
	return d
}

// deleteAs runs the deletion as the scenario's caller would: doomed
// through its first session (which the handler authenticates; a session
// of an account being deleted works for this one route), or the admin.
// A session already gone is the user's 401 (errSessionGone).
func (d *delWorld) deleteAs(sc delScenario) error {
	ctx := context.Background()
	if sc.suspended {
		return worked(d.life)(d.life.DeleteUser(ctx, d.admin, d.doomed.ID, accounts.Proof{}))
	}
	p, err := d.svc.Authenticate(ctx, d.tokens[0])
	switch {
	case errors.Is(err, domain.ErrNoSession) && !errors.Is(err, accounts.ErrDeletionSession):
		return errSessionGone
	case err != nil && !errors.Is(err, accounts.ErrDeletionSession):
		return err
	}
	current := password
	return worked(d.life)(d.life.DeleteUser(ctx, p, d.doomed.ID, accounts.Password(current)))
}

// errSessionGone: the user's session no longer works, so the user cannot
// ask again (401).
var errSessionGone = errors.New("the session is gone (401)")

// raceSignups tries to sign up with doomed's username and with its email
// (each with a fresh other name), until each succeeded once, noting any
// success while the account is not yet deleted.
func (d *delWorld) raceSignups(label string) {
	for i, names := range [][2]string{{"doomed", "rival1@example.org"}, {"rival2", "doomed@example.org"}} {
		if d.won[i] || d.signup(names[0], names[1]) != nil {
			continue
		}
		d.won[i] = true
		if u, err := d.store.Users().Get(context.Background(), d.doomed.ID); err != nil || u.Status != domain.StatusDeleted {
			d.early = append(d.early, label+": "+names[0]+"/"+names[1]+" while the account was "+string(u.Status))
		}
	}
}

// delCompetitor acts while the deletion's held writes have not landed,
// before it is finished.
type delCompetitor struct {
	name string
	// each runs after every step of the deletion, faulted or not, and
	// after the fault.
	each func(d *delWorld, label string)
	run  func(d *delWorld) error
	// first: a rival deletion of the same account begins first and the
	// faulted one runs inside it (rivalFirst).
	first bool
	// before runs before the deletion begins, its calls not counted.
	before func(d *delWorld) error
}

// rival is a second request deleting the same account: the admin's (a
// second request of the same admin when the admin is the caller, so two
// attempts of one caller in one millisecond).
func (d *delWorld) rival() error {
	return worked(d.life)(d.life.DeleteUser(context.Background(), d.admin, d.doomed.ID, accounts.Proof{}))
}

// rivalFirst runs two deletions of one account at once, in the order
// that would lose the winner's index entry were one entry shared (every
// attempt's entry is its own: docs/design/deletion.md): the rival writes
// its entry, then deletion runs whole (the faulted one, its fault counted
// from there), then the rival's compare-and-set; the rival's process dies
// at its next step. It returns deletion's answer.
func (d *delWorld) rivalFirst(deletion func() error) error {
	state, err := 0, error(nil)
	d.life.Hooks.AfterDeletionStep = func(step string) error {
		switch {
		case state == 0 && step == "entry":
			state = 1
			err = deletion()
			state = 2
		case state == 2:
			return errStopped
		}
		return nil
	}
	defer func() { d.life.Hooks.AfterDeletionStep = nil }()
	rerr := d.rival()
	if state == 0 {
		return fmt.Errorf("the rival deletion never wrote its entry: %v", rerr)
	}
	if rerr != nil && !errors.Is(rerr, errStopped) && !expected(rerr) {
		return fmt.Errorf("the rival deletion answered %v", rerr)
	}
	return err
}

var delCompetitors = []delCompetitor{
	{name: "none"},
	// A signup of the same username, and one of the same email, after
	// every step and after the fault: each gets its name only once the
	// account is deleted.
	{name: "signup-race", each: (*delWorld).raceSignups},
	// Every other member leaves doomed's group, once, after the fault (the
	// co-manager only while doomed is still a manager there: else it is
	// the last one, and refused): doomed may end up its only member.
	{name: "others-leave", run: func(d *delWorld) error {
		ctx := context.Background()
		for _, u := range []domain.User{d.other, d.friend} {
			if err := d.grp.RemoveMember(ctx, as(u), d.comanaged, u.ID); err != nil && !expected(err) && !domainIs(err, domain.ErrNotFound) {
				return err
			}
		}
		return nil
	}},
	// The co-manager leaves doomed's group after every step and after the
	// fault (refused once doomed left: it is then the last manager), so
	// doomed may be the group's last manager from the deletion's first
	// write on: its job hands the group to the other member (decision 79).
	{name: "co-manager-leaves", each: func(d *delWorld, _ string) {
		_ = d.grp.RemoveMember(context.Background(), as(d.friend), d.comanaged, d.friend.ID)
	}},
	// Two deletions of one account at once: the rival begins first, the
	// deletion runs inside it, the rival's process dies after its
	// compare-and-set (rivalFirst).
	{name: "rival-first", first: true},
	// The rival deletion after every step of the deletion and after the
	// fault, each run whole.
	{name: "rival-during", each: func(d *delWorld, _ string) { _ = d.rival() }, run: func(d *delWorld) error {
		if err := d.rival(); err != nil && !expected(err) {
			return err
		}
		return nil
	}},
	// A share of friend's item with the user and an add of the user to
	// friend's group, both decided while the account is visible, their
	// compare-and-sets held back: they land after the faulted deletion, or
	// after its finish (docs/design/deletion.md#unseen-memberships). Whoever carries them out takes them back.
	{name: "held-share-add", before: func(d *delWorld) error {
		return d.shareAndAdd(memstore.LandLate, "content.update", "groups.update")
	}},
	// The same share and add answered, with their library and reverse
	// index writes failed: the deletion cannot find them in the indexes
	// it reads.
	{name: "failed-share-add", before: func(d *delWorld) error {
		return d.shareAndAdd(memstore.FailBefore, "library_index.put", "groups_by_member.insert")
	}},
}

// shareAndAdd shares a new item of friend's with doomed (as a manager)
// and adds doomed to a new group of friend's (as a manager), the share's
// store call shareCall and the add's addCall taking fault.
func (d *delWorld) shareAndAdd(fault memstore.Fault, shareCall, addCall string) error {
	ctx := context.Background()
	name, vis := "raced", string(library.VisibilityLoggedIn)
	c, err := d.lib.Create(ctx, as(d.friend), library.Input{Name: &name, Visibility: &vis})
	if err != nil {
		return err
	}
	gr, err := d.grp.CreateGroup(ctx, as(d.friend), groups.CreateInput{Name: "raced"})
	if err != nil {
		return err
	}
	d.groupIDs = append(d.groupIDs, gr)
	faultNamed(d.store, shareCall, 0, fault)
	_, err = d.lib.Share(ctx, as(d.friend), c.ID, d.doomed.ID, library.RoleManager)
	if err != nil && !expected(err) {
		return err
	}
	faultNamed(d.store, addCall, 0, fault)
	_, _, err = d.grp.SetMember(ctx, as(d.friend), gr.ID, d.doomed.ID, groups.RoleManager, nil)
	recovered(d.store)
	if err != nil && !expected(err) {
		return err
	}
	return nil
}

// delFinisher finishes what the faulted deletion left.
type delFinisher struct {
	name string
	run  func(d *delWorld, sc delScenario) error
	// landAfter: the held writes land only after the finish.
	landAfter bool
}

var delFinishers = []delFinisher{
	{name: "retry", run: retryDeletion},
	{name: "retry-then-late-writes", landAfter: true, run: retryDeletion},
	{name: "repair", run: func(d *delWorld, sc delScenario) error {
		// Past the age at which an entry of a deletion that never began
		// is stale: the repair finishes what began and removes the rest;
		// a deletion that never began is the client's to ask again.
		d.store.Advance(11 * time.Minute)
		if _, err := d.life.RepairDeletions(context.Background(), false); err != nil {
			return err
		}
		if u, err := d.store.Users().Get(context.Background(), d.doomed.ID); err != nil || u.Status == domain.StatusActive || u.Status == domain.StatusSuspended {
			return d.deleteAs(sc)
		}
		return nil
	}},
	{name: "repair-then-late-writes", landAfter: true, run: func(d *delWorld, sc delScenario) error {
		// The repair judges the entry of a deletion whose compare-and-set
		// is still held stale and removes it; then the held writes land.
		// A deletion that took effect only now must not be left
		// deleting without an entry (the repair fences the
		// account first, so that compare-and-set fails). After, only the
		// repair finishes a deletion that began; a client asks again
		// only when none did.
		ctx := context.Background()
		d.store.Advance(11 * time.Minute)
		if _, err := d.life.RepairDeletions(ctx, false); err != nil {
			return err
		}
		d.store.Land()
		if _, err := d.life.RepairDeletions(ctx, false); err != nil {
			return err
		}
		if u, err := d.store.Users().Get(ctx, d.doomed.ID); err != nil || u.Status == domain.StatusActive || u.Status == domain.StatusSuspended {
			return d.deleteAs(sc)
		}
		return nil
	}},
}

// retryDeletion is the client asking again; when it cannot (its session
// is gone: 401), what is left is the repair's.
func retryDeletion(d *delWorld, sc delScenario) error {
	err := d.deleteAs(sc)
	if errors.Is(err, errSessionGone) {
		_, err = d.life.RepairDeletions(context.Background(), false)
	}
	return err
}

// delVariant is a competitor and a finisher explored together.
type delVariant struct {
	competitor, finisher int // indexes of delCompetitors, delFinishers
}

// delVariants are explored with every fault: the races with the retry,
// the repair alone and the stuck group with the repair too; two
// deletions at once with the retry and the repair; a share and an add the
// deletion cannot see.
var delVariants = []delVariant{{0, 0}, {1, 0}, {2, 0}, {0, 2}, {2, 2}, {3, 0}, {3, 2}, {4, 0}, {5, 0}, {6, 0}}

// delLateVariants are explored with held writes only (nothing else is
// held): they land after the retry finished, or after a repair that
// judged the deletion's entry stale (alone, with a rival, and with a held
// share and add).
var delLateVariants = []delVariant{{0, 1}, {1, 1}, {2, 1}, {0, 3}, {3, 3}, {5, 1}, {5, 3}, {6, 1}}

// TestExploreDeletion runs an account deletion (by the user, and by an
// admin of a suspended user) with every fault at every store call, each
// with the competitors and finishers of delVariants (none, signups of the
// same names, every other member leaving the user's group, a rival
// deletion begun first or run after every step, a share and an add the
// deletion cannot see; the client's retry, the repair), and with held
// writes only, landing after the retry or after the repair
// (delLateVariants); then it checks the deletion is complete and the
// invariants hold (checkDeletion).
func TestExploreDeletion(t *testing.T) {
	t.Parallel()
	names := func(vs []delVariant) []string {
		var out []string
		for _, v := range vs {
			out = append(out, delCompetitors[v.competitor].name+"/"+delFinishers[v.finisher].name)
		}
		return out
	}
	// Each scenario on its own core: the schedules are independent worlds.
	for _, sc := range delScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			probe := newDelWorld(t, sc)
			action := "delete-" + sc.name
			calls := callsOf(t, probe.store, action, func() error { return probe.deleteAs(sc) })
			total := 0
			for _, set := range []struct {
				faults   []memstore.Fault
				variants []delVariant
			}{{memstore.Faults, delVariants}, {[]memstore.Fault{memstore.LandLate}, delLateVariants}} {
				total += everyScheduleOf(t, action, calls, set.faults, names(set.variants), func(name string, k int, fault memstore.Fault, i int) {
					v := set.variants[i]
					exploreDeletion(t, name, sc, k, fault, delCompetitors[v.competitor], delFinishers[v.finisher])
				})
			}
			t.Logf("%s: %d schedules in all", action, total)
		})
	}
}

func exploreDeletion(t *testing.T, name string, sc delScenario, k int, fault memstore.Fault, c delCompetitor, f delFinisher) {
	d := newDelWorld(t, sc)
	if c.before != nil {
		if err := c.before(d); err != nil {
			t.Fatalf("%s: before the deletion: %v", name, err)
		}
	}
	// Call k of the deletion takes the fault; the calls of a competitor
	// racing it between its steps are not counted (nor faulted), so k
	// is the same call of the deletion with every competitor.
	// racing is read by store calls on the fan-out's goroutines.
	racing := faultKthUnlessRacing(d.store, k, fault)
	if c.each != nil {
		d.life.Hooks.AfterDeletionStep = func(step string) error {
			if racing.Load() {
				return nil // the competitor's own steps
			}
			racing.Store(true)
			defer racing.Store(false)
			c.each(d, "after step "+step)
			return nil
		}
	}
	// A Slow call outlasts the stale age: the repairs run meanwhile.
	d.store.Meanwhile = func() {
		d.store.Advance(6 * time.Minute)
		_, _ = d.life.RepairDeletions(context.Background(), false)
		_, _ = d.life.RepairClosings(context.Background(), false)
	}
	var err error
	if c.first {
		racing.Store(true)
		err = d.rivalFirst(func() error {
			racing.Store(false)
			defer racing.Store(true)
			derr := d.deleteAs(sc)
			d.store.Recover() // the deletion's process; the rival's goes on
			return derr
		})
	} else {
		err = d.deleteAs(sc)
	}
	racing.Store(false)
	recovered(d.store)
	if err != nil && !expected(err) {
		t.Errorf("%s: the deletion answered %v", name, err)
	}
	if c.each != nil {
		c.each(d, "after the fault")
	}
	if c.run != nil {
		if cerr := c.run(d); cerr != nil {
			t.Errorf("%s: the competitor: %v", name, cerr)
		}
	}
	if !f.landAfter {
		d.store.Land()
	}
	d.store.Advance(lease + time.Second)
	ferr := f.run(d, sc)
	if ferr != nil {
		t.Errorf("%s: the %s answered %v", name, f.name, ferr)
	}
	d.store.Land()
	d.life.Hooks.AfterDeletionStep = nil
	d.store.Meanwhile = nil
	checkDeletion(t, name, d)
}

// checkDeletion asserts a deletion is complete and left every invariant
// true: U1 (no name held twice, or without its committed claim); names
// taken by a racing signup only once the account was deleted, and free
// (U4) when nobody took them; the account deleted with its personal data
// cleared; none of its sessions working or listed; no suspension record of
// it, and when it was suspended, that suspension in its history (S2, S5);
// once the outbox worker ran, no library row or index entry of it, and
// every item as checkContent wants (its own deleted and in no library, the
// others' counts exact without it); once a reader of each group's members
// ran, every group as checkGroups and checkUserGroups want (a manager and
// exact counts), or closed as checkClosedWithAccount wants when its last
// member was the deleted account, none with it as a member; and no index
// entry left (checkEntriesLeft).
func checkDeletion(t *testing.T, name string, d *delWorld) {
	t.Helper()
	ctx := context.Background()
	for _, e := range d.early {
		t.Errorf("%s: a name was freed before the account was deleted: %s", name, e)
	}
	holders, byKey, users := checkHeld(t, name, d.world)
	u, err := d.store.Users().Get(ctx, d.doomed.ID)
	if err != nil || u.Status != domain.StatusDeleted {
		t.Errorf("%s: the account is %s (%v)", name, u.Status, err)
	}
	if u.Username != "" || u.UsernameKey != "" || u.Email != "" || u.EmailKey != "" || u.DisplayName != "" ||
		u.PasswordHash != "" || u.Roles != nil || !u.EmailVerifiedAt.IsZero() || u.Deletion == nil {
		t.Errorf("%s: the deleted account keeps personal data: %+v", name, u)
	}
	for i, tok := range d.tokens {
		if _, err := d.svc.Authenticate(ctx, tok); !errors.Is(err, domain.ErrNoSession) || errors.Is(err, accounts.ErrDeletionSession) {
			t.Errorf("%s: session %d of the deleted account answers %v", name, i, err)
		}
	}
	// S2, S5: no suspension record of the deleted account, and the
	// suspension the deletion ended in its history.
	if list, lookup, expiry := d.store.Records(d.doomed.ID); len(list)+len(lookup)+len(expiry) != 0 {
		t.Errorf("%s: S2: the deleted account keeps list rows %+v, lookup %+v, expiry entries %+v", name, list, lookup, expiry)
	}
	if n := len(d.store.Events(d.doomed.ID)); d.suspended && n != 1 {
		t.Errorf("%s: S5: the deleted account's history has %d entries, want its suspension's", name, n)
	}
	if left, err := d.store.Sessions().Entries(ctx, d.doomed.ID); err != nil || len(left) != 0 {
		t.Errorf("%s: sessions of the deleted account listed: %+v (%v)", name, left, err)
	}
	// Items: the outbox worker runs, then every library and count.
	d.store.Advance(time.Minute)
	if _, err := d.lib.DrainOutbox(ctx, 30*time.Second, 100); err != nil {
		t.Errorf("%s: the outbox worker: %v", name, err)
	}
	snap := d.store.ContentSnapshot()
	if n := len(snap.Index[d.doomed.ID]) + len(snap.Rows[d.doomed.ID]); n != 0 {
		t.Errorf("%s: the deleted account's library keeps %d entries and rows: %+v %+v", name, n, snap.Index[d.doomed.ID], snap.Rows[d.doomed.ID])
	}
	for _, c := range snap.Items {
		if c.CreatedBy == d.doomed.ID && !c.Deleted {
			t.Errorf("%s: the deleted account's item %s is still there", name, c.ID)
		}
		if memberRole(snap, c.ID, d.doomed.ID) != "" {
			t.Errorf("%s: the deleted account is still a member of item %s", name, c.ID)
		}
	}
	checkContent(t, name, &libWorld{world: d.world, lib: d.lib, admin: d.admin, owner: d.friend, friend: d.other, other: d.root}, snap)
	// Groups: a reader of each group's members finishes a change left
	// pending (as the next change would), then the groups are checked.
	for _, gr := range d.groupIDs {
		if _, err := d.grp.ListMembers(ctx, d.admin, gr.ID, "", 1); err != nil && !groupClosed(d.store.GroupSnapshot(), gr.ID) {
			t.Errorf("%s: the members of %s: %v", name, gr.ID, err)
		}
	}
	g := &groupWorld{world: d.world, grp: d.grp, owner: d.friend, friend: d.other, other: d.root, created: d.groupIDs, mayClose: true}
	gsnap := d.store.GroupSnapshot()
	checkClosedWithAccount(t, name, d, gsnap)
	checkGroups(t, name, g, gsnap)
	checkUserGroups(t, name, g, true)
	if left := gsnap.GroupsOf[d.doomed.ID]; len(left) != 0 {
		t.Errorf("%s: groups_by_member lists the deleted account in %v", name, left)
	}
	for id, members := range gsnap.Members {
		for _, m := range members {
			if m.UserID == d.doomed.ID {
				t.Errorf("%s: the deleted account is still a member of group %s", name, id)
			}
		}
	}
	checkFree(t, name, d.world, holders, byKey, users,
		[]string{"username/" + d.doomed.UsernameKey, "email/" + d.doomed.EmailKey})
	checkEntriesLeft(t, name, d)
}

// checkEntriesLeft: the deletion's own index entry (the attempt the
// account row records) is gone, and so is that of every closing the
// deletion finished; an entry still there is of an attempt whose
// compare-and-set was never seen to apply or lose (its answer lost, or
// never sent), which only the repair may remove (fenced, or once the row
// shows another attempt began it). Then the repairs and the worker's pass
// over interrupted changes run past the stale age, and no entry of a
// deletion, a closing or a membership change is left.
func checkEntriesLeft(t *testing.T, name string, d *delWorld) {
	t.Helper()
	ctx := context.Background()
	u, _ := d.store.Users().Get(ctx, d.doomed.ID)
	for _, e := range d.store.DeletionSnapshot() {
		if u.Deletion != nil && e.Attempt == u.Deletion.Attempt && e.At.Equal(u.Deletion.At) {
			t.Errorf("%s: the finished deletion's own entry is left: %+v", name, e)
		}
	}
	checkClosingEntriesLeft(t, name, d.store)
	d.store.Advance(11 * time.Minute)
	if _, err := d.life.RepairDeletions(ctx, false); err != nil {
		t.Errorf("%s: the repair of deletions: %v", name, err)
	}
	if _, err := d.life.RepairClosings(ctx, false); err != nil {
		t.Errorf("%s: the repair of closings: %v", name, err)
	}
	if _, err := d.grp.FinishInterruptedChanges(ctx, staleChangeAge); err != nil {
		t.Errorf("%s: the worker's pass over interrupted changes: %v", name, err)
	}
	if left := d.store.ChangeSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of membership changes left after the worker's pass: %+v", name, left)
	}
	if left := d.store.DeletionSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of deletions left after the repair: %+v", name, left)
	}
	if left := d.store.ClosingSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of closings left after the repair: %+v", name, left)
	}
}

// checkClosingEntriesLeft: no closed group keeps the entry of the attempt
// that began its closing (its finish ends it).
func checkClosingEntriesLeft(t *testing.T, name string, st *memstore.Store) {
	t.Helper()
	for _, e := range st.ClosingSnapshot() {
		for _, gr := range st.GroupSnapshot().Groups {
			if gr.ID == e.GroupID && gr.Status == domain.StatusClosed && gr.ClosingAttempt == e.Attempt && gr.ClosedAt.Equal(e.At) {
				t.Errorf("%s: the finished closing's own entry is left: %+v", name, e)
			}
		}
	}
}

// checkClosedWithAccount asserts what a group closed with the account (its
// last member: every other one left while it was being deleted) leaves:
// closed with counts 0, no member row in either table, no share through
// it, its name claim no longer its own (its closing's entry:
// checkEntriesLeft).
func checkClosedWithAccount(t *testing.T, name string, d *delWorld, gsnap memstore.GroupSnapshot) {
	t.Helper()
	claims, _ := d.store.Snapshot()
	snap := d.store.ContentSnapshot()
	for _, gr := range gsnap.Groups {
		if gr.Status == domain.StatusActive {
			continue
		}
		if gr.Status != domain.StatusClosed || gr.MemberCount != 0 || gr.ManagerCount != 0 {
			t.Errorf("%s: group %s ends %s with counts %d/%d", name, gr.ID, gr.Status, gr.MemberCount, gr.ManagerCount)
		}
		if n := len(gsnap.Members[gr.ID]); n != 0 {
			t.Errorf("%s: closed group %s keeps %d member rows", name, gr.ID, n)
		}
		for user, ids := range gsnap.GroupsOf {
			if contains(ids, gr.ID) {
				t.Errorf("%s: groups_by_member lists %s in closed group %s", name, user, gr.ID)
			}
		}
		for _, c := range snap.Items {
			if !c.Deleted && memberRole(snap, c.ID, gr.ID) != "" {
				t.Errorf("%s: item %s is still shared with closed group %s", name, c.ID, gr.ID)
			}
		}
		for _, c := range claims {
			if c.Kind == domain.KindGroupName && c.Owner == gr.ID {
				t.Errorf("%s: closed group %s still holds its name %s (%s)", name, gr.ID, c.Key, c.State)
			}
		}
	}
}

// TestDeletionWhoseOwnSessionDeleteIsLostIsFinishedByTheRepair: the
// answer of the deletion's last session delete, that of the caller's own
// session (ownLast, every run), is lost, and the repair finishes the
// deletion. The delete applied: the session no longer works, but its
// listing was never removed (the store's delete stopped at the lost
// answer). The index entry ends last, after the sessions, so the repair
// still finds the deletion (checked before it runs); ended before them,
// it would leave the session listed (and, had the delete not applied,
// working for DELETE /v1/users/{own id}) with nothing to finish it.
func TestDeletionWhoseOwnSessionDeleteIsLostIsFinishedByTheRepair(t *testing.T) {
	t.Parallel()
	sc := delScenarios[0]
	sc.ownLast = true
	probe := newDelWorld(t, sc)
	last, n := -1, 0
	probe.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "sessions.delete" {
			last = n
		}
		n++
		return memstore.None
	}
	if err := probe.deleteAs(sc); err != nil {
		t.Fatal(err)
	}
	repair := delFinishers[2]
	checked := delFinisher{name: repair.name, landAfter: repair.landAfter, run: func(d *delWorld, sc delScenario) error {
		// What the fault left: the caller's own session deleted but
		// listed, the other one gone, and the deletion's entry there.
		ctx := context.Background()
		own, other := accounts.HashToken(d.tokens[0]), accounts.HashToken(d.tokens[1])
		for _, h := range []string{own, other} {
			if _, err := d.store.Sessions().Get(ctx, h); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("before the repair: session %s: %v, want deleted", h, err)
			}
		}
		listed, err := d.store.Sessions().Entries(ctx, d.doomed.ID)
		if err != nil || len(listed) != 1 || listed[0].TokenHash != own {
			t.Errorf("before the repair: listed %+v (%v), want the caller's own session %s alone (its delete's answer lost)", listed, err, own)
		}
		u, err := d.store.Users().Get(ctx, d.doomed.ID)
		found := false
		for _, e := range d.store.DeletionSnapshot() {
			found = found || (err == nil && u.Deletion != nil && e.UserID == d.doomed.ID && e.Attempt == u.Deletion.Attempt)
		}
		if !found {
			t.Errorf("before the repair: the deletion's entry is gone (account %+v, %v; entries %+v)", u, err, d.store.DeletionSnapshot())
		}
		return repair.run(d, sc)
	}}
	exploreDeletion(t, "own-session-delete-lost", sc, last, memstore.LoseAnswer, delCompetitors[0], checked)
}
