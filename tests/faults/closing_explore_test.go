package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/tests/memstore"
)

// closeWorld is a schedule's group closing on fresh tables: the owner's
// group "club" (owner manager, friend member, at most 4), an admin; item
// "shared" of the owner shared with the group as viewer, item "orphan" of
// the friend shared with it as manager and then left by the friend (the
// group is its only manager), item "spare" of the owner shared with nobody.
type closeWorld struct {
	*groupWorld
	lib                   *library.Service
	admin                 domain.User
	shared, orphan, spare string
	// sameName are the groups named "club" whose creation answered
	// success; each found the first one closed when it did.
	sameName []groups.Group
	// fault at call faultK of the owner's closing inside a rival's
	// (closeRivalFirst, an operation with inside set); innerCalls counts
	// that closing's calls, rivalErr is the rival's answer.
	fault              memstore.Fault
	faultK, innerCalls int
	rivalErr           error
}

func newCloseWorld(t *testing.T) *closeWorld {
	t.Helper()
	w := newWorld()
	for _, n := range []string{"owner", "friend", "other", "root"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := w.svc.SetAdmin(context.Background(), "root", true)
	if err != nil {
		t.Fatal(err)
	}
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	stores := w.store.Contents()
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce},
		w.svc, w.store.Users(), grp, stores, nopLog{})
	w.life = newLifecycle(w, grp, lib)
	c := &closeWorld{groupWorld: &groupWorld{world: w, grp: grp, owner: w.created[0], friend: w.created[1], other: w.created[2]},
		lib: lib, admin: admin}
	limit := 4
	gr, err := grp.CreateGroup(context.Background(), as(c.owner), groups.CreateInput{Name: "club", MaxMembers: &limit})
	if err != nil {
		t.Fatal(err)
	}
	c.group = gr.ID
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.set(c.owner, c.friend, groups.RoleMember))
	c.shared = c.item(t, c.owner, "shared", library.VisibilityPublic)
	_, err = lib.Share(ctx, as(c.owner), c.shared, c.group, library.RoleViewer)
	must(err)
	c.orphan = c.item(t, c.friend, "orphan", library.VisibilityLoggedIn)
	_, err = lib.Share(ctx, as(c.friend), c.orphan, c.group, library.RoleManager)
	must(err)
	must(lib.Unshare(ctx, as(c.friend), c.orphan, c.friend.ID))
	c.spare = c.item(t, c.owner, "spare", library.VisibilityPrivate)
	return c
}

func (c *closeWorld) item(t *testing.T, by domain.User, name string, visibility library.Visibility) string {
	t.Helper()
	v := string(visibility)
	it, err := c.lib.Create(context.Background(), as(by), library.Input{Name: &name, Visibility: &v})
	if err != nil {
		t.Fatal(err)
	}
	return it.ID
}

func (c *closeWorld) close(by domain.User) error {
	return worked(c.life)(c.life.CloseGroup(context.Background(), as(by), c.group, ownersProof()))
}

// createSameName has the other user create a group named "club"; on
// success the first club must be closed by then (the name is freed only
// once the group is closed).
func (c *closeWorld) createSameName() error {
	gr, err := c.grp.CreateGroup(context.Background(), as(c.other), groups.CreateInput{Name: "Club"})
	if err != nil {
		return err
	}
	c.sameName = append(c.sameName, gr)
	if st := c.status(c.group); st != domain.StatusClosed {
		return fmt.Errorf("a group took the name club while the first one was %q", st)
	}
	return nil
}

func (c *closeWorld) shareSpare() error {
	_, err := c.lib.Share(context.Background(), as(c.owner), c.spare, c.group, library.RoleViewer)
	return err
}

func (c *closeWorld) status(id string) domain.Status {
	for _, gr := range c.store.GroupSnapshot().Groups {
		if gr.ID == id {
			return gr.Status
		}
	}
	return ""
}

func (c *closeWorld) drain() error {
	c.store.Advance(time.Minute)
	_, err := c.lib.DrainOutbox(context.Background(), 30*time.Second, 100)
	return err
}

