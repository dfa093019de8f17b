package repository

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/library"
)

// Contents keeps content rows (LWT-managed, like accounts).
type Contents struct {
	rows casTable[contentRow, *contentRow]
}

var _ library.ContentStore = (*Contents)(nil)

// NewContents returns the content store.
func NewContents(db *DB) *Contents {
	return &Contents{rows: casTable[contentRow, *contentRow]{db: db, name: "content", selectCQL: contentSelectCQL,
		writeID: func(r contentRow) string { return r.WriteID }, version: func(r contentRow) int { return r.Version }, status: func(contentRow) string { return "" }}}
}

// columns are contentSelectCQL's.
func (r *contentRow) columns() []any {
	return []any{&r.ID, &r.Name, &r.Description, &r.Visibility, &r.Link, &r.CreatedBy, &r.CreatedAt, &r.LastModified,
		&r.Deleted, &r.Members, &r.Managers, &r.Version, &r.WriteID, &r.PendingPrincipal, &r.PendingRole, &r.Lean, &r.Placing, &r.FencedBefore,
		&r.PendingAskedBy, &r.PendingThrough, &r.PendingPriorRole, &r.TakenBack}
}

type contentRow struct {
	ID           string    `db:"id"`
	Name         string    `db:"name"`
	Description  string    `db:"description"`
	Visibility   string    `db:"visibility"`
	Link         string    `db:"link"`
	CreatedBy    string    `db:"created_by"`
	CreatedAt    time.Time `db:"created_at"`
	LastModified time.Time `db:"last_modified"`
	Deleted      bool      `db:"deleted"`
	Members      int       `db:"members"`
	Managers     int       `db:"managers"`
	Version      int       `db:"version"`
	WriteID      string    `db:"write_id"`
	// PendingPrincipal and PendingRole are the share or unshare recorded
	// at Version and not yet finished (no principal: none; no role: an
	// unshare).
	PendingPrincipal string `db:"pending_principal"`
	PendingRole      string `db:"pending_role"`
	// PendingAskedBy, PendingThrough and PendingPriorRole: a pending share
	// whose caller managed the item only through a group names the caller,
	// the group and the principal's role before it (migration 039; null
	// otherwise, and on rows from before).
	PendingAskedBy   string `db:"pending_asked_by"`
	PendingThrough   string `db:"pending_through"`
	PendingPriorRole string `db:"pending_prior_role"`
	// Lean: the item's library rows are lean (null, before the column:
	// not lean, so every page checks them).
	Lean bool `db:"lean"`
	// Placing: the update at Version has a provisional last_modified, its
	// place still to be taken (null, before the column: placed).
	Placing bool `db:"placing"`
	// FencedBefore: every outbox mark a fence of the item took was made
	// before it (null, before the column, or never fenced since: none).
	FencedBefore time.Time `db:"fenced_before"`
	// TakenBack: the version of the latest share taken back because its
	// caller left the group that let him share (migration 042; null,
	// before the column or before any such take-back: none).
	TakenBack int `db:"taken_back"`
}

func (r contentRow) toDomain() library.Content {
	return library.Content{ID: r.ID, Name: r.Name, Description: r.Description, Visibility: library.Visibility(r.Visibility),
		Link: r.Link, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), LastModified: r.LastModified.UTC(),
		Deleted: r.Deleted, Members: r.Members, Managers: r.Managers, Version: r.Version, Pending: r.pending(), Lean: r.Lean, Placing: r.Placing,
		FencedBefore: r.FencedBefore.UTC(), TakenBack: r.TakenBack}
}

func (r contentRow) pending() *library.MemberChange {
	if r.PendingPrincipal == "" {
		return nil
	}
	return &library.MemberChange{PrincipalID: r.PendingPrincipal, Role: r.PendingRole,
		AskedBy: r.PendingAskedBy, Through: r.PendingThrough, PriorRole: r.PendingPriorRole}
}

