package groups

import (
	"context"
	"errors"

	"shelf/domain"
)

// GetGroup returns an active group; anyone may read it.
func (g *Service) GetGroup(ctx context.Context, id string) (Group, error) {
	return g.activeGroup(ctx, id)
}

// ShowGroup is GetGroup for the group's own page (GET): a change found
// pending is finished first, as a reader of its members does, so a group
// whose creation died with its creator deleted is closed and answered
// 404 at once, not shown until the jobs' worker takes its entry
// (docs/design/groups.md#interrupted-changes).
func (g *Service) ShowGroup(ctx context.Context, id string) (Group, error) {
	gr, err := g.activeGroup(ctx, id)
	if err != nil {
		return Group{}, err
	}
	return g.settled(ctx, gr)
}

// settled finishes a change found pending in gr and reads the group
// again; a group without one is returned as it is.
func (g *Service) settled(ctx context.Context, gr Group) (Group, error) {
	if gr.Pending == nil {
		return gr, nil
	}
	if _, err := g.finish(ctx, "show", gr); err != nil {
		return Group{}, err
	}
	return g.activeGroup(ctx, gr.ID)
}

// activeGroup reads an active group, or answers errGroupNotFound.
func (g *Service) activeGroup(ctx context.Context, id string) (Group, error) {
	if !domain.ValidID(id, domain.GroupIDPrefix) {
		return Group{}, errGroupNotFound
	}
	gr, err := g.groups.Get(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && gr.Status != domain.StatusActive) {
		return Group{}, errGroupNotFound
	}
	return gr, err
}

// removing reports whether the group records the removal of userID, not
// yet carried out: the user is no member from its compare-and-set on,
// though the member rows are still there.
func (gr Group) removing(userID string) bool {
	return gr.Pending != nil && gr.Pending.UserID == userID && gr.Pending.Role == ""
}

// MemberRole returns the user's role in the group ("member" or
// "manager"); ErrNotFound when the user is not a member or the group is
// not active (Standing).
func (g *Service) MemberRole(ctx context.Context, groupID, userID string) (string, error) {
	active, role, err := g.Standing(ctx, groupID, userID)
	switch {
	case err != nil:
		return "", err
	case !active || role == "":
		return "", domain.ErrNotFound
	}
	return role, nil
}

// Standing reads at once whether the group is active and the user's role
// there ("": none; userID "" reads the group alone). As for a user's
// groups (ListUserGroups) and access through a group (GroupsAmong), the
// group row is the record of membership: a group being closed or closed
// has no members, and a removal of the user it records and has not
// finished is no membership, though the member row is still there
// (TestAMemberWhoseRemovalIsRecordedNoLongerSeesTheGroupsPrivateItems);
// a role change it records is the lesser of the two roles
// (TestADemotionRecordedEndsTheManagersRightsAtOnce).
// The group row and the member row are read at once: one round trip.
func (g *Service) Standing(ctx context.Context, groupID, userID string) (active bool, role string, err error) {
	if !domain.ValidID(groupID, domain.GroupIDPrefix) {
		return false, "", nil
	}
	reads := 1
	if domain.ValidID(userID, domain.UserIDPrefix) {
		reads = 2
	}
	var gr Group
	var grErr, roleErr error
	domain.Parallel(ctx, reads, func(ctx context.Context, i int) {
		if i == 0 {
			gr, grErr = g.activeGroup(ctx, groupID)
		} else {
			role, roleErr = g.members.Role(ctx, groupID, userID)
		}
	})
	switch {
	case errors.Is(grErr, domain.ErrNotFound):
		return false, "", nil
	case grErr != nil:
		return false, "", grErr
	case errors.Is(roleErr, domain.ErrNotFound):
		return true, "", nil
	case roleErr != nil:
		return false, "", roleErr
	case gr.removing(userID):
		return true, "", nil // a removal recorded, its rows not yet removed
	case gr.Pending != nil && gr.Pending.UserID == userID && gr.Pending.Role != role:
		// A role change recorded, its row not yet rewritten: the lesser
		// of the two roles, so a demotion takes a manager's rights at
		// once and a promotion gives them once written.
		return true, RoleMember, nil
	}
	return true, role, nil
}

