package library

import (
	"context"
	"errors"
	"slices"
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

// groupsOf is a GroupDirectory in which one user is in one group.
type groupsOf struct {
	GroupDirectory
	user, group string
	reads       int
}

func (g *groupsOf) GroupIDsOf(_ context.Context, userID string) ([]string, error) {
	g.reads++
	if userID == g.user {
		return []string{g.group}, nil
	}
	return nil, nil
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

// TestReadingAnItemReadsMembershipsOnlyWhenTheyDecide: whoever the caller
// and whatever the item's visibility, Get finds the item exactly when the
// rules say it may be seen (public: everyone; loggedin: any session;
// private: its members, directly or through a group, and admins), and it
// reads the caller's groups and memberships only for a private item: a
// read of a shared item by a session is the session and the item. A change
// (requireManager) always reads them: whether the caller manages is not in
// the item's visibility.
func TestReadingAnItemReadsMembershipsOnlyWhenTheyDecide(t *testing.T) {
	t.Parallel()
	owner, viewer, inGroup, admin, stranger := "u-owner", "u-viewer", "u-ingroup", "u-admin", "u-stranger"
	group := "g-readers"
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
		{"the owner", domain.Principal{UserID: owner}, true, true, false, true},
		{"an admin", domain.Principal{UserID: admin}, false, false, true, true},
	}
	for _, vis := range []Visibility{VisibilityPublic, VisibilityLoggedIn, VisibilityPrivate} {
		for _, c := range callers {
			item := &oneItem{item: Content{ID: domain.NewID(domain.ContentIDPrefix), Visibility: vis, Version: 2},
				members: []Member{{PrincipalID: owner, Role: RoleManager}, {PrincipalID: viewer, Role: RoleViewer}, {PrincipalID: group, Role: RoleViewer}}}
			groups := &groupsOf{user: inGroup, group: group}
			s := New(Config{}, callersOf{admin: admin}, nil, groups, Stores{Content: item, Members: item}, nil)

			_, err := s.Get(context.Background(), c.p, item.item.ID)
			sees := vis == VisibilityPublic || (vis == VisibilityLoggedIn && c.loggedIn) || c.member || c.isAdmin
			if sees != (err == nil) || (!sees && !errors.Is(err, errContentNotFound)) {
				t.Errorf("%s reading a %s item: %v, want seen %v", c.name, vis, err, sees)
			}
			decide := c.loggedIn && vis == VisibilityPrivate
			if read := groups.reads > 0 || item.finds > 0; read != decide {
				t.Errorf("%s reading a %s item: %d reads of groups and %d of members, want reads %v", c.name, vis, groups.reads, item.finds, decide)
			}

			groups.reads, item.finds = 0, 0
			err = s.requireManager(context.Background(), c.p, item.item.ID)
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
			if c.loggedIn && (groups.reads != 1 || item.finds != 1) {
				t.Errorf("%s changing a %s item: %d reads of groups and %d of members, want 1 and 1", c.name, vis, groups.reads, item.finds)
			}
		}
	}
}