const (
	contentColumns                  = `name = ?, description = ?, visibility = ?, link = ?, created_by = ?, created_at = ?, last_modified = ?, deleted = ?, members = ?, managers = ?, version = ?, write_id = ?, pending_principal = ?, pending_role = ?, lean = ?, placing = ?, fenced_before = ?, pending_asked_by = ?, pending_through = ?, pending_prior_role = ?, taken_back = ?`
	contentInsertCQL conditionalCQL = `INSERT INTO content (id, name, description, visibility, link, created_by, created_at, last_modified, deleted, members, managers, version, write_id, pending_principal, pending_role, lean, placing, fenced_before, pending_asked_by, pending_through, pending_prior_role, taken_back) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	contentUpdateCQL conditionalCQL = `UPDATE content SET ` + contentColumns + ` WHERE id = ? IF version = ?`
	// contentTakeBackCQL is contentUpdateCQL while the change it takes
	// back is still pending: a clear leaves the version as it was.
	contentTakeBackCQL conditionalCQL = `UPDATE content SET ` + contentColumns + ` WHERE id = ? IF version = ? AND pending_principal = ?`
	// contentTakeBackAskedCQL is contentTakeBackCQL while the share still
	// names its caller: a vouch leaves the version as it was.
	contentTakeBackAskedCQL conditionalCQL = `UPDATE content SET ` + contentColumns + ` WHERE id = ? IF version = ? AND pending_principal = ? AND pending_asked_by = ?`
	// contentVouchCQL, as contentClearCQL, leaves write_id as it is.
	contentVouchCQL conditionalCQL = `UPDATE content SET pending_asked_by = null, pending_through = null, pending_prior_role = null WHERE id = ? IF version = ? AND pending_principal = ? AND pending_asked_by = ?`
	// contentClearCQL leaves write_id as it is: the tag stays the one of
	// the write that took the version (the share or unshare), which reads
	// it back to settle its own lost answer (casTable.write).
	contentClearCQL  conditionalCQL = `UPDATE content SET pending_principal = null, pending_role = null, pending_asked_by = null, pending_through = null, pending_prior_role = null, lean = ? WHERE id = ? IF version = ?`
	contentSelectCQL readCQL        = `SELECT id, name, description, visibility, link, created_by, created_at, last_modified, deleted, members, managers, version, write_id, pending_principal, pending_role, lean, placing, fenced_before, pending_asked_by, pending_through, pending_prior_role, taken_back FROM content WHERE id = ?`
	// contentStatesCQL reads several items' partitions in one statement:
	// the coordinator reads each (on its replicas) and answers them
	// together, one round trip for the page's checks.
	contentStatesCQL readCQL = `SELECT id, name, visibility, last_modified, deleted, pending_principal, pending_role FROM content WHERE id IN ?`
)

// stateRow is the part of a content row a library page checks: what its
// rows show, and the removal it records (a pending change with no role),
// whose library must no longer show it.
type stateRow struct {
	ID               string    `db:"id"`
	Name             string    `db:"name"`
	Visibility       string    `db:"visibility"`
	LastModified     time.Time `db:"last_modified"`
	Deleted          bool      `db:"deleted"`
	PendingPrincipal string    `db:"pending_principal"`
	PendingRole      string    `db:"pending_role"`
}

// columns are contentStatesCQL's.
func (r *stateRow) columns() []any {
	return []any{&r.ID, &r.Name, &r.Visibility, &r.LastModified, &r.Deleted, &r.PendingPrincipal, &r.PendingRole}
}

// removing is the principal whose removal the row records, if any.
func (r stateRow) removing() string {
	if r.PendingRole != "" {
		return "" // a share, or nothing pending
	}
	return r.PendingPrincipal
}

func contentValues(c library.Content, writeID string) []any {
	var principal, role, askedBy, through, prior any // null: nothing pending, or not named
	if pc := c.Pending; pc != nil {
		principal, role = pc.PrincipalID, pc.Role
		if pc.AskedBy != "" {
			askedBy, through, prior = pc.AskedBy, pc.Through, pc.PriorRole
		}
	}
	return []any{c.Name, c.Description, string(c.Visibility), c.Link, c.CreatedBy, c.CreatedAt, c.LastModified,
		c.Deleted, c.Members, c.Managers, c.Version, writeID, principal, role, c.Lean, c.Placing, c.FencedBefore, askedBy, through, prior, c.TakenBack}
}

// Create inserts an item IF NOT EXISTS; false when a row has its id. Ids
// are fresh, so that row is the outbox worker's fence of a creation it
// found missing (library.Service.fence), and the creation never applies.
func (s *Contents) Create(ctx context.Context, c library.Content) (bool, error) {
	writeID := newWriteID()
	return s.rows.write(ctx, "create", contentInsertCQL, c.ID, writeID, 0, append([]any{c.ID}, contentValues(c, writeID)...)...)
}

// Update writes c if the stored version is c.Version-1.
func (s *Contents) Update(ctx context.Context, c library.Content) (bool, error) {
	writeID := newWriteID()
	return s.rows.write(ctx, "update", contentUpdateCQL, c.ID, writeID, c.Version, append(contentValues(c, writeID), c.ID, c.Version-1)...)
}

// TakeBack writes c if the stored version is c.Version-1 and principalID's
// change is still pending there (not cleared meanwhile: a clear leaves the
// version as it was). A lost answer is settled as Update's: our tag, or
// another write at c.Version; a cleared row runs it again, and its
// condition says no.
func (s *Contents) TakeBack(ctx context.Context, c library.Content, principalID, askedBy string) (bool, error) {
	writeID := newWriteID()
	if askedBy != "" {
		return s.rows.write(ctx, "update", contentTakeBackAskedCQL, c.ID, writeID, c.Version, append(contentValues(c, writeID), c.ID, c.Version-1, principalID, askedBy)...)
	}
	return s.rows.write(ctx, "update", contentTakeBackCQL, c.ID, writeID, c.Version, append(contentValues(c, writeID), c.ID, c.Version-1, principalID)...)
}

// Vouch records that the share pending in c passed its caller's check:
// it names nobody any more, if the row is still at c.Version with that
// share, so named, pending. Like ClearPending it carries no tag of its
// own and leaves the row's, so a lost answer is settled by reading the
// row: at c.Version, the share pending and named by nobody, it is
// vouched (every vouch of it writes the same); cleared there, or past
// c.Version (cleared or taken back, then perhaps changed), it is not, and
// the caller reads the row for what became of it.
func (s *Contents) Vouch(ctx context.Context, c library.Content) (bool, error) {
	if c.Pending == nil || c.Pending.AskedBy == "" {
		return false, nil
	}
	t, pc := s.rows, *c.Pending
	return t.db.exec(ctx, lwt{
		name: "content.vouch",
		run: func(ctx context.Context) (bool, error) {
			return t.db.cas(ctx, nil, contentVouchCQL, c.ID, c.Version, pc.PrincipalID, pc.AskedBy)
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := t.get(ctx, c.ID, t.db.Serial)
			switch {
			case err != nil:
				return false, false, err
			case found && r.Version == c.Version && r.PendingPrincipal == pc.PrincipalID && r.PendingAskedBy == "":
				return true, false, nil // vouched: by this write or another one, the same
			case found && (r.Version > c.Version || (r.Version == c.Version && r.PendingPrincipal == "")):
				return false, false, nil // cleared or taken back by someone else
			}
			return false, true, nil
		},
	})
}

// ClearPending clears the pending share or unshare if the row is still at
// c.Version, the version that recorded it, and writes c.Lean (a share
// that took the item past its lean rows ends them here). It carries no
// tag of its own and leaves the row's: the share's or unshare's tag
// stays with the version it took, so that write's lost answer is settled
// as applied however often the change is cleared. Its outcome is what
// matters, not whose write it was: every clear at a version writes the
// same (every finisher decides lean from the same row), so a lost answer
// is settled by reading the row: at c.Version with nothing pending, it is
// cleared; past c.Version, the change was cleared or taken back (a new
// one is recorded only on a row with nothing pending), not by this
// write. A late or repeated clear is harmless.
func (s *Contents) ClearPending(ctx context.Context, c library.Content) (bool, error) {
	t := s.rows
	return t.db.exec(ctx, lwt{
		name: "content.clear",
		run: func(ctx context.Context) (bool, error) {
			return t.db.cas(ctx, nil, contentClearCQL, c.Lean, c.ID, c.Version)
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := t.get(ctx, c.ID, t.db.Serial)
			switch {
			case err != nil:
				return false, false, err
			case found && r.Version == c.Version && r.PendingPrincipal == "":
				return true, false, nil // cleared: by this write or another one, the same
			case found && r.Version > c.Version:
				return false, false, nil // moved on: cleared or taken back by someone else
			}
			return false, true, nil
		},
	})
}

// Get reads an item.
func (s *Contents) Get(ctx context.Context, id string) (library.Content, error) {
	r, err := s.rows.read(ctx, id, false)
	return r.toDomain(), err
}

// GetSerial reads an item at SERIAL.
func (s *Contents) GetSerial(ctx context.Context, id string) (library.Content, error) {
	r, err := s.rows.read(ctx, id, true)
	return r.toDomain(), err
}

// States reads how these items stand now (one read with IN).
func (s *Contents) States(ctx context.Context, ids []string) (map[string]library.ItemState, error) {
	rows, err := selectRows[stateRow](s.rows.db.query(ctx, 0, contentStatesCQL, ids))
	if err != nil {
		return nil, dbErr("content.states", err)
	}
	out := make(map[string]library.ItemState, len(rows))
	for _, r := range rows {
		out[r.ID] = library.ItemState{ID: r.ID, Name: r.Name, Visibility: library.Visibility(r.Visibility),
			LastModified: r.LastModified.UTC(), Deleted: r.Deleted, Removing: r.removing()}
	}
	return out, nil
}

// ContentMembers keeps who each item is shared with, at the item's version.
type ContentMembers struct {
	db *DB
}

var _ library.MemberStore = (*ContentMembers)(nil)

// NewContentMembers returns the member store.
func NewContentMembers(db *DB) *ContentMembers { return &ContentMembers{db: db} }

const (
	contentMemberPutCQL    versionedCQL = `INSERT INTO content_members (content_id, principal_id, role) VALUES (?, ?, ?) USING TIMESTAMP ?`
	contentMemberDeleteCQL versionedCQL = `DELETE FROM content_members USING TIMESTAMP ? WHERE content_id = ? AND principal_id = ?`
	contentMemberFindCQL   readCQL      = `SELECT principal_id, role FROM content_members WHERE content_id = ? AND principal_id IN ?`
	contentMemberPageCQL   readCQL      = `SELECT principal_id, role FROM content_members WHERE content_id = ? AND principal_id > ? LIMIT ?`
	contentMemberGroupsCQL readCQL      = `SELECT principal_id, role FROM content_members WHERE content_id = ? AND principal_id > ? AND principal_id < ?`
)

// groupIDsFrom and groupIDsTo bound the group ids (domain.GroupIDPrefix
// and the next prefix): an item's members that are groups are one slice
// of its partition, apart from its users ("u_").
const groupIDsFrom, groupIDsTo = domain.GroupIDPrefix, "g`"

type contentMemberRow struct {
	PrincipalID string `db:"principal_id"`
	Role        string `db:"role"`
}

// columns are contentMemberFindCQL's, contentMemberPageCQL's and
// contentMemberGroupsCQL's.
func (r *contentMemberRow) columns() []any { return []any{&r.PrincipalID, &r.Role} }

// Put writes a member at version.
func (s *ContentMembers) Put(ctx context.Context, contentID string, m library.Member, version int) error {
	return s.db.write(ctx, "content_members.put", contentMemberPutCQL, contentID, m.PrincipalID, m.Role, int64(version))
}

// Delete removes a member at version.
func (s *ContentMembers) Delete(ctx context.Context, contentID, principalID string, version int) error {
	return s.db.write(ctx, "content_members.delete", contentMemberDeleteCQL, int64(version), contentID, principalID)
}

// Find returns the members among principalIDs (one read).
func (s *ContentMembers) Find(ctx context.Context, contentID string, principalIDs []string) ([]library.Member, error) {
	rows, err := selectRows[contentMemberRow](s.db.query(ctx, 0, contentMemberFindCQL, contentID, principalIDs))
	if err != nil {
		return nil, dbErr("content_members.find", err)
	}
	return toContentMembers(rows), nil
}

// Groups returns the members that are groups (one slice).
func (s *ContentMembers) Groups(ctx context.Context, contentID string) ([]library.Member, error) {
	rows, err := selectRows[contentMemberRow](s.db.query(ctx, 0, contentMemberGroupsCQL, contentID, groupIDsFrom, groupIDsTo))
	if err != nil {
		return nil, dbErr("content_members.groups", err)
	}
	return toContentMembers(rows), nil
}

// Page lists members after a principal id.
func (s *ContentMembers) Page(ctx context.Context, contentID, after string, limit int) ([]library.Member, error) {
	rows, err := selectRows[contentMemberRow](s.db.query(ctx, 0, contentMemberPageCQL, contentID, after, limit))
	if err != nil {
		return nil, dbErr("content_members.page", err)
	}
	return toContentMembers(rows), nil
}

func toContentMembers(rows []contentMemberRow) []library.Member {
	out := make([]library.Member, len(rows))
	for i, r := range rows {
		out[i] = library.Member{PrincipalID: r.PrincipalID, Role: r.Role}
	}
	return out
}
