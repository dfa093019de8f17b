package library

import (
	"context"

	"shelf/domain"
)

// MembersPage lists an item's members (managers and admins only).
func (s *Service) MembersPage(ctx context.Context, p domain.Principal, id, cursor string, limit int) (domain.Page[Member], error) {
	if err := s.requireManager(ctx, p, id); err != nil {
		return domain.Page[Member]{}, err
	}
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
