package repository

import (
	"context"
	"time"

	"shelf/domain/library"
)

// Libraries keeps library_by_principal and its membership index
// (library_index). Every write carries the item's version as its
// timestamp: an older change never overwrites or resurrects a newer one.
type Libraries struct {
	db *DB
}

var _ library.EntryStore = (*Libraries)(nil)

// NewLibraries returns the library store.
func NewLibraries(db *DB) *Libraries { return &Libraries{db: db} }

const (
	libInsertCQL     versionedCQL = `INSERT INTO library_by_principal (principal_id, bucket, last_modified, content_id, name, visibility, version, lean) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	libDeleteCQL     versionedCQL = `DELETE FROM library_by_principal USING TIMESTAMP ? WHERE principal_id = ? AND bucket = ? AND last_modified = ? AND content_id = ?`
	libSliceCQL      readCQL      = `SELECT last_modified, content_id, name, visibility, version, lean FROM library_by_principal WHERE principal_id = ? AND bucket = ? LIMIT ?`
	libSliceAfterCQL readCQL      = `SELECT last_modified, content_id, name, visibility, version, lean FROM library_by_principal WHERE principal_id = ? AND bucket = ? AND (last_modified, content_id) < (?, ?) LIMIT ?`
	// The same slices the other way: Cassandra reads a partition in reverse
	// clustering order from the same index blocks, no table of its own.
	libSliceAscCQL      readCQL      = `SELECT last_modified, content_id, name, visibility, version, lean FROM library_by_principal WHERE principal_id = ? AND bucket = ? ORDER BY last_modified ASC, content_id ASC LIMIT ?`
	libSliceAscAfterCQL readCQL      = `SELECT last_modified, content_id, name, visibility, version, lean FROM library_by_principal WHERE principal_id = ? AND bucket = ? AND (last_modified, content_id) > (?, ?) ORDER BY last_modified ASC, content_id ASC LIMIT ?`
	indexPutCQL         versionedCQL = `INSERT INTO library_index (principal_id, content_id, role, version, last_modified, name, visibility, lean) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	indexDeleteCQL      versionedCQL = `DELETE FROM library_index USING TIMESTAMP ? WHERE principal_id = ? AND content_id = ?`
	indexSelectCQL      readCQL      = `SELECT content_id, role, version, last_modified, name, visibility, lean FROM library_index WHERE principal_id = ? AND content_id IN ?`
	indexPageCQL        readCQL      = `SELECT content_id, role, version, last_modified, name, visibility, lean FROM library_index WHERE principal_id = ? AND content_id > ? LIMIT ?`
	indexCountCQL       scanCQL      = `SELECT COUNT(*) FROM library_index WHERE principal_id = ?`
)

type libRow struct {
	LastModified time.Time `db:"last_modified"`
	ContentID    string    `db:"content_id"`
	Name         string    `db:"name"`
	Visibility   string    `db:"visibility"`
	Version      int       `db:"version"`
	Lean         bool      `db:"lean"`
}

// columns are the library slices'.
func (r *libRow) columns() []any {
	return []any{&r.LastModified, &r.ContentID, &r.Name, &r.Visibility, &r.Version, &r.Lean}
}

// columns are indexSelectCQL's and indexPageCQL's.
func (r *indexRow) columns() []any {
	return []any{&r.ContentID, &r.Role, &r.Version, &r.LastModified, &r.Name, &r.Visibility, &r.Lean}
}

type indexRow struct {
	ContentID    string    `db:"content_id"`
	Role         string    `db:"role"`
	Version      int       `db:"version"`
	LastModified time.Time `db:"last_modified"`
	Name         string    `db:"name"`
	Visibility   string    `db:"visibility"`
	Lean         bool      `db:"lean"`
}

func (r indexRow) toDomain(principalID string) library.Entry {
	return library.Entry{PrincipalID: principalID, ContentID: r.ContentID, Role: r.Role, Name: r.Name,
		Visibility: library.Visibility(r.Visibility), LastModified: r.LastModified.UTC(), Version: r.Version, Lean: r.Lean}
}

