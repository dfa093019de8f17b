package repository

import (
	"context"
	"errors"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/groups"
)

// GroupMembers keeps the member tables: group_members (group -> members)
// and groups_by_member (user -> groups). They are derived from the group
// rows, and every write carries the group version of the change it
// belongs to as its timestamp (USING TIMESTAMP): whichever order the writes
// of two changes land in, the newer change wins, a repeated write is
// harmless, and a late write of an old change never resurrects a member
// removed since. They are not LWT-managed: the group row's compare-and-set
// is what serializes changes.
type GroupMembers struct {
	db *DB
}

var _ groups.MemberStore = (*GroupMembers)(nil)

// NewGroupMembers returns the member store.
func NewGroupMembers(db *DB) *GroupMembers { return &GroupMembers{db: db} }

const (
	gmInsertCQL    versionedCQL = `INSERT INTO group_members (group_id, user_id, role) VALUES (?, ?, ?) USING TIMESTAMP ?`
	gmIndexCQL     versionedCQL = `INSERT INTO groups_by_member (user_id, group_id, role) VALUES (?, ?, ?) USING TIMESTAMP ?`
	gmDeleteCQL    versionedCQL = `DELETE FROM group_members USING TIMESTAMP ? WHERE group_id = ? AND user_id = ?`
	gmUnindexCQL   versionedCQL = `DELETE FROM groups_by_member USING TIMESTAMP ? WHERE user_id = ? AND group_id = ?`
	gmRoleCQL      readCQL      = `SELECT role FROM group_members WHERE group_id = ? AND user_id = ?`
	gmPageCQL      readCQL      = `SELECT user_id, role FROM group_members WHERE group_id = ? LIMIT ?`
	gmPageAfterCQL readCQL      = `SELECT user_id, role FROM group_members WHERE group_id = ? AND user_id > ? LIMIT ?`
	gmGroupsOfCQL  readCQL      = `SELECT group_id FROM groups_by_member WHERE user_id = ?`
	gmGroupsCQL    readCQL      = `SELECT group_id, role FROM groups_by_member WHERE user_id = ? LIMIT ?`
	gmGroupsAfter  readCQL      = `SELECT group_id, role FROM groups_by_member WHERE user_id = ? AND group_id > ? LIMIT ?`
	gmGroupsAmong  readCQL      = `SELECT group_id FROM groups_by_member WHERE user_id = ? AND group_id IN ?`
)

// Apply writes one change to both tables (two partitions, so two
// statements rather than a multi-partition batch): an addition both at
// once, a removal the reverse index first and the member row only once that
// delete is known to have landed, so a member row is gone only once both
// are: a closing's retry pages the member rows to remove and must find
// every row a failed removal left (docs/design/closing.md). The version is
// used as the write timestamp as is: versions only grow, and these tables
// are written by nothing else.
func (s *GroupMembers) Apply(ctx context.Context, groupID string, c groups.MemberChange, version int) error {
	ts := int64(version)
	if c.Role == "" {
		if err := s.db.write(ctx, "groups_by_member.delete", gmUnindexCQL, ts, c.UserID, groupID); err != nil {
			return err
		}
		return s.db.write(ctx, "group_members.delete", gmDeleteCQL, ts, groupID, c.UserID)
	}
	return all(ctx, []func(ctx context.Context) error{
		func(ctx context.Context) error {
			return s.db.write(ctx, "group_members.insert", gmInsertCQL, groupID, c.UserID, c.Role, ts)
		},
		func(ctx context.Context) error {
			return s.db.write(ctx, "groups_by_member.insert", gmIndexCQL, c.UserID, groupID, c.Role, ts)
		},
	})
}

// Role reads one member's role.
func (s *GroupMembers) Role(ctx context.Context, groupID, userID string) (string, error) {
	var role string
	q := s.db.query(ctx, 0, gmRoleCQL, groupID, userID)
	defer q.Release()
	err := q.Scan(&role)
	if errors.Is(err, gocql.ErrNotFound) {
		return "", domain.ErrNotFound
	}
	if err != nil {
		return "", dbErr("group_members.get", err)
	}
	return role, nil
}

// memberRow is a row of group_members as gmPageCQL reads it.
type memberRow struct {
	UserID string `db:"user_id"`
	Role   string `db:"role"`
}

// columns are gmPageCQL's and gmPageAfterCQL's.
func (r *memberRow) columns() []any { return []any{&r.UserID, &r.Role} }

// Page slices the group's partition after a user id, in user id order.
func (s *GroupMembers) Page(ctx context.Context, groupID, after string, limit int) ([]groups.Member, error) {
	q := s.db.query(ctx, 0, gmPageCQL, groupID, limit)
	if after != "" {
		q = s.db.query(ctx, 0, gmPageAfterCQL, groupID, after, limit)
	}
	rows, err := selectRows[memberRow](q)
	if err != nil {
		return nil, dbErr("group_members.page", err)
	}
	out := make([]groups.Member, len(rows))
	for i, r := range rows {
		out[i] = groups.Member{UserID: r.UserID, Role: r.Role}
	}
	return out, nil
}

// GroupsOf reads the user's partition of groups_by_member (an empty list,
// not nil, when there is none).
func (s *GroupMembers) GroupsOf(ctx context.Context, userID string) ([]string, error) {
	out, err := selectValues[string](s.db.query(ctx, 0, gmGroupsOfCQL, userID))
	if err != nil {
		return nil, dbErr("groups_by_member.list", err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// GroupsAmong reads which of groupIDs the user is a member of (one read
// of the user's partition of groups_by_member, by key: its cost follows
// groupIDs, not the user's groups).
func (s *GroupMembers) GroupsAmong(ctx context.Context, userID string, groupIDs []string) ([]string, error) {
	if len(groupIDs) == 0 {
		return []string{}, nil
	}
	out, err := selectValues[string](s.db.query(ctx, 0, gmGroupsAmong, userID, groupIDs))
	if err != nil {
		return nil, dbErr("groups_by_member.among", err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// memberOfRow is a row of groups_by_member as gmGroupsCQL reads it.
type memberOfRow struct {
	GroupID string `db:"group_id"`
	Role    string `db:"role"`
}

// columns are gmGroupsCQL's and gmGroupsAfter's.
func (r *memberOfRow) columns() []any { return []any{&r.GroupID, &r.Role} }

// GroupsPage slices the user's partition of groups_by_member after a
// group id, in group id order.
func (s *GroupMembers) GroupsPage(ctx context.Context, userID, after string, limit int) ([]groups.MemberOf, error) {
	stmt, args := gmGroupsCQL, []any{userID, limit}
	if after != "" {
		stmt, args = gmGroupsAfter, []any{userID, after, limit}
	}
	rows, err := selectRows[memberOfRow](s.db.query(ctx, 0, stmt, args...))
	if err != nil {
		return nil, dbErr("groups_by_member.page", err)
	}
	out := make([]groups.MemberOf, len(rows))
	for i, r := range rows {
		out[i] = groups.MemberOf{GroupID: r.GroupID, Role: r.Role}
	}
	return out, nil
}
