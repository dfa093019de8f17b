package faults

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/internal/memstore"
)

// noGroups is a group directory without groups (groups are explored on
// their own).
type noGroups struct{}

func (noGroups) MemberRole(context.Context, string, string) (string, error) {
	return "", domain.ErrNotFound
}
func (noGroups) GroupIDsOf(context.Context, string) ([]string, error) { return nil, nil }
func (noGroups) Exists(context.Context, string) (bool, error)         { return false, nil }

// libWorld is a schedule's content on fresh tables: an owner's public
// item shared with a friend as viewer; a third user; an admin.
type libWorld struct {
	*world
	lib                  *library.Service
	admin                domain.Principal
	owner, friend, other domain.User
	item                 string
}

func newLibWorld(t *testing.T) *libWorld {
	t.Helper()
	w := newWorld()
	for _, n := range []string{"root", "owner", "friend", "other"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := w.svc.SetAdmin(context.Background(), "root", true)
	if err != nil {
		t.Fatal(err)
	}
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now},
		w.svc, w.store.Users(), noGroups{}, w.store.Contents(), nopLog{})
	lib.Hooks.Background = func(f func()) { f() } // one call order per schedule
	l := &libWorld{world: w, lib: lib, admin: domain.Principal{UserID: admin.ID},
		owner: w.created[1], friend: w.created[2], other: w.created[3]}
	name, public := "item", string(library.VisibilityPublic)
	c, err := lib.Create(context.Background(), as(l.owner), library.Input{Name: &name, Visibility: &public})
	if err != nil {
		t.Fatal(err)
	}
	l.item = c.ID
	if _, err := lib.Share(context.Background(), as(l.owner), c.ID, l.friend.ID, library.RoleViewer); err != nil {
		t.Fatal(err)
	}
	return l
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
	{
		name: "drain",
		setup: func(l *libWorld) error {
			l.lib.Hooks.BeforeMember = func(_, principalID string) error {
				if principalID == l.friend.ID {
					return errors.New("stopped (test hook)")
				}
				return nil
			}
			defer func() { l.lib.Hooks.BeforeMember = nil }()
			return l.update("half done", string(library.VisibilityLoggedIn))
		},
		run: func(l *libWorld) error { return l.drain() },
	},
	{name: "rebuild", run: func(l *libWorld) error {
		_, err := l.lib.Rebuild(context.Background(), l.admin, l.friend.ID)
		return err
	}},
}

// competitors act on the same item while a faulted action's writes are
// still held back.
var competitors = []struct {
	name string
	run  func(l *libWorld) error
}{
	{"none", nil},
	{"update", func(l *libWorld) error { return l.update("theirs", "") }},
	{"unshare", func(l *libWorld) error { return l.unshare(l.owner, l.friend) }},
	{"reshare-manager", func(l *libWorld) error { return l.share(l.friend, library.RoleManager) }},
	{"share-other", func(l *libWorld) error { return l.share(l.other, library.RoleManager) }},
	{"delete", func(l *libWorld) error { return l.lib.Delete(context.Background(), as(l.owner), l.item) }},
}

// TestExploreContent runs every content action with every fault at every
// store call, alone and with each competitor acting before the held writes
// land; then the client retries a failed action, the outbox worker runs,
// and the libraries are checked (L1, L3, L4, the counts, nothing pending).
func TestExploreContent(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range competitors {
		names = append(names, c.name)
	}
	total := 0
	for _, op := range libOperations {
		probe := newLibWorld(t)
		if op.setup != nil {
			if err := op.setup(probe); err != nil {
				t.Fatal(err)
			}
		}
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(probe) })
		total += everySchedule(t, op.name, calls, names, func(name string, k int, fault memstore.Fault, c int) {
			exploreContent(t, name, op, k, fault, competitors[c].run)
		})
	}
	t.Logf("%d schedules in all", total)
}

