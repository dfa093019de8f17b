package repository

import (
	"context"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/groups"
)

// Groups keeps group rows. Like accounts, they are LWT-managed: every write
// is a lightweight transaction (created IF NOT EXISTS, activated IF status
// = 'pending' AND write_id = <the create attempt's tag>, changed IF version
// = ?), tagged with a random write id so an ambiguous answer is settled by
// a SERIAL read (DB.exec).
type Groups struct {
	rows casTable[groupRow, *groupRow]
}

var _ groups.Store = (*Groups)(nil)

// NewGroups returns the group store.
func NewGroups(db *DB) *Groups {
	return &Groups{rows: casTable[groupRow, *groupRow]{db: db, name: "groups", selectCQL: groupSelectCQL,
		writeID: func(r groupRow) string { return r.WriteID }, version: func(r groupRow) int { return r.Version }, status: func(r groupRow) string { return r.Status }}}
}

// columns are groupSelectCQL's.
func (r *groupRow) columns() []any {
	return []any{&r.ID, &r.Name, &r.NameKey, &r.DisplayName, &r.Description, &r.MaxMembers, &r.MemberCount,
		&r.ManagerCount, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt, &r.Status, &r.PendingUser, &r.PendingRole,
		&r.Version, &r.WriteID, &r.ClosedAt, &r.ClosedBy, &r.ClosingAttempt}
}