// closeOperation is one action under faults, its competitors (run before
// the held writes land) and how it is finished.
type closeOperation struct {
	name string
	// setup, when set, runs before the fault (without one).
	setup       func(c *closeWorld) error
	run         func(c *closeWorld) error
	competitors []string
	// finish is what follows once the held writes landed: the client's
	// retry, or the repair; it answers what the closing's finisher did.
	finish func(c *closeWorld, err error) error
	// early, when set, runs before the held writes land.
	early func(c *closeWorld, err error) error
	// inside: run takes the fault itself, at a call of the closing it
	// runs inside another (c.fault, c.faultK; c.innerCalls its calls).
	inside bool
}

var closeCompetitors = map[string]func(c *closeWorld) error{
	"none":             nil,
	"add-other":        func(c *closeWorld) error { return c.set(c.owner, c.other, groups.RoleMember) },
	"share-spare":      func(c *closeWorld) error { return c.shareSpare() },
	"create-same-name": func(c *closeWorld) error { return c.createSameName() },
	"close-admin":      func(c *closeWorld) error { return c.close(c.admin) },
	"close":            func(c *closeWorld) error { return c.close(c.owner) },
}

// retryClose is the client that asked for the closing asking again.
func retryClose(c *closeWorld, err error) error {
	if err == nil {
		return nil
	}
	err = c.close(c.owner)
	if domainIs(err, domain.ErrNotFound) {
		// Someone else's closing: to anyone but its closer (or an admin)
		// the group is gone.
		for _, gr := range c.store.GroupSnapshot().Groups {
			if gr.ID == c.group && gr.ClosedBy != "" && gr.ClosedBy != c.owner.ID {
				return nil
			}
		}
	}
	return err
}

// repairClosings is `api admin repair-closings` run once the closing's
// entry is older than the repair's stale age (lifecycle's staleEntryAge,
// 10 minutes): the closing's caller never retried.
func repairClosings(c *closeWorld, _ error) error {
	c.store.Advance(11 * time.Minute)
	_, err := c.life.RepairClosings(context.Background(), false)
	return err
}

var closeOperations = []closeOperation{
	{name: "close-retry", run: func(c *closeWorld) error { return c.close(c.owner) },
		competitors: []string{"none", "add-other", "share-spare", "create-same-name", "close-admin"}, finish: retryClose},
	{name: "close-repair", run: func(c *closeWorld) error { return c.close(c.owner) },
		competitors: []string{"none", "add-other", "share-spare", "create-same-name", "close-admin"}, finish: repairClosings},
	{name: "close-repair-early", run: func(c *closeWorld) error { return c.close(c.owner) },
		competitors: []string{"none"}, early: repairClosings, finish: repairClosings},
	// Two managers close the group at once (closeRivalFirst), finished by
	// both clients' retries, by the repair, or by the repair while the
	// held writes are still held and again once they landed.
	{name: "close-rival-first-retry", setup: secondManager, run: closeRivalFirst, inside: true,
		competitors: []string{"none"}, finish: retryBoth},
	{name: "close-rival-first-repair", setup: secondManager, run: closeRivalFirst, inside: true,
		competitors: []string{"none"}, finish: repairClosings},
	{name: "close-rival-first-repair-early", setup: secondManager, run: closeRivalFirst, inside: true,
		competitors: []string{"none"}, early: repairClosings, finish: repairClosings},
	{name: "add", run: func(c *closeWorld) error { return c.set(c.owner, c.other, groups.RoleMember) },
		competitors: []string{"none", "close"}},
	{name: "share", run: func(c *closeWorld) error { return c.shareSpare() },
		competitors: []string{"none", "close"}},
	// The closing stopped once the group is closed, before it released the
	// name: a creation takes the name over under every fault, racing the
	// closing's retry, whose release must not take the name from it.
	{name: "create-same-name", setup: stopAfterClosed, run: func(c *closeWorld) error { return c.createSameName() },
		competitors: []string{"none", "close"}},
}

// secondManager makes the friend the group's second manager.
func secondManager(c *closeWorld) error { return c.set(c.owner, c.friend, groups.RoleManager) }

