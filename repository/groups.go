package repository

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
)

// Groups keeps group rows. Like accounts, they are LWT-managed: every write
// is a lightweight transaction (created IF NOT EXISTS, activated IF status
// = 'pending', changed IF version = ?), tagged with a random write id so an
// ambiguous answer is settled by a SERIAL read (DB.exec).
type Groups struct {
	db *DB
}

var _ domain.GroupStore = (*Groups)(nil)

// NewGroups returns the group store.
func NewGroups(db *DB) *Groups { return &Groups{db: db} }

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
}

func fromDomainGroup(g domain.Group) groupRow {
	r := groupRow{
		ID: g.ID, Name: g.Name, NameKey: g.NameKey, DisplayName: g.DisplayName, Description: g.Description,
		MaxMembers: g.MaxMembers, MemberCount: g.MemberCount, ManagerCount: g.ManagerCount,
		CreatedBy: g.CreatedBy, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt, Status: string(g.Status),
		Version: g.Version,
	}
	if c := g.Pending; c != nil {
		r.PendingUser, r.PendingRole = c.UserID, c.Role
	}
	return r
}

func (r groupRow) toDomain() domain.Group {
	g := domain.Group{
		ID: r.ID, Name: r.Name, NameKey: r.NameKey, DisplayName: r.DisplayName, Description: r.Description,
		MaxMembers: r.MaxMembers, MemberCount: r.MemberCount, ManagerCount: r.ManagerCount,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Status: domain.Status(r.Status), Version: r.Version,
	}
	if r.PendingUser != "" {
		g.Pending = &domain.GroupMemberChange{UserID: r.PendingUser, Role: r.PendingRole}
	}
	return g
}

// groupColumns are written together by every write, so a TTL 0 rewrite
// covers them all (TTL is per cell).
const groupColumns = `name = ?, name_key = ?, display_name = ?, description = ?, max_members = ?, member_count = ?, manager_count = ?, created_by = ?, created_at = ?, updated_at = ?, status = ?, pending_user = ?, pending_role = ?, version = ?, write_id = ?`

const (
	groupInsertCQL   = `INSERT INTO groups (id, name, name_key, display_name, description, max_members, member_count, manager_count, created_by, created_at, updated_at, status, pending_user, pending_role, version, write_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	groupActivateCQL = `UPDATE groups USING TTL 0 SET ` + groupColumns + ` WHERE id = ? IF status = 'pending'`
	groupUpdateCQL   = `UPDATE groups SET ` + groupColumns + ` WHERE id = ? IF version = ?`
	groupDiscardCQL  = `DELETE FROM groups WHERE id = ? IF status = 'pending'`
	groupSelectCQL   = `SELECT id, name, name_key, display_name, description, max_members, member_count, manager_count, created_by, created_at, updated_at, status, pending_user, pending_role, version, write_id FROM groups WHERE id = ?`
)

// values lists r's columns in groupColumns order, with the tag of this
// write; absent is what an empty optional column is written as (see
// orAbsent): the same columns are set by the pending insert and by the
// activation, so the activation's TTL 0 covers every cell that has one.
func (r groupRow) values(writeID string, absent any) []any {
	return []any{r.Name, r.NameKey, r.DisplayName, orAbsent(r.Description, absent), orAbsent(r.MaxMembers, absent),
		r.MemberCount, r.ManagerCount, r.CreatedBy, r.CreatedAt, r.UpdatedAt, r.Status,
		orAbsent(r.PendingUser, absent), orAbsent(r.PendingRole, absent), r.Version, writeID}
}

// Create inserts a pending group that expires after lease.
func (s *Groups) Create(ctx context.Context, g domain.Group, lease time.Duration) error {
	r := fromDomainGroup(g)
	writeID := newWriteID()
	args := append(append([]any{r.ID}, r.values(writeID, gocql.UnsetValue)...), ttlSeconds(lease))
	applied, err := s.db.exec(ctx, lwt{
		name:    "groups.create",
		run:     func(ctx context.Context) (bool, error) { return applied(s.db.cas(ctx, groupInsertCQL, args...)) },
		resolve: s.resolveWrite(g.ID, writeID),
	})
	if err == nil && !applied {
		return fmt.Errorf("groups.create: id %s already exists", g.ID)
	}
	return err
}

// Activate rewrites every column without TTL if the group is still pending.
func (s *Groups) Activate(ctx context.Context, g domain.Group) (bool, error) {
	r := fromDomainGroup(g)
	writeID := newWriteID()
	args := append(r.values(writeID, gocql.UnsetValue), r.ID)
	return s.db.exec(ctx, lwt{
		name:    "groups.activate",
		run:     func(ctx context.Context) (bool, error) { return applied(s.db.cas(ctx, groupActivateCQL, args...)) },
		resolve: s.resolveWrite(g.ID, writeID),
	})
}

// Update writes g if the stored version is g.Version-1.
func (s *Groups) Update(ctx context.Context, g domain.Group) (bool, error) {
	r := fromDomainGroup(g)
	writeID := newWriteID()
	args := append(r.values(writeID, nil), r.ID, g.Version-1)
	return s.db.exec(ctx, lwt{
		name:    "groups.update",
		run:     func(ctx context.Context) (bool, error) { return applied(s.db.cas(ctx, groupUpdateCQL, args...)) },
		resolve: s.resolveWrite(g.ID, writeID),
	})
}

// Discard deletes a group that is still pending.
func (s *Groups) Discard(ctx context.Context, id string) error {
	_, err := s.db.exec(ctx, lwt{
		name: "groups.discard",
		run:  func(ctx context.Context) (bool, error) { return applied(s.db.cas(ctx, groupDiscardCQL, id)) },
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := s.get(ctx, id, s.db.Serial)
			if err != nil {
				return false, false, err
			}
			pending := found && r.Status == string(domain.StatusPending)
			return !pending, pending, nil
		},
	})
	return err
}

// resolveWrite settles an ambiguous write by its tag: the row holds our
// write, or it does not (and then running it again is safe: its condition
// decides again).
func (s *Groups) resolveWrite(id, writeID string) func(ctx context.Context) (bool, bool, error) {
	return func(ctx context.Context) (bool, bool, error) {
		r, found, err := s.get(ctx, id, s.db.Serial)
		if err != nil {
			return false, false, err
		}
		if found && r.WriteID == writeID {
			return true, false, nil
		}
		return false, true, nil
	}
}

// Get reads a group.
func (s *Groups) Get(ctx context.Context, id string) (domain.Group, error) {
	return s.getDomain(ctx, id, 0)
}

// GetSerial reads a group at SERIAL.
func (s *Groups) GetSerial(ctx context.Context, id string) (domain.Group, error) {
	return s.getDomain(ctx, id, s.db.Serial)
}

func (s *Groups) getDomain(ctx context.Context, id string, cl gocql.Consistency) (domain.Group, error) {
	r, found, err := s.get(ctx, id, cl)
	if err != nil {
		return domain.Group{}, dbErr("groups.get", err)
	}
	if !found {
		return domain.Group{}, domain.ErrNotFound
	}
	return r.toDomain(), nil
}

// get reads a row at cl (0: the session's default).
func (s *Groups) get(ctx context.Context, id string, cl gocql.Consistency) (groupRow, bool, error) {
	var r groupRow
	q := s.db.Session.ContextQuery(ctx, groupSelectCQL, nil).Bind(id)
	if cl != 0 {
		q = q.Consistency(cl)
	}
	err := q.GetRelease(&r)
	if errors.Is(err, gocql.ErrNotFound) {
		return groupRow{}, false, nil
	}
	return r, err == nil, err
}