// groupRow is a row of the groups table.
type groupRow struct {
	ID           string    `db:"id"`
	Name         string    `db:"name"`
	NameKey      string    `db:"name_key"`
	DisplayName  string    `db:"display_name"`
	Description  string    `db:"description"`
	MaxMembers   int       `db:"max_members"`
	MemberCount  int       `db:"member_count"`
	ManagerCount int       `db:"manager_count"`
	CreatedBy    string    `db:"created_by"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	Status       string    `db:"status"`
	PendingUser  string    `db:"pending_user"`
	PendingRole  string    `db:"pending_role"`
	Version      int       `db:"version"`
	WriteID      string    `db:"write_id"`
	ClosedAt     time.Time `db:"closed_at"` // 013
	ClosedBy     string    `db:"closed_by"`
	// ClosingAttempt tags the attempt whose compare-and-set began the
	// closing (014): its index entry's key.
	ClosingAttempt string `db:"closing_attempt"`
}

func fromDomainGroup(g groups.Group) groupRow {
	r := groupRow{
		ID: g.ID, Name: g.Name, NameKey: g.NameKey, DisplayName: g.DisplayName, Description: g.Description,
		MaxMembers: g.MaxMembers, MemberCount: g.MemberCount, ManagerCount: g.ManagerCount,
		CreatedBy: g.CreatedBy, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt, Status: string(g.Status),
		Version: g.Version, ClosedAt: g.ClosedAt, ClosedBy: g.ClosedBy, ClosingAttempt: g.ClosingAttempt,
	}
	if c := g.Pending; c != nil {
		r.PendingUser, r.PendingRole = c.UserID, c.Role
	}
	return r
}

func (r groupRow) toDomain() groups.Group {
	g := groups.Group{
		ID: r.ID, Name: r.Name, NameKey: r.NameKey, DisplayName: r.DisplayName, Description: r.Description,
		MaxMembers: r.MaxMembers, MemberCount: r.MemberCount, ManagerCount: r.ManagerCount,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Status: domain.Status(r.Status), Version: r.Version, ClosedBy: r.ClosedBy, ClosingAttempt: r.ClosingAttempt,
	}
	if !r.ClosedAt.IsZero() {
		g.ClosedAt = r.ClosedAt.UTC()
	}
	if r.PendingUser != "" {
		g.Pending = &groups.MemberChange{UserID: r.PendingUser, Role: r.PendingRole}
	}
	return g
}

// groupColumns are written together by every write, so a TTL 0 rewrite
// covers them all (TTL is per cell).
const groupColumns = `name = ?, name_key = ?, display_name = ?, description = ?, max_members = ?, member_count = ?, manager_count = ?, created_by = ?, created_at = ?, updated_at = ?, status = ?, pending_user = ?, pending_role = ?, version = ?, write_id = ?, closed_at = ?, closed_by = ?, closing_attempt = ?`

const (
	groupInsertCQL   conditionalCQL = `INSERT INTO groups (id, name, name_key, display_name, description, max_members, member_count, manager_count, created_by, created_at, updated_at, status, pending_user, pending_role, version, write_id, closed_at, closed_by, closing_attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	groupActivateCQL conditionalCQL = `UPDATE groups USING TTL 0 SET ` + groupColumns + ` WHERE id = ? IF status = 'pending' AND write_id = ?`
	groupUpdateCQL   conditionalCQL = `UPDATE groups SET ` + groupColumns + ` WHERE id = ? IF version = ?`
	groupDiscardCQL  conditionalCQL = `DELETE FROM groups WHERE id = ? IF status = 'pending'`
	groupSelectCQL   readCQL        = `SELECT id, name, name_key, display_name, description, max_members, member_count, manager_count, created_by, created_at, updated_at, status, pending_user, pending_role, version, write_id, closed_at, closed_by, closing_attempt FROM groups WHERE id = ?`
)

// values lists r's columns in groupColumns order, with the tag of this
// write; absent is what an empty optional column is written as (see
// orAbsent): the same columns are set by the pending insert and by the
// activation, so the activation's TTL 0 covers every cell that has one.
func (r groupRow) values(writeID string, absent any) []any {
	return []any{r.Name, r.NameKey, r.DisplayName, orAbsent(r.Description, absent), orAbsent(r.MaxMembers, absent),
		r.MemberCount, r.ManagerCount, r.CreatedBy, r.CreatedAt, r.UpdatedAt, r.Status,
		orAbsent(r.PendingUser, absent), orAbsent(r.PendingRole, absent), r.Version, writeID,
		orAbsent(r.ClosedAt, absent), orAbsent(r.ClosedBy, absent), orAbsent(r.ClosingAttempt, absent)}
}

// Create inserts a pending group that expires after lease, and answers the
// tag of the attempt whose row it is.
func (s *Groups) Create(ctx context.Context, g groups.Group, lease time.Duration) (string, error) {
	r := fromDomainGroup(g)
	return s.rows.create(ctx, groupInsertCQL, g.ID, func(writeID string) []any {
		return append(append([]any{r.ID}, r.values(writeID, gocql.UnsetValue)...), ttlSeconds(lease))
	})
}

// Activate rewrites every column without TTL if the group is still pending
// as the create attempt tagged tag wrote it.
func (s *Groups) Activate(ctx context.Context, g groups.Group, tag string) (bool, error) {
	r, writeID := fromDomainGroup(g), newWriteID()
	return s.rows.write(ctx, "activate", groupActivateCQL, g.ID, writeID, 0, append(r.values(writeID, gocql.UnsetValue), r.ID, tag)...)
}

// Update writes g if the stored version is g.Version-1.
func (s *Groups) Update(ctx context.Context, g groups.Group) (bool, error) {
	r, writeID := fromDomainGroup(g), newWriteID()
	return s.rows.write(ctx, "update", groupUpdateCQL, g.ID, writeID, g.Version, append(r.values(writeID, nil), r.ID, g.Version-1)...)
}

// Discard deletes a group that is still pending.
func (s *Groups) Discard(ctx context.Context, id string) error {
	return s.rows.discardPending(ctx, groupDiscardCQL, id)
}

// Get reads a group.
func (s *Groups) Get(ctx context.Context, id string) (groups.Group, error) {
	r, err := s.rows.read(ctx, id, false)
	return r.toDomain(), err
}

// GetSerial reads a group at SERIAL.
func (s *Groups) GetSerial(ctx context.Context, id string) (groups.Group, error) {
	r, err := s.rows.read(ctx, id, true)
	return r.toDomain(), err
}