// closeRivalFirst has two managers close the group at once, in the order
// that would lose the winner's index entry were one entry shared (every
// attempt's entry is its own: docs/design/closing.md): the friend's
// closing writes its entry, then the owner's runs whole (with the fault at
// its call c.faultK), then the friend's compare-and-set; the friend's
// process dies if it applied. It returns the owner's answer (nil for 404:
// the friend's closing took the group, which is gone to the owner, who
// does not ask again).
func closeRivalFirst(c *closeWorld) error {
	state, err := 0, error(nil)
	c.grp.Hooks.AfterStep = func(op, step string) error {
		switch {
		case op != "close":
		case state == 0 && step == "entry":
			state = 1
			before := c.store.Calls()
			if c.fault != memstore.None {
				faultOnce(c.store, c.faultK, c.fault)
			}
			err = c.close(c.owner)
			c.innerCalls = c.store.Calls() - before
			recovered(c.store) // the owner's process; the friend's goes on
			state = 2
		case state == 2 && step == "cas":
			return errStopped
		}
		return nil
	}
	defer func() { c.grp.Hooks.AfterStep = nil }()
	c.rivalErr = c.close(c.friend)
	switch {
	case state == 0:
		return fmt.Errorf("the rival closing never wrote its entry: %v", c.rivalErr)
	case domainIs(err, domain.ErrNotFound):
		return nil
	}
	return err
}

// retryBoth is both managers asking again: the friend when its closing
// died or failed (not when it lost: the group is gone to it), then the
// owner (retryClose).
func retryBoth(c *closeWorld, err error) error {
	if c.rivalErr != nil && !domainIs(c.rivalErr, domain.ErrNotFound) {
		if rerr := c.close(c.friend); rerr != nil && !domainIs(rerr, domain.ErrNotFound) {
			return rerr
		}
	}
	return retryClose(c, err)
}

// stopAfterClosed closes the group, stopped (as a crash would) after the
// compare-and-set to closed, before the name is released.
func stopAfterClosed(c *closeWorld) error {
	stop := errors.New("stopped (test hook)")
	c.grp.Hooks.AfterStep = func(op, step string) error {
		if op == "close" && step == "closed" {
			return stop
		}
		return nil
	}
	defer func() { c.grp.Hooks.AfterStep = nil }()
	if err := c.close(c.owner); !errors.Is(err, stop) {
		return fmt.Errorf("the stopped closing answered %v", err)
	}
	return nil
}

// TestExploreClosing runs a group's closing with every fault at every
// store call, alone and with a member add, a share to the group, a
// creation of its name or an admin's closing before the held writes land,
// finished by the client's retry or, separately, by the repair (alone,
// also run once before the held writes land); two managers' closings at
// once, the fault in the one that runs inside the other
// (closeRivalFirst), finished by both clients' retries or by the repair
// (also before the held writes land); and a member add, a share and a
// creation of the name (after a closing stopped before it released the
// name) under every fault, alone and with the closing as competitor.
// Then the next change of every active group, the outbox worker and the
// checks (closingProblems, checkNameHeld, checkActiveGroups); the repair
// past the stale age leaves no entry (docs/design/closing.md).
func TestExploreClosing(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range closeOperations {
		probe := newCloseWorld(t)
		if op.setup != nil {
			if err := op.setup(probe); err != nil {
				t.Fatal(err)
			}
		}
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(probe) })
		if op.inside {
			calls = probe.innerCalls
		}
		total += everySchedule(t, op.name, calls, op.competitors, func(name string, k int, fault memstore.Fault, c int) {
			exploreClosing(t, name, op, k, fault, op.competitors[c])
		})
	}
	t.Logf("%d schedules in all", total)
}

