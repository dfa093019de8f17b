package repository

import (
	"context"
	"time"

	"shelf/domain/library"
)

// Contents keeps content rows (LWT-managed, like accounts).
type Contents struct {
	rows casTable[contentRow]
}

var _ library.ContentStore = (*Contents)(nil)

// NewContents returns the content store.
func NewContents(db *DB) *Contents {
	return &Contents{rows: casTable[contentRow]{db: db, name: "content", selectCQL: contentSelectCQL,
		writeID: func(r contentRow) string { return r.WriteID }, version: func(r contentRow) int { return r.Version }, status: func(contentRow) string { return "" }}}
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
}

func (r contentRow) toDomain() library.Content {
	return library.Content{ID: r.ID, Name: r.Name, Description: r.Description, Visibility: library.Visibility(r.Visibility),
		Link: r.Link, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), LastModified: r.LastModified.UTC(),
		Deleted: r.Deleted, Members: r.Members, Managers: r.Managers, Version: r.Version}
}

const (
	contentColumns   = `name = ?, description = ?, visibility = ?, link = ?, created_by = ?, created_at = ?, last_modified = ?, deleted = ?, members = ?, managers = ?, version = ?, write_id = ?`
	contentInsertCQL = `INSERT INTO content (id, name, description, visibility, link, created_by, created_at, last_modified, deleted, members, managers, version, write_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	contentUpdateCQL = `UPDATE content SET ` + contentColumns + ` WHERE id = ? IF version = ?`
	contentSelectCQL = `SELECT id, name, description, visibility, link, created_by, created_at, last_modified, deleted, members, managers, version, write_id FROM content WHERE id = ?`
)

func contentValues(c library.Content, writeID string) []any {
	return []any{c.Name, c.Description, string(c.Visibility), c.Link, c.CreatedBy, c.CreatedAt, c.LastModified,
		c.Deleted, c.Members, c.Managers, c.Version, writeID}
}

// Create inserts a new item.
func (s *Contents) Create(ctx context.Context, c library.Content) error {
	writeID := newWriteID()
	return s.rows.create(ctx, contentInsertCQL, c.ID, writeID, append([]any{c.ID}, contentValues(c, writeID)...)...)
}

// Update writes c if the stored version is c.Version-1.
func (s *Contents) Update(ctx context.Context, c library.Content) (bool, error) {
	writeID := newWriteID()
	return s.rows.write(ctx, "update", contentUpdateCQL, c.ID, writeID, c.Version, append(contentValues(c, writeID), c.ID, c.Version-1)...)
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

// ContentMembers keeps who each item is shared with, at the item's version.
type ContentMembers struct {
	db *DB
}

var _ library.MemberStore = (*ContentMembers)(nil)

// NewContentMembers returns the member store.
func NewContentMembers(db *DB) *ContentMembers { return &ContentMembers{db: db} }

const (
	contentMemberPutCQL    = `INSERT INTO content_members (content_id, principal_id, role) VALUES (?, ?, ?) USING TIMESTAMP ?`
	contentMemberDeleteCQL = `DELETE FROM content_members USING TIMESTAMP ? WHERE content_id = ? AND principal_id = ?`
	contentMemberFindCQL   = `SELECT principal_id, role FROM content_members WHERE content_id = ? AND principal_id IN ?`
	contentMemberPageCQL   = `SELECT principal_id, role FROM content_members WHERE content_id = ? AND principal_id > ? LIMIT ?`
)

type contentMemberRow struct {
	PrincipalID string `db:"principal_id"`
	Role        string `db:"role"`
}

// Put writes a member at version.
func (s *ContentMembers) Put(ctx context.Context, contentID string, m library.Member, version int) error {
	if err := s.db.Session.ContextQuery(ctx, contentMemberPutCQL, nil).Bind(contentID, m.PrincipalID, m.Role, int64(version)).ExecRelease(); err != nil {
		return dbErr("content_members.put", err)
	}
	return nil
}

// Delete removes a member at version.
func (s *ContentMembers) Delete(ctx context.Context, contentID, principalID string, version int) error {
	if err := s.db.Session.ContextQuery(ctx, contentMemberDeleteCQL, nil).Bind(int64(version), contentID, principalID).ExecRelease(); err != nil {
		return dbErr("content_members.delete", err)
	}
	return nil
}

// Find returns the members among principalIDs (one read).
func (s *ContentMembers) Find(ctx context.Context, contentID string, principalIDs []string) ([]library.Member, error) {
	var rows []contentMemberRow
	if err := s.db.Session.ContextQuery(ctx, contentMemberFindCQL, nil).Bind(contentID, principalIDs).SelectRelease(&rows); err != nil {
		return nil, dbErr("content_members.find", err)
	}
	return toContentMembers(rows), nil
}

// Page lists members after a principal id.
func (s *ContentMembers) Page(ctx context.Context, contentID, after string, limit int) ([]library.Member, error) {
	var rows []contentMemberRow
	if err := s.db.Session.ContextQuery(ctx, contentMemberPageCQL, nil).Bind(contentID, after, limit).SelectRelease(&rows); err != nil {
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
