package domain

import (
	"errors"
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

// TestAnOriginsUserAgentIsText: HTTP lets a header carry bytes that are
// no UTF-8 (obs-text), and an admin's client may send such a User-Agent.
// The audit kept it as sent: the entry of an admin's list of another's
// sessions, written before the action into a text column, was refused by
// the node ("String didn't validate"), so that admin could list, revoke
// or remove nothing from that client (500); an entry a compare-and-set
// decided failed its first write and was carried in the account row as
// JSON, which replaces the bytes, so its two writes differed. The origin
// holds text: each run of bad bytes a replacement character, then cut.
func TestAnOriginsUserAgentIsText(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"curl/8 \xff\xfe", strings.Repeat("a", MaxUserAgent-1) + "\xc3", "\xe2\x82" + strings.Repeat("b", 300)} {
		o := OriginOf("203.0.113.9", agent)
		if !utf8.ValidString(o.UserAgent) || len(o.UserAgent) > MaxUserAgent {
			t.Errorf("OriginOf(%q) keeps %q (%d bytes): want valid UTF-8 of at most %d bytes", agent, o.UserAgent, len(o.UserAgent), MaxUserAgent)
		}
	}
	if o := OriginOf("", "curl/8 \xff"); o.UserAgent != "curl/8 \uFFFD" {
		t.Errorf("a bad byte reads %q, want the replacement character", o.UserAgent)
	}
}

// TestAuditCursorsRefuseAVersionTheColumnCannotHold: a cursor is opaque,
// but a caller can make one. The audit's version columns are CQL ints
// (32 bits), and the driver refuses to bind a Go int past them ("marshal
// int: value out of range"), an error no table maps, so a made-up cursor
// with version 2^31 was a 500 on either audit route. Both decoders refuse
// it as bad_cursor, and take the largest version the column holds.
func TestAuditCursorsRefuseAVersionTheColumnCannotHold(t *testing.T) {
	t.Parallel()
	at := "1780000000123"
	day := "1779926400000" // the day of at, midnight UTC
	user := NewID(UserIDPrefix)
	decoders := []struct {
		name   string
		decode func(string) error
		fields func(version string) []string
	}{
		{"an account's audit", func(s string) error { _, err := DecodeAuditCursor(s); return err },
			func(v string) []string { return []string{at, v, string(AuditSuspended)} }},
		{"the admins' audit", func(s string) error { _, err := DecodeGlobalAuditCursor(s); return err },
			func(v string) []string { return []string{day, at, user, v, string(AuditSuspended)} }},
	}
	for _, d := range decoders {
		for _, v := range []string{"2147483648", "-2147483649", "-1"} {
			if err := d.decode(EncodeCursor(d.fields(v)...)); !errors.Is(err, ErrBadCursor) {
				t.Errorf("%s: a cursor at version %s answered %v, want bad_cursor", d.name, v, err)
			}
		}
		if err := d.decode(EncodeCursor(d.fields("2147483647")...)); err != nil {
			t.Errorf("%s: a cursor at version 2^31-1 answered %v", d.name, err)
		}
	}
}
