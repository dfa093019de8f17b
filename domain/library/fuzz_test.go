package library

import (
	"testing"
	"time"
)

// FuzzLibraryCursor: every cursor that decodes survives a round trip.
func FuzzLibraryCursor(f *testing.F) {
	f.Add(Cursor{LastModified: time.UnixMilli(1763769600000), ContentID: "c_aaaaaaaaaaaaaaaaaaaaaaaaaa"}.Encode())
	for _, s := range []string{"", "bogus", "MXxjX2E", "%%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(s)
		if err != nil {
			return
		}
		again, err := DecodeCursor(c.Encode())
		if err != nil || !again.LastModified.Equal(c.LastModified) || again.ContentID != c.ContentID {
			t.Fatalf("%q: %+v does not survive a round trip (%+v, %v)", s, c, again, err)
		}
	})
}
