package library

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"shelf/domain"
)

// oneItem is a ContentStore of one item and a MemberStore of its members.
type oneItem struct {
	ContentStore
	MemberStore
	item    Content
	members []Member
	finds   int
	slices  int // reads of the item's groups
}

func (o *oneItem) Get(_ context.Context, id string) (Content, error) {
	if id != o.item.ID {
		return Content{}, domain.ErrNotFound
	}
	return o.item, nil
}

func (o *oneItem) Find(_ context.Context, _ string, principals []string) ([]Member, error) {
	o.finds++
	var out []Member
	for _, m := range o.members {
		if slices.Contains(principals, m.PrincipalID) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (o *oneItem) Groups(context.Context, string) ([]Member, error) {
	o.slices++
	var out []Member
	for _, m := range o.members {
		if strings.HasPrefix(m.PrincipalID, domain.GroupIDPrefix) {
			out = append(out, m)
		}
	}
	return out, nil
}

// groupsOf is a GroupDirectory of the groups each user is in.
type groupsOf struct {
	GroupDirectory
	of    map[string][]string
	reads int
}

func (g *groupsOf) GroupsAmong(_ context.Context, userID string, groupIDs []string) ([]string, error) {
	g.reads++
	var out []string
	for _, id := range g.of[userID] {
		if slices.Contains(groupIDs, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// callersOf answers the admin as an active admin, anyone else as an
// active user.
type callersOf struct {
	Callers
	admin string
}

func (c callersOf) Caller(_ context.Context, p domain.Principal) (*domain.Access, error) {
	if p.Anonymous() {
		return nil, nil
	}
	a := &domain.Access{ID: p.UserID, Status: domain.StatusActive}
	if p.UserID == c.admin {
		a.Roles = []string{domain.RoleAdmin}
	}
	return a, nil
}

// RequireAdmin is the gate of an admin's power to act: the admin passes.
func (c callersOf) RequireAdmin(ctx context.Context, p domain.Principal) (domain.Access, error) {
	a, _ := c.Caller(ctx, p)
	switch {
	case a == nil:
		return domain.Access{}, domain.ErrNoSession
	case !a.IsAdmin():
		return domain.Access{}, domain.ErrDenied
	}
	return *a, nil
}

// TestReadingAnItemReadsMembershipsOnlyWhenTheyDecide: whoever the caller
// and whatever the item's visibility, Get finds the item exactly when the
// rules say it may be seen (public: everyone; loggedin: any session;
// private: its members, directly or through a group, and admins), and it
// reads the item's groups and the caller's membership only for a private
// item: a read of a shared item by a session is the session and the item.
// A change (requireManager) always reads them: whether the caller manages
// is not in the item's visibility. The caller's membership of the item's
// groups is read only when the caller's own membership does not decide:
// a caller with none of its own, and for a change one who does not
// manage the item directly. The caller's own groups are never read whole.
func TestReadingAnItemReadsMembershipsOnlyWhenTheyDecide(t *testing.T) {
	t.Parallel()
	owner, viewer, inGroup, admin, stranger := "u-owner", "u-viewer", "u-ingroup", "u-admin", "u-stranger"
	viewerManaging := "u-viewer-managing" // a viewer of its own, a manager through a group
	group, managers := "g_readers", "g_managers"
	callers := []struct {
		name     string
		p        domain.Principal
		member   bool // directly or through the group
		manages  bool
		isAdmin  bool
		loggedIn bool
	}{
		{"anonymous", domain.Principal{}, false, false, false, false},
		{"a stranger", domain.Principal{UserID: stranger}, false, false, false, true},
		{"a viewer", domain.Principal{UserID: viewer}, true, false, false, true},
		{"a group's member", domain.Principal{UserID: inGroup}, true, false, false, true},
		{"a viewer managing through a group", domain.Principal{UserID: viewerManaging}, true, true, false, true},
		{"the owner", domain.Principal{UserID: owner}, true, true, false, true},
		{"an admin", domain.Principal{UserID: admin}, false, false, true, true},
	}
	for _, vis := range []Visibility{VisibilityPublic, VisibilityLoggedIn, VisibilityPrivate} {
		for _, c := range callers {
			item := &oneItem{item: Content{ID: domain.NewID(domain.ContentIDPrefix), Visibility: vis, Version: 2},
				members: []Member{{PrincipalID: owner, Role: RoleManager}, {PrincipalID: viewer, Role: RoleViewer}, {PrincipalID: group, Role: RoleViewer},
					{PrincipalID: viewerManaging, Role: RoleViewer}, {PrincipalID: managers, Role: RoleManager}}}
			groups := &groupsOf{of: map[string][]string{inGroup: {group}, viewerManaging: {group, managers}}}
			s := New(Config{}, callersOf{admin: admin}, nil, groups, Stores{Content: item, Members: item}, nil)

			_, err := s.Get(context.Background(), c.p, item.item.ID)
			sees := vis == VisibilityPublic || (vis == VisibilityLoggedIn && c.loggedIn) || c.member || c.isAdmin
			if sees != (err == nil) || (!sees && !errors.Is(err, errContentNotFound)) {
				t.Errorf("%s reading a %s item: %v, want seen %v", c.name, vis, err, sees)
			}
			// The item's groups and the caller's own membership, then the
			// caller's membership of the groups only for the one whose own
			// does not decide.
			direct := c.p.UserID == owner || c.p.UserID == viewer || c.p.UserID == viewerManaging
			wantSlices, wantFinds, wantGroups := 0, 0, 0
			if c.loggedIn && vis == VisibilityPrivate {
				wantSlices, wantFinds = 1, 1
				if !direct {
					wantGroups = 1
				}
			}
			if item.slices != wantSlices || item.finds != wantFinds || groups.reads != wantGroups {
				t.Errorf("%s reading a %s item: %d reads of its groups, %d of members, %d of the caller's groups; want %d, %d and %d",
					c.name, vis, item.slices, item.finds, groups.reads, wantSlices, wantFinds, wantGroups)
			}

			groups.reads, item.finds, item.slices = 0, 0, 0
			_, err = s.requireManager(context.Background(), c.p, item.item.ID)
			switch {
			case !c.loggedIn:
				if !errors.Is(err, domain.ErrNoSession) {
					t.Errorf("%s changing a %s item: %v, want no session", c.name, vis, err)
				}
			case c.manages || c.isAdmin:
				if err != nil {
					t.Errorf("%s changing a %s item: %v, want allowed", c.name, vis, err)
				}
			case sees:
				if !errors.Is(err, domain.ErrDenied) {
					t.Errorf("%s changing a %s item: %v, want denied", c.name, vis, err)
				}
			default:
				if !errors.Is(err, errContentNotFound) {
					t.Errorf("%s changing a %s item: %v, want not found", c.name, vis, err)
				}
			}
			wantGroups = 1
			if c.p.UserID == owner {
				wantGroups = 0
			}
			if c.loggedIn && (item.slices != 1 || item.finds != 1 || groups.reads != wantGroups) {
				t.Errorf("%s changing a %s item: %d reads of its groups, %d of members, %d of the caller's groups; want 1, 1 and %d",
					c.name, vis, item.slices, item.finds, groups.reads, wantGroups)
			}
		}
	}
}

// demotedMidCheck reads its caller as an active admin, and its gate
// finds him no longer one: the role removed between the two reads.
type demotedMidCheck struct{ callersOf }

func (demotedMidCheck) RequireAdmin(context.Context, domain.Principal) (domain.Access, error) {
	return domain.Access{}, domain.Denied("Only an admin may do this, and this session's account is not one.")
}

// TestAnAdminDemotedMidCheckGetsTheItemsWords: an admin changes another's
// private item while his role is removed, between the access check's read
// of him and its gate's. He was refused 403 with the gate's words ("only
// an admin may do this"), about a role he no longer needs named: what he
// asked is the item's managers' to do, and the refusal says so, as for
// anyone who is neither (errNotManager); a private item he no longer sees
// is not found.
func TestAnAdminDemotedMidCheckGetsTheItemsWords(t *testing.T) {
	t.Parallel()
	owner, admin := "u-owner", "u-admin"
	for _, vis := range []Visibility{VisibilityPublic, VisibilityPrivate} {
		item := &oneItem{item: Content{ID: domain.NewID(domain.ContentIDPrefix), Visibility: vis, Version: 2},
			members: []Member{{PrincipalID: owner, Role: RoleManager}}}
		s := New(Config{}, demotedMidCheck{callersOf{admin: admin}}, nil, &groupsOf{}, Stores{Content: item, Members: item}, nil)
		_, err := s.requireManager(context.Background(), domain.Principal{UserID: admin}, item.item.ID)
		want := errNotManager
		if vis == VisibilityPrivate {
			want = errContentNotFound
		}
		if !errors.Is(err, want) {
			t.Errorf("the demoted admin changing a %s item: %v, want %v", vis, err, want)
		}
	}
}
