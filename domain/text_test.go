package domain

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
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
		{" al@example.org ", "", "untrimmed"}, // refused, as in every text field
		{"al@example.org\u00A0", "", "untrimmed"},
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

// TestCaseVariantsOfAnEmailAreOneKey: an email key is the same for
// every case of the address, as full case folding says. Cherokee is the
// one script where x/text's Fold breaks this (golang/go#46101): it swaps
// the cases (U+13A0 to U+AB70, U+AB70 to U+13A0) where Unicode folds both
// to the capital, so aᎠ@ and aꭰ@ were two keys and two accounts (U1).
// Every key is also its own key: folding it again changes nothing.
func TestCaseVariantsOfAnEmailAreOneKey(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{"a\u13a0@example.org", "a\uab70@example.org"},           // CHEROKEE LETTER A, SMALL LETTER A
		{"\u13f0\u13ef@example.org", "\u13f8\uabbf@example.org"}, // the last of each range
		{"Al@Example.ORG", "al@example.org"},
	} {
		_, k1, fe1 := NormalizeEmail(pair[0])
		_, k2, fe2 := NormalizeEmail(pair[1])
		if fe1 != nil || fe2 != nil || k1 != k2 {
			t.Errorf("%q and %q are one address in two cases: keys %q and %q (%v %v)", pair[0], pair[1], k1, k2, fe1, fe2)
		}
		if q1, _ := FoldSearch("q", pair[0]); q1 != k1 {
			t.Errorf("a search for %q folds to %q, its key is %q", pair[0], q1, k1)
		}
	}
	for r := rune(0x80); r <= 0x1FFFF; r++ {
		if !utf8.ValidRune(r) || blank(r) {
			continue
		}
		_, key, fe := NormalizeEmail("a" + string(r) + "@example.org")
		if fe != nil {
			continue
		}
		if _, again, _ := NormalizeEmail(key); again != key {
			t.Errorf("%U: key %q is not its own key (%q)", r, key, again)
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
	// The address in its domain's other spelling is the address: as a
	// password it was taken (TestOneMailboxIsOneKeyHoweverItsDomainIsWritten).
	_, key, _ := NormalizeEmail("ann@mail.bücher.de")
	for _, pw := range []string{"ann@mail.xn--bcher-kva.de", "ANN@MAIL.BÜCHER.DE", "ann@mail\u3002bücher.de"} {
		if fe := CheckPassword("password", pw, "ann", key); fe == nil || fe.Code != "same_as_identifier" {
			t.Errorf("%q as the password of ann@mail.bücher.de: %v, want same_as_identifier", pw, fe)
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

// hasInvisibleText is the rule of names people read, as TextRule applies it.
func hasInvisibleText(s string) bool {
	i, _ := invisibleAt(s, false, true)
	return i >= 0
}

// TestInvisibleCharacters: characters that show as nothing or as blank are
// refused in emails and in names people read, so two values that look the
// same never differ (U1; TextRule, HasInvisible); the parts emoji
// sequences are built with stay welcome in names.
func TestInvisibleCharacters(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x034F, 0xFE0F, 0xFE0E, 0xE0100, 0x3164, 0xFFA0, 0x115F, 0x1160, 0x2800, 0x2028, 0x2029, 0x200B, 0x200D, 0x2064, 0x00AD, 0xE0067, 0xE007F, 0xFEFF, 0x202E} {
		s := string(r)
		if _, _, fe := NormalizeEmail("ab" + s + "c@example.org"); fe == nil || fe.Code != "invalid_characters" {
			t.Errorf("email with %U: %+v", r, fe)
		}
		if _, fe := NormalizeDisplayName("Ann" + s + "Lee"); fe == nil || fe.Code != "invalid_characters" ||
			fe.Field != "displayName" || !strings.Contains(fe.Message, fmt.Sprintf("%U at character 4", r)) {
			t.Errorf("display name with %U between letters: %+v", r, fe)
		}
		if !hasInvisibleText(s) || !hasInvisibleText("x"+s) {
			t.Errorf("%U alone or after a letter passes the name rule", r)
		}
	}
	for _, name := range []string{"Ann ❤️", "👍🏽 Bob", "👩🏽‍💻 dev", "🏳️‍🌈", "👨‍👩‍👧 family", "1️⃣ first", "✔︎ done", "Zoë", "東京",
		"↔️ both", "‼️ loud", "🏴‍☠️ crew", "❤️‍🔥", "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F Scotland"} {
		if got, fe := NormalizeDisplayName(name); fe != nil || got == "" {
			t.Errorf("display name %q refused: %+v", name, fe)
		}
		if hasInvisibleText(name) {
			t.Errorf("%q counted as invisible", name)
		}
	}
	for _, name := range []string{"a\u200d", "\u200d👍", "a\u200db", "👍\u200d", "x\uFE0F", "\u2800\u200d👍",
		"🏴\U000E0067\U000E0062", "a\U000E0067\U000E007F", "🏴\U000E007F", "\U000E0067\U000E007F"} {
		if !hasInvisibleText(name) {
			t.Errorf("%q passes the name rule: a joiner or tag that builds no emoji", name)
		}
	}
}

// TestTextRules: every field people read follows one rule: one code per
// rule whatever the input's length (invalid_characters, then untrimmed,
// then length for a range or too_long for a maximum), the limit in the
// message; line breaks and tabs only where the field has lines, and never
// at either end; the length counted as sent, as openapi.yaml's maxLength
// counts it, the value stored in NFC.
func TestTextRules(t *testing.T) {
	t.Parallel()
	name := TextRule{Field: "name", Min: 1, Max: 5}
	lines := TextRule{Field: "description", Max: 5, Lines: true}
	for _, tc := range []struct {
		rule     TextRule
		in, out  string
		code     string
		mentions string
	}{
		{name, " ab ", "", "untrimmed", "white space"},
		{name, "ab\u00A0", "", "untrimmed", "white space"},
		{name, "\u3000ab", "", "untrimmed", "white space"},
		{name, "a b", "a b", "", ""},
		{name, "e\u0301", "é", "", ""},                                                 // stored in NFC
		{name, "e\u0301e\u0301e\u0301", "", "length", "1-5"},                           // six characters as sent, though three in NFC
		{name, strings.Repeat("\u0958", 5), strings.Repeat("\u0915\u093C", 5), "", ""}, // five as sent; NFC decomposes them
		{name, "", "", "length", "1-5"},
		{name, "   ", "", "untrimmed", "white space"},
		{name, "abcdef", "", "length", "1-5"},
		{name, strings.Repeat("a", 100000), "", "length", "1-5"},
		{name, "a\nb", "", "invalid_characters", "U+000A at character 2"},
		{name, "a\u3164", "", "invalid_characters", "U+3164"},
		{lines, "a\nb\tc", "a\nb\tc", "", ""},
		{lines, "a\n", "", "untrimmed", "white space"},
		{lines, "\tab", "", "untrimmed", "white space"},
		{lines, "", "", "", ""},
		{lines, "abcdef", "", "too_long", "at most 5"},
		{lines, strings.Repeat("a", 100000), "", "too_long", "at most 5"},
		{lines, "a\u2028b", "", "invalid_characters", "U+2028"},
		{lines, "a\u0007", "", "invalid_characters", "U+0007"},
	} {
		out, fe := tc.rule.Check(tc.in)
		code := ""
		if fe != nil {
			code = fe.Code
			if fe.Field != tc.rule.Field || !strings.Contains(fe.Message, tc.mentions) {
				t.Errorf("%.20q: %+v, want field %s and a message mentioning %q", tc.in, fe, tc.rule.Field, tc.mentions)
			}
		}
		if out != tc.out || code != tc.code {
			t.Errorf("%.20q: got %q %q, want %q %q", tc.in, out, code, tc.out, tc.code)
		}
	}
}

// TestNormalizationCannotSmuggleInvisibles: NFC and NFKC insert U+034F
// into a run of more than 30 combining marks; the rules look at the
// normalized text, so what would be stored is refused, not kept.
func TestNormalizationCannotSmuggleInvisibles(t *testing.T) {
	t.Parallel()
	marks := "a" + strings.Repeat("\u0301", 40)
	if HasInvisible(marks) {
		t.Fatal("the input itself has an invisible character")
	}
	if _, fe := NormalizeDisplayName(marks); fe == nil || fe.Code != "invalid_characters" || !strings.Contains(fe.Message, "U+034F") {
		t.Errorf("display name: %+v", fe)
	}
	if _, _, fe := NormalizeEmail(marks + "@example.org"); fe == nil || fe.Code != "invalid_characters" || !strings.Contains(fe.Message, "U+034F") {
		t.Errorf("email: %+v", fe)
	}
}

// TestCleanText: a recorded field (a session's user agent) keeps what it
// was sent but the characters no field may show, without refusing
// anything: blank characters (emoji joiners too) and invalid UTF-8 are
// dropped, the ends trimmed, and it is cut at max characters.
func TestCleanText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"Mozilla/5.0 (X11; Linux x86_64)", 256, "Mozilla/5.0 (X11; Linux x86_64)"},
		{"  padded\t ", 256, "padded"},
		{"a\u202eb\u200bc\x00d\ne\u2028f\ufeffg\u3164h", 256, "abcdefgh"},
		{"emoji \U0001F468\u200D\U0001F469 apart", 256, "emoji \U0001F468\U0001F469 apart"},
		{"bad \xff\xfe utf8", 256, "bad  utf8"},
		{"\u200b\u200b", 256, ""},
		{"ééééé", 4, "éééé"},
		{"\u200bab\u200bcd", 3, "abc"},
		{"ab   cd", 3, "ab"},
		{strings.Repeat("x", 300) + "\u200b", 256, strings.Repeat("x", 256)},
	} {
		got := CleanText(c.in, c.max)
		if got != c.want {
			t.Errorf("CleanText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
		if HasInvisible(got) {
			t.Errorf("CleanText(%q) = %q keeps a blank character", c.in, got)
		}
	}
}

// TestSessionIDs: a session's public id is an id of its own kind, the
// same for the same token hash, different for another, and shares nothing
// with the hash it comes from.
func TestSessionIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		hash := fmt.Sprintf("%064x", i)
		id := SessionID(hash)
		if !ValidID(id, SessionIDPrefix) || seen[id] || id != (Session{TokenHash: hash}).ID() {
			t.Fatalf("bad, repeated or unstable session id %q", id)
		}
		if strings.Contains(hash, id[2:10]) {
			t.Fatalf("session id %q shows its hash %q", id, hash)
		}
		seen[id] = true
	}
}

