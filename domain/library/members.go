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
	return MemberList{Page: page, Members: c.Members, Managers: c.Managers, Own: a.own}, nil
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