// exploreClosing runs one schedule.
func exploreClosing(t *testing.T, name string, op closeOperation, k int, fault memstore.Fault, competitor string) {
	c := newCloseWorld(t)
	if op.setup != nil {
		if err := op.setup(c); err != nil {
			t.Fatalf("%s: set-up: %v", name, err)
		}
	}
	// A Slow call outlasts the stale age: the repair runs meanwhile.
	c.store.Meanwhile = func() {
		c.store.Advance(6 * time.Minute)
		_, _ = c.life.RepairClosings(context.Background(), false)
	}
	if op.inside {
		c.fault, c.faultK = fault, k
	} else {
		faultOnce(c.store, k, fault)
	}
	err := op.run(c)
	recovered(c.store)
	c.store.Meanwhile = nil
	if err != nil && !expected(err) {
		t.Errorf("%s: the action answered %v", name, err)
	}
	checkNameHeld(t, name+" (after the fault)", c)
	if run := closeCompetitors[competitor]; run != nil {
		if cerr := run(c); cerr != nil && !expected(cerr) && !domainIs(cerr, domain.ErrNotFound) {
			t.Errorf("%s: the competitor answered %v", name, cerr)
		}
	}
	if op.early != nil {
		if ferr := op.early(c, err); ferr != nil {
			t.Errorf("%s: before the held writes land: %v", name, ferr)
		}
	}
	checkNameHeld(t, name+" (before the held writes land)", c)
	c.store.Land()
	checkNameHeld(t, name+" (once they landed)", c)
	c.store.Advance(lease + time.Second)
	if op.finish != nil {
		if ferr := op.finish(c, err); ferr != nil {
			t.Errorf("%s: finishing: %v", name, ferr)
		}
	} else if err != nil {
		if rerr := op.run(c); rerr != nil && !expected(rerr) && !domainIs(rerr, domain.ErrNotFound) {
			t.Errorf("%s: the retry answered %v", name, rerr)
		}
	}
	if op.finish == nil && len(c.store.ClosingSnapshot()) > 0 {
		// The closing stopped in the set-up, finished by its retry.
		if rerr := c.close(c.owner); rerr != nil {
			t.Errorf("%s: the retry of the closing: %v", name, rerr)
		}
	}
	// The next change of a group finishes a change left pending there (as
	// in TestExploreGroups): its creator asking for the role they have.
	for _, gr := range c.store.GroupSnapshot().Groups {
		if gr.Status != domain.StatusActive {
			continue
		}
		if _, _, ferr := c.grp.SetMember(context.Background(), domain.Principal{UserID: gr.CreatedBy}, gr.ID, gr.CreatedBy, groups.RoleManager, nil); ferr != nil {
			t.Errorf("%s: the next change of %s: %v", name, gr.ID, ferr)
		}
	}
	if err := c.drain(); err != nil {
		t.Errorf("%s: the outbox worker: %v", name, err)
	}
	closed := c.status(c.group) == domain.StatusClosed
	if !closed && (op.name == "close-retry" || (op.finish != nil && err == nil) || competitor == "close-admin" || competitor == "close") {
		t.Errorf("%s: a closing answered success; the group is %q", name, c.status(c.group))
	}
	for _, p := range closingProblems(c, false) {
		t.Errorf("%s: %v", name, p)
	}
	checkNameHeld(t, name, c)
	checkActiveGroups(t, name, c)
	// An entry left is of an attempt whose compare-and-set was never seen
	// to apply or lose: the repair, past the stale age, removes it.
	if err := repairClosings(c, nil); err != nil {
		t.Errorf("%s: the repair: %v", name, err)
	}
	if left := c.store.ClosingSnapshot(); len(left) != 0 {
		t.Errorf("%s: entries of closings left after the repair: %+v", name, left)
	}
}

// checkNameHeld: until the first club is closed, its name is its own
// committed claim (the name is freed only once the group is closed).
func checkNameHeld(t *testing.T, name string, c *closeWorld) {
	t.Helper()
	var club groups.Group
	for _, gr := range c.store.GroupSnapshot().Groups {
		if gr.ID == c.group {
			club = gr
		}
	}
	if club.Status == domain.StatusClosed {
		return
	}
	claims, _ := c.store.Snapshot()
	for _, cl := range claims {
		if cl.Kind == domain.KindGroupName && cl.Key == club.NameKey && cl.Owner == club.ID && cl.State == domain.ClaimCommitted {
			return
		}
	}
	t.Errorf("%s: the name of the %q group is not its committed claim", name, club.Status)
}