// GroupsAmong returns which of groupIDs the user is a member of: one read
// of groups_by_member by key (none for none), then the rows of the groups
// found there, at once. As for a user's groups (ListUserGroups), the
// group row is the record of membership: an index row of a group being
// closed or closed is no membership (every membership ends with the
// closing's answer, before its job removes the rows), nor is one whose
// removal the group records and has not finished
// (TestAMemberOfAClosingGroupCannotKeepWhatTheGroupManaged).
func (g *Service) GroupsAmong(ctx context.Context, userID string, groupIDs []string) ([]string, error) {
	if !domain.ValidID(userID, domain.UserIDPrefix) || len(groupIDs) == 0 {
		return []string{}, nil
	}
	in, err := g.members.GroupsAmong(ctx, userID, groupIDs)
	if err != nil || len(in) == 0 {
		return in, err
	}
	found := make([]Group, len(in))
	errs := make([]error, len(in))
	domain.Parallel(ctx, len(in), func(ctx context.Context, i int) { found[i], errs[i] = g.activeGroup(ctx, in[i]) })
	out := make([]string, 0, len(in))
	for i, id := range in {
		switch gr, err := found[i], errs[i]; {
		case errors.Is(err, domain.ErrNotFound):
			continue // not active: an index row alone is no membership
		case err != nil:
			return nil, err
		case gr.removing(userID):
			continue // a removal recorded, its rows not yet removed
		}
		out = append(out, id)
	}
	return out, nil
}

// Listed returns which of groupIDs the reverse index (groups_by_member)
// lists the user in: one read by key, none for none. No group row is
// read, so an index row alone is no membership: the library asks it after
// GroupsAmong, to tell a removal finished between that read's index and
// its rows.
func (g *Service) Listed(ctx context.Context, userID string, groupIDs []string) ([]string, error) {
	if !domain.ValidID(userID, domain.UserIDPrefix) || len(groupIDs) == 0 {
		return []string{}, nil
	}
	return g.members.GroupsAmong(ctx, userID, groupIDs)
}

// GroupIDsOf returns the ids of the groups the user is a member of (one
// read of groups_by_member; a deletion's job, never a request).
func (g *Service) GroupIDsOf(ctx context.Context, userID string) ([]string, error) {
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return []string{}, nil
	}
	return g.members.GroupsOf(ctx, userID)
}

// Exists reports whether an active group with this id exists.
func (g *Service) Exists(ctx context.Context, id string) (bool, error) {
	_, err := g.activeGroup(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ListMembers pages through a group's members, ordered by user id, for
// its members and admins. The group, the caller's membership and the page
// are read at once; a change found pending is finished first, so the page
// agrees with the group's counts.
func (g *Service) ListMembers(ctx context.Context, p domain.Principal, groupID, cursor string, limit int) (domain.Page[Member], error) {
	if p.Anonymous() {
		return domain.Page[Member]{}, domain.ErrNoSession
	}
	if !domain.ValidID(groupID, domain.GroupIDPrefix) {
		return domain.Page[Member]{}, errGroupNotFound
	}
	after := ""
	if cursor != "" {
		f, err := domain.DecodeCursor(cursor, 1)
		if err != nil || !domain.ValidID(f[0], domain.UserIDPrefix) {
			return domain.Page[Member]{}, domain.ErrBadCursor
		}
		after = f[0]
	}
	var gr Group
	var callerRole string
	var items []Member
	var grErr, roleErr, pageErr error
	read := func(ctx context.Context, i int) {
		switch i {
		case 0:
			gr, grErr = g.activeGroup(ctx, groupID)
		case 1:
			callerRole, roleErr = g.role(ctx, groupID, p.UserID)
		case 2:
			items, pageErr = g.members.Page(ctx, groupID, after, limit+1)
		}
	}
	domain.Parallel(ctx, 3, read)
	if grErr != nil {
		return domain.Page[Member]{}, grErr
	}
	if gr.Pending != nil {
		if _, err := g.finish(ctx, "list", gr); err != nil {
			return domain.Page[Member]{}, err
		}
		// Read again, the group too: finishing a creation whose creator
		// is being deleted closes the group (closeDeparted).
		domain.Parallel(ctx, 3, read)
		if grErr != nil {
			return domain.Page[Member]{}, grErr
		}
	}
	if err := errors.Join(roleErr, pageErr); err != nil {
		return domain.Page[Member]{}, err
	}
	// The group row is the record of membership (Standing): a removal of
	// the caller it records is no membership, though the member row is
	// still there (one recorded after this list finished the change it
	// found pending: TestAMemberWhoseRemovalIsRecordedNoLongerListsTheMembers).
	if callerRole == "" || gr.removing(p.UserID) {
		if _, err := g.admins.RequireAdmin(ctx, p); err != nil {
			return domain.Page[Member]{}, err
		}
	}
	return domain.PageOf(items, limit, func(m Member) string { return domain.EncodeCursor(m.UserID) }), nil
}
