package library

import (
	"context"

	"shelf/domain"
)

// MemberList is a page of an item's members, with what the item counts of
// them all (read with the item: no count of the partition) and the
// caller's own role in it ("": none of its own), so a caller knows before
// asking whether it is the last manager.
type MemberList struct {
	domain.Page[Member]
	Members, Managers int
	Own               string
}

// MembersPage lists an item's members (managers and admins only).
func (s *Service) MembersPage(ctx context.Context, p domain.Principal, id, cursor string, limit int) (MemberList, error) {
	c, a, err := s.managed(ctx, p, id)
	if err != nil {
		return MemberList{}, err
	}
	page, err := s.membersPage(ctx, id, cursor, limit)
	if err != nil {
		return MemberList{}, err
	}
	page.Items = asRecorded(page.Items, c.Pending)
	return MemberList{Page: page, Members: c.Members, Managers: c.Managers, Own: a.own}, nil
}

// asRecorded is a page of member rows as the item's row records them, as
// its counts do: a removal recorded there and not yet carried out hides
// its principal, a role change shows its new role; an add is listed once
// its row is written (TestAnUnshareRecordedButNotFinishedIsNotListed). A
// page may then hold fewer than its limit while more follow.
func asRecorded(items []Member, pc *MemberChange) []Member {
	if pc == nil {
		return items
	}
	out := make([]Member, 0, len(items))
	for _, m := range items {
		if m.PrincipalID == pc.PrincipalID {
			if pc.Role == "" {
				continue
			}
			m.Role = pc.Role
		}
		out = append(out, m)
	}
	return out
}

// membersPage is the page of item id's members after cursor.
func (s *Service) membersPage(ctx context.Context, id, cursor string, limit int) (domain.Page[Member], error) {
	after := ""
	if cursor != "" {
		f, err := domain.DecodeCursor(cursor, 1)
		if err != nil || (!domain.ValidID(f[0], domain.UserIDPrefix) && !domain.ValidID(f[0], domain.GroupIDPrefix)) {
			return domain.Page[Member]{}, domain.ErrBadCursor
		}
		after = f[0]
	}
	members, err := s.members.Page(ctx, id, after, limit+1)
	if err != nil {
		return domain.Page[Member]{}, err
	}
	return domain.PageOf(members, limit, func(m Member) string { return domain.EncodeCursor(m.PrincipalID) }), nil
}
