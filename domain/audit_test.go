package domain

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAuditCursorRoundTrip(t *testing.T) {
	for _, c := range []AuditCursor{
		{At: time.UnixMilli(1_780_000_000_123).UTC(), Version: 12, Action: AuditEmailChanged},
		{At: time.UnixMilli(1_780_000_000_123).UTC(), Version: 0, Action: AuditRecoveryCodeUsed}, // written at version 0
	} {
		got, err := DecodeAuditCursor(c.Encode())
		if err != nil || *got != c {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", c, got, err)
		}
	}
	for _, bad := range []string{"", "x", EncodeCursor("1", "2"), EncodeCursor("a", "2", "deleted"),
		EncodeCursor("1", "0", "deleted"), EncodeCursor("1", "x", "deleted"), EncodeCursor("1", "2", "password_changed")} {
		if _, err := DecodeAuditCursor(bad); err != ErrBadCursor {
			t.Errorf("DecodeAuditCursor(%q): %v, want ErrBadCursor", bad, err)
		}
	}
}

func TestOriginOfCutsTheUserAgentOnACharacter(t *testing.T) {
	long := strings.Repeat("a", MaxUserAgent-1) + "é" + "tail"
	o := OriginOf("203.0.113.9", long)
	if len(o.UserAgent) > MaxUserAgent || !utf8.ValidString(o.UserAgent) || o.UserAgent != strings.Repeat("a", MaxUserAgent-1) {
		t.Fatalf("cut to %d bytes: %q", len(o.UserAgent), o.UserAgent)
	}
	if o := OriginOf("", "curl/8"); o.UserAgent != "curl/8" {
		t.Fatalf("short agent changed: %q", o.UserAgent)
	}
}
