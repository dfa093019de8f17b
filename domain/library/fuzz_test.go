package library

import (
	"testing"
	"time"

	"shelf/domain"
)

// FuzzLibraryCursor: every cursor that decodes survives a round trip,
// order and run's end included.
func FuzzLibraryCursor(f *testing.F) {
	at := time.UnixMilli(1763769600000)
	f.Add(Cursor{LastModified: at, ContentID: "c_aaaaaaaaaaaaaaaaaaaaaaaaaa"}.Encode())
	f.Add(Cursor{Order: OldestFirst, Until: at.Add(time.Hour), LastModified: at, ContentID: "c_aaaaaaaaaaaaaaaaaaaaaaaaaa"}.Encode())
	for _, s := range []string{"", "bogus", "MXxjX2E", "%%%", domain.EncodeCursor("o", "5", "5", "c_aaaaaaaaaaaaaaaaaaaaaaaaaa")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(s)
		if err != nil {
			return
		}
		again, err := DecodeCursor(c.Encode())
		if err != nil || again.Order != c.Order || !again.Until.Equal(c.Until) || !again.LastModified.Equal(c.LastModified) || again.ContentID != c.ContentID {
			t.Fatalf("%q: %+v does not survive a round trip (%+v, %v)", s, c, again, err)
		}
		if c.Order == OldestFirst && !c.LastModified.Before(c.Until) {
			t.Fatalf("%q: an oldest-first cursor past its run's end decoded: %+v", s, c)
		}
	})
}

// TestCursorsCarryTheirOrder: newest-first cursors read as they did
// before there was an order (those already handed out still work);
// oldest-first ones carry the run's end, and one whose item is not before
// that end was not made here.
func TestCursorsCarryTheirOrder(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1763769600000).UTC()
	id := "c_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	before := domain.EncodeCursor("1763769600000", id) // a cursor of the release before
	if c, err := DecodeCursor(before); err != nil || c.Order != NewestFirst || !c.LastModified.Equal(at) || c.ContentID != id {
		t.Fatalf("an older newest-first cursor reads %+v, %v", c, err)
	}
	if got := (Cursor{Order: NewestFirst, LastModified: at, ContentID: id}).Encode(); got != before {
		t.Fatalf("newest-first cursors changed: %q, was %q", got, before)
	}
	old := Cursor{Order: OldestFirst, Until: at.Add(time.Millisecond), LastModified: at, ContentID: id}
	if c, err := DecodeCursor(old.Encode()); err != nil || *c != old {
		t.Fatalf("an oldest-first cursor reads %+v, %v; made from %+v", c, err, old)
	}
	for name, s := range map[string]string{
		"item at the run's end": domain.EncodeCursor("o", "1763769600000", "1763769600000", id),
		"item after it":         domain.EncodeCursor("o", "1763769600000", "1763769600001", id),
		"another tag":           domain.EncodeCursor("x", "1763769600001", "1763769600000", id),
		"end not a number":      domain.EncodeCursor("o", "soon", "1763769600000", id),
		"three fields":          domain.EncodeCursor("o", "1763769600000", id),
	} {
		if c, err := DecodeCursor(s); err == nil {
			t.Errorf("%s: decoded %+v", name, c)
		}
	}
}
