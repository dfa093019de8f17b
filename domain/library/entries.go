package library

import (
	"strconv"
	"time"

	"shelf/domain"
)

// Entry is one item in one principal's library, as of a version:
// what its rows show, and what the membership index says.
type Entry struct {
	PrincipalID  string
	ContentID    string
	Role         string
	Name         string
	Visibility   Visibility
	LastModified time.Time
	Version      int
}

// entryOf is c as principal's library shows it.
func entryOf(c Content, principalID, role string) Entry {
	return Entry{PrincipalID: principalID, ContentID: c.ID, Role: role, Name: c.Name,
		Visibility: c.Visibility, LastModified: c.LastModified, Version: c.Version}
}

// Cursor is a position in a library: the last item shown.
type Cursor struct {
	LastModified time.Time
	ContentID    string
}

// Encode makes the opaque cursor of a library page.
func (c Cursor) Encode() string {
	return domain.EncodeCursor(strconv.FormatInt(c.LastModified.UnixMilli(), 10), c.ContentID)
}

// cursorOf is the position of e in its library.
func cursorOf(e Entry) string {
	return Cursor{LastModified: e.LastModified, ContentID: e.ContentID}.Encode()
}

// DecodeCursor reads a cursor from Encode.
func DecodeCursor(s string) (*Cursor, error) {
	f, err := domain.DecodeCursor(s, 2)
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || !domain.ValidID(f[1], domain.ContentIDPrefix) {
		return nil, domain.ErrBadCursor
	}
	return &Cursor{LastModified: time.UnixMilli(n).UTC(), ContentID: f[1]}, nil
}
