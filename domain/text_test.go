package domain

import (
	"strings"
	"testing"
)

func TestNormalizeUsername(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, display, key, code string
	}{
		{"Alice", "Alice", "alice", ""},
		{"a.b_c-d", "a.b_c-d", "a.b_c-d", ""},
		{"abc", "abc", "abc", ""},
		{strings.Repeat("x", 32), strings.Repeat("x", 32), strings.Repeat("x", 32), ""},
		{"ab", "", "", "format"},
		{strings.Repeat("x", 33), "", "", "format"},
		{"_abc", "", "", "format"},
		{"abc-", "", "", "format"},
		{"ab@c", "", "", "format"},
		{"Ａlice", "", "", "format"}, // fullwidth: not ASCII
		{"al\u200bice", "", "", "invalid_characters"},
		{"al\u2066ice", "", "", "invalid_characters"},
		{"al\u00adice", "", "", "invalid_characters"}, // soft hyphen
	} {
		display, key, fe := NormalizeUsername(tc.in)
		code := ""
		if fe != nil {
			code = fe.Code
			if fe.Field != "username" {
				t.Errorf("%q: field %q", tc.in, fe.Field)
			}
		}
		if display != tc.display || key != tc.key || code != tc.code {
			t.Errorf("%q: got %q %q %q, want %q %q %q", tc.in, display, key, code, tc.display, tc.key, tc.code)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, key, code string
	}{
		{"Al@Example.ORG", "al@example.org", ""},
		{" al@example.org ", "al@example.org", ""},
		{"ＡＬ@ｅｘａｍｐｌｅ.org", "al@example.org", ""},          // NFKC folds fullwidth
		{"Straße@example.org", "strasse@example.org", ""}, // full case folding
		{"STRASSE@example.org", "strasse@example.org", ""},
		{"a+tag@example.co.uk", "a+tag@example.co.uk", ""},
		{"no-at-sign.example.org", "", "format"},
		{"@example.org", "", "format"},
		{"al@localhost", "", "format"},
		{"al@example.", "", "format"},
		{"Al <al@example.org>", "", "format"},
		{"a\u200d@example.org", "", "invalid_characters"},
		{"a\u202e@example.org", "", "invalid_characters"},
		{"a\x00@example.org", "", "invalid_characters"},
		{strings.Repeat("a", 243) + "@example.org", "", "too_long"},
	} {
		_, key, fe := NormalizeEmail(tc.in)
		code := ""
		if fe != nil {
			code = fe.Code
		}
		if key != tc.key || code != tc.code {
			t.Errorf("%q: got key %q code %q, want %q %q", tc.in, key, code, tc.key, tc.code)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pw, code string
	}{
		{"eight ch", ""},
		{"seven c", "too_short"},
		{strings.Repeat("é", 128), ""}, // counted in characters, not bytes
		{strings.Repeat("é", 129), "too_long"},
		{"AliceSmith", "same_as_identifier"},
		{"ALICE@EXAMPLE.ORG", "same_as_identifier"},
		{"\xff\xfe bad utf8", "format"},
	} {
		fe := CheckPassword("password", tc.pw, "alicesmith", "alice@example.org")
		code := ""
		if fe != nil {
			code = fe.Code
		}
		if code != tc.code {
			t.Errorf("%q: code %q, want %q", tc.pw, code, tc.code)
		}
	}
}

func TestIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID(UserIDPrefix)
		if !ValidID(id, UserIDPrefix) || seen[id] || len(id) != 28 {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "u_", "g_abcdefghijklmnopqrstuvwxyz", "u_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "u_abc", "u_abcdefghijklmnopqrstuvwxy1"} {
		if ValidID(bad, UserIDPrefix) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestInvisibleCharacters: characters that show as nothing or as blank are
// refused in emails and in names people read, so two values that look the
// same never differ (issue 10, case 11); the joiners emoji are built with
// stay welcome in names.
func TestInvisibleCharacters(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x034F, 0xFE0F, 0xFE0E, 0xE0100, 0x3164, 0xFFA0, 0x115F, 0x1160, 0x2800, 0x2028, 0x2029, 0x200B, 0x200D, 0x2064, 0x00AD} {
		s := string(r)
		if _, _, fe := NormalizeEmail("ab" + s + "c@example.org"); fe == nil || fe.Code != "invalid_characters" {
			t.Errorf("email with %U: %+v", r, fe)
		}
		if _, fe := NormalizeDisplayName("Ann" + s + "Lee"); fe == nil || fe.Code != "invalid_characters" {
			t.Errorf("display name with %U between letters: %+v", r, fe)
		}
		if !HasInvisibleText(s) || !HasInvisibleText("x"+s) {
			t.Errorf("%U alone or after a letter passes the name rule", r)
		}
	}
	for _, name := range []string{"Ann ❤️", "👍🏽 Bob", "👩🏽‍💻 dev", "🏳️‍🌈", "👨‍👩‍👧 family", "1️⃣ first", "✔︎ done", "Zoë", "東京"} {
		if got, fe := NormalizeDisplayName(name); fe != nil || got == "" {
			t.Errorf("display name %q refused: %+v", name, fe)
		}
		if HasInvisibleText(name) {
			t.Errorf("%q counted as invisible", name)
		}
	}
	for _, name := range []string{"a\u200d", "\u200d👍", "a\u200db", "👍\u200d", "x\uFE0F", "\u2800\u200d👍"} {
		if !HasInvisibleText(name) {
			t.Errorf("%q passes the name rule: a joiner that joins no emoji", name)
		}
	}
}
