package groups

import (
	"context"
	"errors"

	"shelf/domain"
)

// MemberOf is one row of a user's reverse index: a group they are in and
// their role there.
type MemberOf struct {
	GroupID string
	Role    string
}

// Membership is one group of a user's list: the group and the user's role
// in it.
type Membership struct {
	Group Group
	Role  string
}

// GetGroupByName returns the active group holding a name, compared as
// NormalizeName compares it; anyone may read it, as ShowGroup, which
// finishes a change found pending as this does. A name that breaks the
// naming rules is simply not found (like a username). The committed claim
// leads to the group, which must still hold the name: one claim read and
// one group read (more when a change is found pending).
func (g *Service) GetGroupByName(ctx context.Context, name string) (Group, error) {
	_, key, fe := NormalizeName(name)
	if fe != nil {
		return Group{}, errGroupNotFound
	}
	c, err := g.claimer.Lookup(ctx, domain.KindGroupName, key)
	if errors.Is(err, domain.ErrNotFound) {
		return Group{}, errGroupNotFound
	}
	if err != nil {
		return Group{}, err
	}
	if c.State != domain.ClaimCommitted {
		return Group{}, errGroupNotFound // a creation in flight, or one that died
	}
	gr, err := g.activeGroup(ctx, c.Owner)
	if err == nil {
		gr, err = g.settled(ctx, gr)
	}
	if err != nil {
		return Group{}, err
	}
	if gr.NameKey != key {
		return Group{}, errGroupNotFound
	}
	return gr, nil
}

// ListUserGroups pages through the groups a user is a member of, ordered
// by group id, with the user's role in each, for the user themself and
// active admins (403 for anyone else; 404 for an account an admin cannot
// find). A page is one slice of the user's reverse index
// (groups_by_member) and one read of the page's groups, all at once.
//
// The group row is the record of membership: a change of this user that
// is recorded there but not yet finished counts as recorded (a pending
// removal leaves the group out, a pending role change shows the new
// role), as it does for every later change of the group. A pending add is
// listed once its rows are written (by the change itself, its retry, the
// next change, member list or page of the group, or the jobs' worker). So
// a page may hold fewer than limit groups while more follow: nextCursor
// says so.
func (g *Service) ListUserGroups(ctx context.Context, p domain.Principal, userID, cursor string, limit int) (domain.Page[Membership], error) {
	if p.Anonymous() {
		return domain.Page[Membership]{}, domain.ErrNoSession
	}
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return domain.Page[Membership]{}, domain.ErrUserNotFound
	}
	after := ""
	if cursor != "" {
		f, err := domain.DecodeCursor(cursor, 1)
		if err != nil || !domain.ValidID(f[0], domain.GroupIDPrefix) {
			return domain.Page[Membership]{}, domain.ErrBadCursor
		}
		after = f[0]
	}
	var rows []MemberOf
	var rowsErr error
	slice := func(ctx context.Context) { rows, rowsErr = g.members.GroupsPage(ctx, userID, after, limit+1) }
	if p.UserID == userID {
		slice(ctx) // the session was read with the account, which is visible
	} else {
		if _, err := g.admins.RequireAdmin(ctx, p); err != nil {
			return domain.Page[Membership]{}, err
		}
		var userErr error
		domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
			if i == 0 {
				userErr = g.visibleUser(ctx, userID)
			} else {
				slice(ctx)
			}
		})
		if userErr != nil {
			return domain.Page[Membership]{}, userErr
		}
	}
	if rowsErr != nil {
		return domain.Page[Membership]{}, rowsErr
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = domain.EncodeCursor(rows[limit-1].GroupID)
	}
	found := make([]Group, len(rows))
	errs := make([]error, len(rows))
	domain.Parallel(ctx, len(rows), func(ctx context.Context, i int) { found[i], errs[i] = g.activeGroup(ctx, rows[i].GroupID) })
	items := make([]Membership, 0, len(rows))
	for i, row := range rows {
		gr, err := found[i], errs[i]
		if errors.Is(err, domain.ErrNotFound) {
			continue // not active (closing or closed, its rows not yet removed): an index row alone is no membership
		}
		if err != nil {
			return domain.Page[Membership]{}, err
		}
		role := row.Role
		if c := gr.Pending; c != nil && c.UserID == userID {
			if c.Role == "" {
				continue
			}
			role = c.Role
		}
		gr.Pending = nil
		items = append(items, Membership{Group: gr, Role: role})
	}
	return domain.Page[Membership]{Items: items, Next: next}, nil
}
