package domain

import (
	"errors"
	"strconv"
	"testing"
)

func TestPageOf(t *testing.T) {
	t.Parallel()
	cursor := func(n int) string { return strconv.Itoa(n) }
	if p := PageOf([]int{1, 2, 3}, 3, cursor); len(p.Items) != 3 || p.Next != "" {
		t.Fatalf("limit items read: %+v, want all and no cursor", p)
	}
	if p := PageOf([]int{1, 2, 3, 4}, 3, cursor); len(p.Items) != 3 || p.Next != "3" {
		t.Fatalf("limit+1 items read: %+v, want 3 items and the third's cursor", p)
	}
	if p := PageOf([]int(nil), 3, cursor); len(p.Items) != 0 || p.Next != "" {
		t.Fatalf("nothing read: %+v", p)
	}
}

func TestCursorCodec(t *testing.T) {
	t.Parallel()
	c := EncodeCursor("2026-11-01", "1763769600000", "u_x")
	f, err := DecodeCursor(c, 3)
	if err != nil || len(f) != 3 || f[0] != "2026-11-01" || f[1] != "1763769600000" || f[2] != "u_x" {
		t.Fatalf("round trip: %q %v", f, err)
	}
	for _, bad := range []struct {
		s string
		n int
	}{{c, 2}, {c, 4}, {"%%%", 1}, {"not base64!", 1}} {
		if _, err := DecodeCursor(bad.s, bad.n); !errors.Is(err, ErrBadCursor) {
			t.Errorf("DecodeCursor(%q, %d): %v, want ErrBadCursor", bad.s, bad.n, err)
		}
	}
}