// Apply writes the index entry first, then per bucket one single-partition
// unlogged batch: delete prev's row, insert e's. (Index first: a row
// without an index entry is then always a ghost, safe to delete.) A row
// whose key does not change is only rewritten: deleting and inserting one
// key at one timestamp would lose the insert.
func (l *Libraries) Apply(ctx context.Context, e library.Entry, prev *library.Entry) error {
	ts := int64(e.Version)
	if err := l.db.write(ctx, "library_index.put", indexPutCQL, e.PrincipalID, e.ContentID, e.Role, e.Version, e.LastModified, e.Name, string(e.Visibility), e.Lean, ts); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, b := range library.BucketsFor(e.Visibility) {
		want[b] = true
	}
	had := map[string]bool{}
	if prev != nil {
		for _, b := range library.BucketsFor(prev.Visibility) {
			had[b] = true
		}
	}
	// The buckets are independent partitions: their batches go out at once.
	var writes []func(ctx context.Context) error
	for _, b := range library.Buckets() {
		if !want[b] && !had[b] {
			continue
		}
		writes = append(writes, func(ctx context.Context) error {
			batch := l.db.newBatch(ctx)
			if had[b] && !(want[b] && prev.LastModified.Equal(e.LastModified)) {
				batch.add(libDeleteCQL, ts, e.PrincipalID, b, prev.LastModified, e.ContentID)
			}
			if want[b] {
				batch.add(libInsertCQL, e.PrincipalID, b, e.LastModified, e.ContentID, e.Name, string(e.Visibility), e.Version, e.Lean, ts)
			}
			return l.db.batch("library.batch", batch)
		})
	}
	return all(ctx, writes)
}

// Remove deletes the index entry first, then prev's rows.
func (l *Libraries) Remove(ctx context.Context, principalID, contentID string, prev *library.Entry, version int) error {
	ts := int64(version)
	if err := l.db.write(ctx, "library_index.delete", indexDeleteCQL, ts, principalID, contentID); err != nil {
		return err
	}
	if prev == nil {
		return nil // the rows left, if any, have no index entry: readers drop them
	}
	var writes []func(ctx context.Context) error
	for _, b := range library.BucketsFor(prev.Visibility) {
		writes = append(writes, func(ctx context.Context) error {
			return l.db.write(ctx, "library.delete", libDeleteCQL, ts, principalID, b, prev.LastModified, contentID)
		})
	}
	return all(ctx, writes)
}

// Index reads the index entries of the given items (one partition, IN).
func (l *Libraries) Index(ctx context.Context, principalID string, contentIDs []string) (map[string]library.Entry, error) {
	rows, err := selectRows[indexRow](l.db.query(ctx, 0, indexSelectCQL, principalID, contentIDs))
	if err != nil {
		return nil, dbErr("library_index.get", err)
	}
	out := make(map[string]library.Entry, len(rows))
	for _, r := range rows {
		out[r.ContentID] = r.toDomain(principalID)
	}
	return out, nil
}

// CountIndex counts a principal's index entries (one partition; the node
// pages through it).
func (l *Libraries) CountIndex(ctx context.Context, principalID string) (int, error) {
	q := l.db.scan(ctx, indexCountCQL, principalID)
	defer q.Release()
	var n int64
	if err := q.Scan(&n); err != nil {
		return 0, dbErr("library_index.count", err)
	}
	return int(n), nil
}

// IndexPage lists index entries after a content id.
func (l *Libraries) IndexPage(ctx context.Context, principalID, after string, limit int) ([]library.Entry, error) {
	rows, err := selectRows[indexRow](l.db.query(ctx, 0, indexPageCQL, principalID, after, limit))
	if err != nil {
		return nil, dbErr("library_index.page", err)
	}
	out := make([]library.Entry, len(rows))
	for i, r := range rows {
		out[i] = r.toDomain(principalID)
	}
	return out, nil
}

// Slice reads one bucket in order after the cursor: newest first in the
// clustering order, oldest first reversed.
func (l *Libraries) Slice(ctx context.Context, principalID, bucket string, order library.Order, after *library.Cursor, limit int) ([]library.Entry, error) {
	first, next := libSliceCQL, libSliceAfterCQL
	if order == library.OldestFirst {
		first, next = libSliceAscCQL, libSliceAscAfterCQL
	}
	q := l.db.query(ctx, 0, first, principalID, bucket, limit)
	if after != nil {
		q = l.db.query(ctx, 0, next, principalID, bucket, after.LastModified, after.ContentID, limit)
	}
	rows, err := selectRows[libRow](q)
	if err != nil {
		return nil, dbErr("library.slice", err)
	}
	out := make([]library.Entry, len(rows))
	for i, r := range rows {
		out[i] = library.Entry{PrincipalID: principalID, ContentID: r.ContentID, Name: r.Name,
			Visibility: library.Visibility(r.Visibility), LastModified: r.LastModified.UTC(), Version: r.Version, Lean: r.Lean}
	}
	return out, nil
}

// DeleteRow deletes one row at its own version.
func (l *Libraries) DeleteRow(ctx context.Context, bucket string, e library.Entry) error {
	return l.db.write(ctx, "library.delete", libDeleteCQL, int64(e.Version), e.PrincipalID, bucket, e.LastModified, e.ContentID)
}
