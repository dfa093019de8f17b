package moderation

import (
	"testing"
	"time"
)

// FuzzSuspensionCursor: every cursor that decodes survives a round trip.
func FuzzSuspensionCursor(f *testing.F) {
	f.Add(Cursor{Bucket: "2026-11-01", SuspendedAt: time.UnixMilli(1763769600000), UserID: "u_aaaaaaaaaaaaaaaaaaaaaaaaaa"}.Encode())
	for _, s := range []string{"", "bogus", "MjAyNi0xMS0wMXwxfHVfYQ", "!!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeCursor(s)
		if err != nil {
			return
		}
		again, err := DecodeCursor(c.Encode())
		if err != nil || *again != *c {
			t.Fatalf("%q: %+v does not survive a round trip (%+v, %v)", s, c, again, err)
		}
	})
}