// closingProblems checks the closing's invariants on the tables (the
// content's alone, when contentOnly): no item counts the closed group or
// keeps a pending change, every item's counts equal its member rows with
// a manager kept, every member's library indexes it and nobody else's (a
// deleted item nobody's), the item only the group managed is deleted, and
// the closed group's library is empty; then a closed group has counts 0
// and no member rows in either table, the group is not left closing, a
// closed group's own closing entry (the attempt its row records) is gone
// (any other is of an attempt whose outcome nobody saw: the repair's,
// exploreClosing), no two live groups share a name, and every creation
// under the freed name that answered success left an active group. That
// the name is freed only once the group is closed is checkNameHeld's, the
// active groups' own invariants checkActiveGroups'.
func closingProblems(c *closeWorld, contentOnly bool) []error {
	var out []error
	bad := func(format string, args ...any) { out = append(out, fmt.Errorf(format, args...)) }
	gsnap := c.store.GroupSnapshot()
	csnap := c.store.ContentSnapshot()
	rows := c.store.LibraryRows()
	var club groups.Group
	for _, gr := range gsnap.Groups {
		if gr.ID == c.group {
			club = gr
		}
	}
	closed := club.Status == domain.StatusClosed
	// Content: every item's counts and member rows, every library.
	principals := []string{c.owner.ID, c.friend.ID, c.other.ID, c.group}
	for _, it := range csnap.Items {
		members := csnap.Members[it.ID]
		managers := 0
		for _, m := range members {
			if m.Role == library.RoleManager {
				managers++
			}
			if closed && m.PrincipalID == c.group {
				bad("%s: still counts the closed group as a %s", it.Name, m.Role)
			}
		}
		if it.Pending != nil {
			bad("%s: a pending change survived the worker: %+v", it.Name, *it.Pending)
		}
		switch {
		case it.Deleted && len(members) != 0:
			bad("%s: deleted, still has members %+v", it.Name, members)
		case !it.Deleted && (it.Members != len(members) || it.Managers != managers || managers < 1):
			bad("%s: counts %d/%d, members %+v", it.Name, it.Members, it.Managers, members)
		}
		if closed && it.ID == c.orphan && !it.Deleted {
			bad("%s: only the closed group managed it; it is not deleted (members %+v)", it.Name, members)
		}
		for _, p := range principals {
			role := memberRole(csnap, it.ID, p)
			indexed := false
			for _, e := range csnap.Index[p] {
				indexed = indexed || e.ContentID == it.ID
			}
			inRows := false
			for _, e := range rows[p] {
				inRows = inRows || e.ContentID == it.ID
			}
			switch {
			case (role == "" || it.Deleted) && (indexed || inRows):
				bad("%s: in %s's library (index %v, rows %v), deleted %v, role %q", it.Name, p, indexed, inRows, it.Deleted, role)
			case role != "" && !it.Deleted && !indexed:
				bad("%s: a member's library (%s) lacks it", it.Name, p)
			}
		}
	}
	if closed && (len(csnap.Index[c.group]) > 0 || len(rows[c.group]) > 0) {
		bad("the closed group's library holds %d index entries, %d rows", len(csnap.Index[c.group]), len(rows[c.group]))
	}
	if contentOnly {
		return out
	}
	// Groups: the first club, then every group (checkGroups).
	if closed {
		if club.MemberCount != 0 || club.ManagerCount != 0 || len(gsnap.Members[club.ID]) != 0 {
			bad("closed with counts %d/%d, member rows %+v", club.MemberCount, club.ManagerCount, gsnap.Members[club.ID])
		}
		for user, ids := range gsnap.GroupsOf {
			if contains(ids, club.ID) {
				bad("groups_by_member still lists %s in the closed group", user)
			}
		}
	}
	if club.Status == domain.StatusClosing {
		bad("the group is still closing once it was finished")
	}
	for _, e := range c.store.ClosingSnapshot() {
		if closed && e.Attempt == club.ClosingAttempt && e.At.Equal(club.ClosedAt) {
			bad("the closing index still holds the finished closing's own entry %+v", e)
		}
	}
	live := map[string][]string{}
	for _, gr := range gsnap.Groups {
		if gr.Status == domain.StatusActive || gr.Status == domain.StatusClosing {
			live[gr.NameKey] = append(live[gr.NameKey], gr.ID)
		}
	}
	for key, ids := range live {
		if len(ids) > 1 {
			bad("U1: live groups %v share the name %s", ids, key)
		}
	}
	for _, gr := range c.sameName {
		if !groupActive(gsnap, gr.ID) {
			bad("the creation of %s under the freed name answered success; the group is gone", gr.ID)
		}
	}
	return out
}

// checkActiveGroups runs the groups explorer's checks on every group left
// active, with the creations that answered success.
func checkActiveGroups(t *testing.T, name string, c *closeWorld) {
	t.Helper()
	g := *c.groupWorld
	g.created = c.sameName
	checkGroups(t, name, &g, c.store.GroupSnapshot())
	checkUserGroups(t, name, &g, true)
}
