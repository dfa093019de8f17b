package handlers

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/domain/moderation"
)

// TestCursorsRefuseTheZeroTime: a cursor is opaque, but a caller can
// make one. Its time at exactly 0001-01-01 decoded to Go's zero time,
// which the driver sends as an empty value, so the slice's bound was no
// time at all. Every list's cursor refuses it as bad_cursor, and still
// takes the millisecond after it.
func TestCursorsRefuseTheZeroTime(t *testing.T) {
	t.Parallel()
	zero := strconv.FormatInt(time.Time{}.UnixMilli(), 10)
	after := strconv.FormatInt(time.Time{}.UnixMilli()+1, 10)
	day := strconv.FormatInt(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC).UnixMilli(), 10)
	item, user := domain.NewID(domain.ContentIDPrefix), domain.NewID(domain.UserIDPrefix)
	decoders := []struct {
		name   string
		decode func(string) error
		fields func(at string) []string
	}{
		{"library, newest first", func(s string) error { _, err := library.DecodeCursor(s); return err },
			func(at string) []string { return []string{at, item} }},
		{"library, oldest first (its end)", func(s string) error { _, err := library.DecodeCursor(s); return err },
			func(at string) []string { return []string{"o", at, at, item} }},
		{"suspended list", func(s string) error { _, err := moderation.DecodeCursor(s); return err },
			func(at string) []string { return []string{"2026-12-01", at, user} }},
		{"moderation history", func(s string) error { _, err := moderation.DecodeHistoryCursor(s); return err },
			func(at string) []string { return []string{at, string(moderation.EventSuspended)} }},
		{"an account's audit", func(s string) error { _, err := domain.DecodeAuditCursor(s); return err },
			func(at string) []string { return []string{at, "1", string(domain.AuditUnsuspended)} }},
		{"the admins' audit", func(s string) error { _, err := domain.DecodeGlobalAuditCursor(s); return err },
			func(at string) []string { return []string{day, at, user, "1", string(domain.AuditUnsuspended)} }},
	}
	for _, d := range decoders {
		if err := d.decode(domain.EncodeCursor(d.fields(zero)...)); !errors.Is(err, domain.ErrBadCursor) {
			t.Errorf("%s: a cursor at the zero time answered %v, want bad_cursor", d.name, err)
		}
		if d.name == "library, oldest first (its end)" {
			continue // its item must be before its end: no pair of one time passes
		}
		if err := d.decode(domain.EncodeCursor(d.fields(after)...)); err != nil {
			t.Errorf("%s: a cursor a millisecond after the zero time answered %v", d.name, err)
		}
	}
}
