package domain

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// LibraryEntry is one item in one principal's library, as of a version:
// what its rows show, and what the membership index says.
type LibraryEntry struct {
	PrincipalID  string
	ContentID    string
	Role         string
	Name         string
	Visibility   Visibility
	LastModified time.Time
	Version      int
}

// entryOf is c as principal's library shows it.
func entryOf(c Content, principalID, role string) LibraryEntry {
	return LibraryEntry{PrincipalID: principalID, ContentID: c.ID, Role: role, Name: c.Name,
		Visibility: c.Visibility, LastModified: c.LastModified, Version: c.Version}
}

// LibraryCursor is a position in a library: the last item shown.
type LibraryCursor struct {
	LastModified time.Time
	ContentID    string
}

// LibraryStore keeps the libraries and their membership index. Every write
// carries the item's version as its timestamp.
type LibraryStore interface {
	// Apply writes e into its principal's library: per bucket one
	// single-partition batch (delete prev's row, insert e's), then the
	// index entry. prev is what the library held before, if known.
	Apply(ctx context.Context, e LibraryEntry, prev *LibraryEntry) error
	// Remove deletes the item from the principal's library at version:
	// the index entry and prev's rows.
	Remove(ctx context.Context, principalID, contentID string, prev *LibraryEntry, version int) error
	// Index reads the index entries of these items (one partition, IN).
	Index(ctx context.Context, principalID string, contentIDs []string) (map[string]LibraryEntry, error)
	// IndexPage lists a principal's index entries after content id `after`.
	IndexPage(ctx context.Context, principalID, after string, limit int) ([]LibraryEntry, error)
	// Slice reads up to limit rows of one bucket, newest first, after the cursor.
	Slice(ctx context.Context, principalID, bucket string, after *LibraryCursor, limit int) ([]LibraryEntry, error)
	// DeleteRow deletes one row (a stale duplicate or a ghost) at its version.
	DeleteRow(ctx context.Context, bucket string, e LibraryEntry) error
}

// Outbox records items whose libraries may be behind (DESIGN.md: fan-out
// through a durable outbox).
type Outbox interface {
	// Mark records the item (and principals to purge it from) before a
	// change; the marker identifies this mark for Done.
	Mark(ctx context.Context, contentID string, purge []string) (marker int64, err error)
	// Done deletes the mark if nothing marked it again since.
	Done(ctx context.Context, contentID string, marker int64) error
	// Pending lists marks made before t.
	Pending(ctx context.Context, before time.Time, limit int) ([]OutboxEntry, error)
}

// OutboxEntry is one item waiting for its fan-out.
type OutboxEntry struct {
	ContentID string
	Purge     []string
	Marker    int64
	MarkedAt  time.Time
}

// Encode makes the opaque cursor of a library page.
func (c LibraryCursor) Encode() string {
	raw := strconv.FormatInt(c.LastModified.UnixMilli(), 10) + "|" + c.ContentID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeLibraryCursor reads a cursor from Encode.
func DecodeLibraryCursor(s string) (*LibraryCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errBadCursor
	}
	ms, id, ok := strings.Cut(string(raw), "|")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !ValidID(id, ContentIDPrefix) {
		return nil, errBadCursor
	}
	return &LibraryCursor{LastModified: time.UnixMilli(n).UTC(), ContentID: id}, nil
}
