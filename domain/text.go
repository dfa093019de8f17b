package domain

import (
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// usernameRE: 3-32 ASCII letters, digits, '.', '_' or '-', starting and
// ending with a letter or digit.
var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{1,30}[A-Za-z0-9]$`)

// RefusedInText reports a character that a field people read refuses
// wherever it stands: blank, and not one that emoji sequences are built
// with (a zero-width joiner, a text or emoji style selector, a tag), which
// the rule lets through in those sequences only. Line breaks and tabs are
// refused unless lines is set. openapi.yaml states this set as each text
// field's pattern (openapi_test.go checks that the two agree).
func RefusedInText(r rune, lines bool) bool {
	switch {
	case !blank(r):
		return false
	case lines && (r == '\n' || r == '\r' || r == '\t'):
		return false
	case r == zwj || r == textStyle || r == emojiStyle || (r >= firstTag && r <= cancelTag):
		return false
	}
	return true
}

// blank reports a character that shows as nothing or as blank space:
// control and format characters (Cc, Cf: zero-width spaces and joiners,
// bidi overrides and isolates, soft hyphens, BOMs, tags), line and
// paragraph separators, variation selectors, the other default-ignorable
// code points (U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0
// ...) and the braille blank U+2800. Two strings that differ only by such
// characters look the same (or one looks empty). The sets are Unicode's
// own tables, as the unicode package carries them.
func blank(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		r == '\u2800'
}

// invisibleAt is the position (in characters) and the character of the
// first blank character in s, or -1. lines lets line breaks and tabs
// through (descriptions and reasons have lines); emoji lets through the
// blank characters emoji sequences are built with (emojiPart).
func invisibleAt(s string, lines, emoji bool) (int, rune) {
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !blank(r):
		case lines && (r == '\n' || r == '\r' || r == '\t'):
		case emoji && emojiPart(rs, i):
		default:
			return i, r
		}
	}
	return -1, 0
}

// invisibleError names the field and the first character refused in it.
func invisibleError(field string, i int, r rune) *FieldError {
	return &FieldError{Field: field, Code: "invalid_characters",
		Message: fmt.Sprintf("must not contain invisible, control or bidi characters (%U at character %d)", r, i+1)}
}

// HasInvisible reports any blank character: the rule for identifiers
// (emails, usernames), where no exception is safe.
func HasInvisible(s string) bool {
	i, _ := invisibleAt(s, false, false)
	return i >= 0
}

// CleanText is s as a field that is recorded rather than checked keeps it
// (a session's user agent: the client sent it, nobody typed it here, so
// nothing is refused): invalid UTF-8 and every blank character
// (HasInvisible's set, with no exception for emoji) dropped, spaces at
// either end trimmed, and at most max characters kept.
func CleanText(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(s, "") {
		if blank(r) || (n == 0 && unicode.IsSpace(r)) {
			continue
		}
		if n == max {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimRightFunc(b.String(), unicode.IsSpace)
}

// Emoji sequences (Unicode TS #51) are built with blank characters.
const (
	keycap     = '\u20E3'     // COMBINING ENCLOSING KEYCAP, after a variation selector
	blackFlag  = '\U0001F3F4' // the base of a subdivision flag (🏴 + tags + cancel tag)
	cancelTag  = '\U000E007F'
	firstTag   = '\U000E0020'
	lastTag    = '\U000E007E'
	emojiStyle = '\uFE0F'
	textStyle  = '\uFE0E'
	zwj        = '\u200D'
)

// emojiPart reports whether the blank character rs[i] belongs to an emoji
// sequence: a variation selector after a symbol (❤️, ✔︎) or before a keycap
// mark (1️⃣), a zero-width joiner between two symbols (👩🏽‍💻, 🏳️‍🌈), or
// the tags of a subdivision flag (🏴󠁧󠁢󠁳󠁣󠁴󠁿). Anywhere else it only hides.
func emojiPart(rs []rune, i int) bool {
	at := func(j int) rune {
		if j < 0 || j >= len(rs) {
			return -1
		}
		return rs[j]
	}
	isTag := func(r rune) bool { return r >= firstTag && r <= lastTag }
	switch r := rs[i]; {
	case r == textStyle || r == emojiStyle:
		return emojiBase(at(i-1)) || at(i+1) == keycap
	case r == zwj:
		before := i - 1
		if at(before) == emojiStyle {
			before--
		}
		return emojiBase(at(before)) && emojiBase(at(i+1))
	case isTag(r) || r == cancelTag:
		end := i // the cancel tag that closes the run of tags around i
		for isTag(at(end)) {
			end++
		}
		start := end
		for isTag(at(start - 1)) {
			start--
		}
		return start < end && at(start-1) == blackFlag && at(end) == cancelTag
	}
	return false
}

// emojiBase reports a symbol an emoji sequence may start from or join:
// the symbol categories (So, Sm, Sk: emoji, arrows, skin-tone modifiers)
// but the braille blank, and the four punctuation marks Unicode gives an
// emoji presentation (‼ ⁉ 〰 〽).
func emojiBase(r rune) bool {
	switch r {
	case -1, '\u2800':
		return false
	case '\u203C', '\u2049', '\u3030', '\u303D':
		return true
	}
	return unicode.Is(unicode.S, r)
}

// TextRule is the rule of a field people read (display names, content names
// and descriptions, group descriptions, suspension reasons): no white
// space at either end, no blank character but the parts of emoji
// sequences (and line breaks and tabs where Lines), Min-Max characters as
// sent, stored in NFC. Each rule has one code whatever the input:
// invalid_characters, then untrimmed, then length (a range) or too_long (a
// maximum only), the limits in the message.
//
// White space at the ends is refused rather than trimmed
// (docs/design/api-conventions.md): a schema's maxLength counts the
// string as sent, so a server that trimmed first would accept " " and 64
// letters, which the schema forbids. Refusing it makes maxLength,
// minLength and the pattern say exactly what is accepted, in every
// generator's and fuzzer's dialect; clients trim what people type (the
// console does).
type TextRule struct {
	Field    string
	Min, Max int
	Lines    bool
}

// Check applies the rule to s and returns it as stored. The length is the
// one the schema counts, of s as sent; NFC can shorten it (a letter and
// its combining accent become one character) or, for a few characters
// Unicode excludes from composition, lengthen it, so a stored value may
// exceed Max by those (answers state no maxLength). Characters are checked
// again after normalization, which can itself insert U+034F into a long
// run of combining marks: what is stored is what a client could send.
func (t TextRule) Check(s string) (string, *FieldError) {
	if i, r := invisibleAt(s, t.Lines, true); i >= 0 {
		return "", invisibleError(t.Field, i, r)
	}
	if fe := Untrimmed(t.Field, s); fe != nil {
		return "", fe
	}
	switch n := utf8.RuneCountInString(s); {
	case t.Min > 0 && (n < t.Min || n > t.Max):
		return "", &FieldError{Field: t.Field, Code: "length", Message: fmt.Sprintf("must be %d-%d characters", t.Min, t.Max)}
	case n > t.Max:
		return "", &FieldError{Field: t.Field, Code: "too_long", Message: fmt.Sprintf("must be at most %d characters", t.Max)}
	}
	s = norm.NFC.String(s)
	if i, r := invisibleAt(s, t.Lines, true); i >= 0 {
		return "", invisibleError(t.Field, i, r)
	}
	return s, nil
}

// Untrimmed refuses white space (unicode.IsSpace, as strings.TrimSpace
// trims) at either end of a field's value: the one rule of every text
// field, names, descriptions, reasons, emails and links alike.
func Untrimmed(field, s string) *FieldError {
	if s == strings.TrimSpace(s) {
		return nil
	}
	return &FieldError{Field: field, Code: "untrimmed", Message: "must not start or end with white space"}
}

// DisplayNameRule is the rule of users' and groups' display names.
var DisplayNameRule = TextRule{Field: "displayName", Min: 1, Max: 64}

// NormalizeUsername checks a username and returns the form to display (as
// typed) and the key it is unique by (lower case).
func NormalizeUsername(s string) (display, key string, fe *FieldError) {
	if i, r := invisibleAt(s, false, false); i >= 0 {
		return "", "", invisibleError("username", i, r)
	}
	if !usernameRE.MatchString(s) {
		return "", "", &FieldError{Field: "username", Code: "format",
			Message: "must be 3-32 ASCII letters, digits, '.', '_' or '-', starting and ending with a letter or digit"}
	}
	return s, strings.ToLower(s), nil
}

// emailFold is full Unicode case folding (ß and SS compare equal).
var emailFold = cases.Fold()

// foldCase is s case-folded as Unicode's full case folding says. x/text's
// Fold swaps Cherokee's cases (golang/go#46101: U+13A0 to U+AB70 and
// U+AB70 to U+13A0), where Unicode folds both to the capital, so two
// cases of one address made two keys (U1): what it leaves small is made
// capital again.
func foldCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0xAB70 && r <= 0xABBF: // CHEROKEE SMALL LETTER A ... QUV
			return r - 0xAB70 + 0x13A0
		case r >= 0x13F8 && r <= 0x13FD: // CHEROKEE SMALL LETTER YE ... MV
			return r - 0x13F8 + 0x13F0
		}
		return r
	}, emailFold.String(s))
}

// Ats are "@" and the characters NFKC folds to it (U+FE6B, U+FF20):
// NormalizeEmail takes an address written with either.
const Ats = "@\uFE6B\uFF20"

// NamesAnEmail reports whether a login, or a path segment, is written as
// an address: it holds one of Ats.
func NamesAnEmail(s string) bool { return strings.ContainsAny(s, Ats) }

// NormalizeEmail checks an email address and returns the form to display
// (NFKC of what was typed) and the key it is unique by: NFKC, case folded,
// NFKC again (folding can denormalize).
func NormalizeEmail(s string) (display, key string, fe *FieldError) {
	if i, r := invisibleAt(s, false, false); i >= 0 {
		return "", "", invisibleError("email", i, r)
	}
	if fe := Untrimmed("email", s); fe != nil {
		return "", "", fe
	}
	display = norm.NFKC.String(s)
	if i, r := invisibleAt(display, false, false); i >= 0 { // NFKC can itself insert U+034F
		return "", "", invisibleError("email", i, r)
	}
	if utf8.RuneCountInString(display) > 254 {
		return "", "", &FieldError{Field: "email", Code: "too_long", Message: "must be at most 254 characters"}
	}
	addr, err := mail.ParseAddress(display)
	at := strings.LastIndexByte(display, '@')
	if err != nil || addr.Address != display || at < 1 {
		return "", "", &FieldError{Field: "email", Code: "format", Message: "must be an email address such as name@example.org"}
	}
	// The domain's labels are counted as the key reads them: a full stop
	// at either end, or beside another dot, leaves an empty label as an
	// ASCII dot there would (TestAFullStopLeavesNoDomainAnEmptyLabel).
	domainPart := dots.Replace(display[at+1:])
	if !strings.Contains(display[at+1:], ".") || strings.HasSuffix(domainPart, ".") || strings.HasPrefix(domainPart, ".") || strings.Contains(domainPart, "..") {
		return "", "", &FieldError{Field: "email", Code: "format", Message: "must have a domain such as example.org"}
	}
	return display, norm.NFKC.String(foldCase(norm.NFKC.String(display[:at+1] + oneSpelling(domainPart)))), nil
}

// dots are IDNA's full stops (UTS #46: U+3002, U+FF0E, U+FF61), which
// mail software reads as the dots of a domain: a key reads them as dots
// (an address is still written with one ASCII dot at least).
var dots = strings.NewReplacer("。", ".", "．", ".", "｡", ".")

// oneSpelling is a domain with its punycode labels (xn--…) decoded to
// Unicode (IDNA's raw punycode, golang.org/x/net/idna): a domain written
// either way is one mailbox's, so one key (U1,
// TestOneMailboxIsOneKeyHoweverItsDomainIsWritten). Each label decodes
// on its own, and a label that does not decode is kept as written, the
// others decoded still (TestALabelThatDoesNotDecodeLeavesTheOthersDecoded).
func oneSpelling(domain string) string {
	labels := strings.Split(domain, ".")
	for i, label := range labels {
		labels[i] = decodedLabel(label)
	}
	return strings.Join(labels, ".")
}

// decodedLabel is one label of a domain in Unicode when it is punycode,
// else the label as written. Punycode may encode any characters, and
// the key reads what it decodes to as it reads text (NFKC, case folded,
// NFKC): a label that would then hold a dot or an at, a character an
// address may not hold, nothing, or a punycode prefix of its own, would
// make a key that reads as another address or as none, so it is kept as
// written (TestWhatPunycodeDecodesToIsReadAsTheKeyReadsText). The label
// itself is read as the key reads text before it is decoded, not only
// lower-cased: xn--bcher-kvß and xn--bcher-kvss fold alike, so they are
// one label and decode alike (TestAPunycodeLabelIsDecodedAsTheKeyFoldsIt).
func decodedLabel(label string) string {
	folded := norm.NFKC.String(foldCase(norm.NFKC.String(label)))
	if !strings.HasPrefix(folded, "xn--") {
		return label
	}
	u, err := idna.Punycode.ToUnicode(folded)
	if err != nil {
		return label
	}
	read := norm.NFKC.String(foldCase(norm.NFKC.String(u)))
	if read == "" || strings.HasPrefix(read, "xn--") || strings.ContainsAny(read, "."+Ats+"。．｡") {
		return label
	}
	if i, _ := invisibleAt(read, false, false); i >= 0 {
		return label
	}
	if addr, err := mail.ParseAddress("a@" + read + ".org"); err != nil || addr.Address != "a@"+read+".org" {
		return label
	}
	return u
}

// CheckPassword applies the password rules: 8-128 characters, not the
// username or the email (compared case-insensitively). field names the JSON
// field being checked ("password" or "newPassword").
func CheckPassword(field, password, usernameKey, emailKey string) *FieldError {
	n := utf8.RuneCountInString(password)
	switch {
	case !utf8.ValidString(password):
		return &FieldError{Field: field, Code: "format", Message: "must be valid UTF-8"}
	case n < 8:
		return &FieldError{Field: field, Code: "too_short", Message: "must be at least 8 characters"}
	case n > 128:
		return &FieldError{Field: field, Code: "too_long", Message: "must be at most 128 characters"}
	}
	folded := norm.NFKC.String(foldCase(password))
	if _, key, fe := NormalizeEmail(password); fe == nil && key == emailKey {
		folded = key // the address in another spelling of its domain
	}
	if folded == usernameKey || folded == emailKey {
		return &FieldError{Field: field, Code: "same_as_identifier", Message: "must not be the username or the email"}
	}
	return nil
}

// NormalizeDisplayName checks a display name by DisplayNameRule.
func NormalizeDisplayName(s string) (string, *FieldError) {
	return DisplayNameRule.Check(s)
}