// TestOneMailboxIsOneKeyHoweverItsDomainIsWritten: a domain has two
// spellings, its Unicode labels and their punycode (xn--…), and the
// dots of a domain may be written as IDNA's other full stops (U+3002,
// U+FF0E, U+FF61), which mail software reads as dots (one ASCII dot is
// still asked for). Each spelling was
// a key of its own (U1 keys the text as written), so two accounts could
// each hold one spelling of one mailbox. A key now decodes the domain's
// punycode labels and reads its full stops as dots; a label that is not
// valid punycode stays as written. Every key is its own key.
func TestOneMailboxIsOneKeyHoweverItsDomainIsWritten(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, key string }{
		{"a@bücher.de", "a@bücher.de"},
		{"a@xn--bcher-kva.de", "a@bücher.de"},
		{"A@XN--BCHER-KVA.DE", "a@bücher.de"},
		{"a@mail.xn--bcher-kva.de", "a@mail.bücher.de"},
		{"bob@ex\u3002ample.org", "bob@ex.ample.org"},
		{"bob@mail.example\u3002org", "bob@mail.example.org"},
		{"bob@mail.example\uff0eorg", "bob@mail.example.org"}, // NFKC's dot already
		{"bob@mail.example\uff61org", "bob@mail.example.org"},
		{"bob@xn--zz.example.org", "bob@xn--zz.example.org"},       // not punycode: as written
		{"xn--bcher-kva@example.org", "xn--bcher-kva@example.org"}, // the local part is not a domain
	} {
		_, key, fe := NormalizeEmail(c.in)
		if fe != nil || key != c.key {
			t.Errorf("%q: key %q (%v), want %q", c.in, key, fe, c.key)
			continue
		}
		if _, again, _ := NormalizeEmail(key); again != key {
			t.Errorf("%q: key %q is not its own key (%q)", c.in, key, again)
		}
	}
}