func exploreContent(t *testing.T, name string, op libOperation, k int, fault memstore.Fault, competitor func(l *libWorld) error) {
	l := newLibWorld(t)
	if op.setup != nil {
		if err := op.setup(l); err != nil {
			t.Fatalf("%s: set-up: %v", name, err)
		}
	}
	faultOnce(l.store, k, fault)
	err := op.run(l)
	recovered(l.store)
	if err != nil && !expected(err) {
		t.Errorf("%s: the action answered %v", name, err)
	}
	if competitor != nil {
		if cerr := competitor(l); cerr != nil && !expected(cerr) && !domainIs(cerr, domain.ErrNotFound) && !domainIs(cerr, domain.ErrConflict) {
			t.Errorf("%s: the competitor answered %v", name, cerr)
		}
	}
	l.store.Land()
	if err != nil {
		_ = op.run(l) // the client retries
	}
	if err := l.drain(); err != nil {
		t.Errorf("%s: the outbox worker: %v", name, err)
	}
	snap := l.store.ContentSnapshot()
	if err == nil && competitor == nil && op.want != nil {
		if werr := op.want(l, snap); werr != nil {
			t.Errorf("%s: %v", name, werr)
		}
	}
	checkContent(t, name, l, snap)
}

// checkContent asserts, for every item: nothing pending, no mark left, the
// counts match the members and keep a manager; every member's library
// indexes the item as it is, nobody else's does; a deleted item is in no
// library; and each user's library pages (as themself and as an anonymous
// caller) list exactly what their memberships and the visibilities say.
func checkContent(t *testing.T, name string, l *libWorld, snap memstore.ContentSnapshot) {
	t.Helper()
	if snap.Marks != 0 {
		t.Errorf("%s: %d outbox marks left after the worker ran", name, snap.Marks)
	}
	users := []domain.User{l.owner, l.friend, l.other}
	want := map[string][]string{}     // user -> items in their library
	wantAnon := map[string][]string{} // user -> public items in their library
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
		}
		for _, u := range users {
			role := memberRole(snap, c.ID, u.ID)
			var entry *library.Entry
			for _, e := range snap.Index[u.ID] {
				if e.ContentID == c.ID {
					entry = &e
				}
			}
			switch {
			case (role == "" || c.Deleted) && entry != nil:
				t.Errorf("%s: %s: %s's library indexes it (deleted %v, role %q)", name, c.ID, u.ID, c.Deleted, role)
			case role != "" && !c.Deleted && entry == nil:
				t.Errorf("%s: %s: a member's library (%s) lacks it", name, c.ID, u.ID)
			case entry != nil && (entry.Role != role || entry.Name != c.Name || entry.Visibility != c.Visibility || !entry.LastModified.Equal(c.LastModified)):
				t.Errorf("%s: %s: %s's library holds %+v, the item is %+v as %s", name, c.ID, u.ID, *entry, c, role)
			}
			if role != "" && !c.Deleted {
				want[u.ID] = append(want[u.ID], c.ID+"="+c.Name)
				if c.Visibility == library.VisibilityPublic {
					wantAnon[u.ID] = append(wantAnon[u.ID], c.ID+"="+c.Name)
				}
			}
		}
	}
	for _, u := range users {
		for _, viewer := range []domain.Principal{as(u), {}} {
			page, err := l.lib.Library(context.Background(), viewer, u.ID, library.NewestFirst, "", 100)
			if err != nil {
				t.Errorf("%s: %s's library: %v", name, u.ID, err)
				continue
			}
			var got []string
			for _, e := range page.Items {
				got = append(got, e.ContentID+"="+e.Name)
			}
			exp := want[u.ID]
			if viewer.Anonymous() {
				exp = wantAnon[u.ID]
			}
			slices.Sort(got)
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Errorf("%s: %s's library as %q lists %v, want %v", name, u.ID, viewer.UserID, got, exp)
			}
		}
	}
}