// TestAFullStopLeavesNoDomainAnEmptyLabel: an ideographic full stop
// (U+3002, or U+FF61, which NFKC makes one) at either end of a domain, or
// beside another dot, passed the check of the ASCII dots and was read as
// a dot in the key only: a@example.org。 took the key a@example.org.,
// which is not a@example.org's though mail software reads both as one
// mailbox (a second account for it, U1), and which is not its own key
// (an address refused as written). It is refused as an ASCII dot there
// is: 400 naming email.
func TestAFullStopLeavesNoDomainAnEmptyLabel(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"a@example.org\u3002",
		"a@example.org\uff61",
		"a@\u3002example.org",
		"a@ex\u3002\u3002ample.org",
		"a@ex.\u3002ample.org",
	} {
		if _, key, fe := NormalizeEmail(in); fe == nil || fe.Field != "email" || fe.Code != "format" {
			t.Errorf("%q: key %q (%v), want refused as format", in, key, fe)
		}
	}
}

// TestALabelThatDoesNotDecodeLeavesTheOthersDecoded: the domain's
// punycode was decoded whole or not at all, so one label that is not
// punycode (xn--zz, a name its domain's owner may give a host) kept the
// others as written: a@xn--bcher-kva.xn--zz.de and a@bücher.xn--zz.de,
// one mailbox, were two keys (U1). Each label decodes on its own.
func TestALabelThatDoesNotDecodeLeavesTheOthersDecoded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, key string }{
		{"a@xn--bcher-kva.xn--zz.de", "a@bücher.xn--zz.de"},
		{"a@xn--zz.xn--bcher-kva.de", "a@xn--zz.bücher.de"},
		{"a@bücher.xn--zz.de", "a@bücher.xn--zz.de"},
		{"a@XN--ZZ.Xn--Bcher-kva.de", "a@xn--zz.bücher.de"},
	} {
		if _, key, fe := NormalizeEmail(c.in); fe != nil || key != c.key {
			t.Errorf("%q: key %q (%v), want %q", c.in, key, fe, c.key)
		}
	}
}

// TestWhatPunycodeDecodesToIsReadAsTheKeyReadsText: punycode may encode
// any characters, and a label's decoding went into the key unchecked and
// not made NFKC before its case was folded, where the text of an address
// is: a@xn--ello-k97a.de (ℌello) took the key a@Hello.de, not the key of
// a@ℌello.de (a@hello.de), and a label decoding to a full stop, an at, a
// space, nothing, or to a fullwidth xn--, made a key that reads as
// another address or as none. Such keys were not their own keys (U1: a
// login or a look-up by the key finds another account or is refused). A
// decoded label is now read as the key reads text, and one that would
// hold a dot, an at, a character an address may not hold, nothing, or a
// punycode prefix is kept as written.
func TestWhatPunycodeDecodesToIsReadAsTheKeyReadsText(t *testing.T) {
	t.Parallel()
	puny := func(label string) string {
		ace, err := idna.Punycode.ToASCII(label)
		if err != nil {
			t.Fatalf("%q: %v", label, err)
		}
		return ace
	}
	for _, c := range []struct{ in, key string }{
		{"a@" + puny("ℌello") + ".de", "a@hello.de"},
		{"a@" + puny("a\u3002b") + ".org", "a@" + puny("a\u3002b") + ".org"},
		{"a@" + puny("b\uff20c") + ".org", "a@" + puny("b\uff20c") + ".org"},
		{"a@" + puny("b\u3000c") + ".org", "a@" + puny("b\u3000c") + ".org"},
		{"a@" + puny("b\uff08c") + ".org", "a@" + puny("b\uff08c") + ".org"},
		{"a@" + puny("b\u200bc") + ".org", "a@" + puny("b\u200bc") + ".org"},
		{"a@" + puny("ｘｎ－－bcher-kva") + ".de", "a@" + puny("ｘｎ－－bcher-kva") + ".de"},
		{"a@xn--.example.org", "a@xn--.example.org"},
	} {
		_, key, fe := NormalizeEmail(c.in)
		if fe != nil || key != c.key {
			t.Errorf("%q: key %q (%v), want %q", c.in, key, fe, c.key)
		}
		if _, again, fe := NormalizeEmail(c.key); fe != nil || again != c.key {
			t.Errorf("%q: key %q is not its own key (%q, %v)", c.in, c.key, again, fe)
		}
	}
}

// TestAPunycodeLabelIsDecodedAsTheKeyFoldsIt: a label was tested for
// punycode and decoded lower-cased only, and folded after: xn--bcher-kvß,
// which is not punycode as written (ß is no punycode digit), stayed as
// written and folded to xn--bcher-kvss, while xn--bcher-kvss, which the
// fold says is the same text (ß and ss fold alike), decoded to another
// label. One key by the key's own fold made two, so two accounts (U1),
// and the first key was not its own key; with ẞ, which IDNA maps to ss,
// the two are one mailbox too. A label is now read as the key reads
// text before it is decoded.
func TestAPunycodeLabelIsDecodedAsTheKeyFoldsIt(t *testing.T) {
	t.Parallel()
	_, want, fe := NormalizeEmail("a@xn--bcher-kvss.de")
	if fe != nil {
		t.Fatal(fe)
	}
	for _, in := range []string{"a@xn--bcher-kvß.de", "a@xn--bcher-kvẞ.de", "a@XN--BCHER-KVSS.DE"} {
		_, key, fe := NormalizeEmail(in)
		if fe != nil || key != want {
			t.Errorf("%q: key %q (%v), want %q, the key of a@xn--bcher-kvss.de", in, key, fe, want)
		}
		if _, again, fe := NormalizeEmail(key); fe != nil || again != key {
			t.Errorf("%q: key %q is not its own key (%q, %v)", in, key, again, fe)
		}
	}
}
