package domain

import (
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// usernameRE: 3-32 ASCII letters, digits, '.', '_' or '-', starting and
// ending with a letter or digit.
var usernameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{1,30}[A-Za-z0-9]$`)

// blank reports a character that shows as nothing or as blank space:
// control and format characters (Cc, Cf: zero-width spaces and joiners,
// bidi overrides and isolates, soft hyphens, BOMs), line and paragraph
// separators, variation selectors, the other default-ignorable code points
// (U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0 ...) and the
// braille blank U+2800. Two strings that differ only by such characters
// look the same (or one looks empty).
func blank(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		r == '\u2800'
}

// HasInvisible reports any blank character: the rule for identifiers
// (emails, usernames), where no exception is safe.
func HasInvisible(s string) bool {
	for _, r := range s {
		if blank(r) {
			return true
		}
	}
	return false
}

// HasInvisibleText is the rule for names people read (display names,
// content names): HasInvisible, except the joiners emoji are built with,
// which are welcome there: a variation selector right after a symbol (❤️)
// or before a keycap mark (1️⃣), and a zero-width joiner between two
// symbols (👩🏽‍💻, 🏳️‍🌈).
func HasInvisibleText(s string) bool {
	rs := []rune(s)
	symbol := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.Is(unicode.So, rs[i]) || unicode.Is(unicode.Sk, rs[i])) && rs[i] != '\u2800'
	}
	for i, r := range rs {
		if !blank(r) {
			continue
		}
		switch {
		case (r == '\uFE0E' || r == '\uFE0F') && (symbol(i-1) || i+1 < len(rs) && rs[i+1] == '\u20E3'):
		case r == '\u200D' && (symbol(i-1) || i >= 2 && rs[i-1] == '\uFE0F' && symbol(i-2)) && symbol(i+1):
		default:
			return true
		}
	}
	return false
}

// HasControl reports control characters other than ordinary line breaks
// and tabs.
func HasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return true
		}
	}
	return false
}

// NormalizeUsername checks a username and returns the form to display (as
// typed) and the key it is unique by (lower case).
func NormalizeUsername(s string) (display, key string, fe *FieldError) {
	if HasInvisible(s) {
		return "", "", &FieldError{Field: "username", Code: "invalid_characters",
			Message: "must not contain invisible, control or bidi characters"}
	}
	if !usernameRE.MatchString(s) {
		return "", "", &FieldError{Field: "username", Code: "format",
			Message: "must be 3-32 ASCII letters, digits, '.', '_' or '-', starting and ending with a letter or digit"}
	}
	return s, strings.ToLower(s), nil
}

// emailFold is full Unicode case folding (ß and SS compare equal).
var emailFold = cases.Fold()

// NormalizeEmail checks an email address and returns the form to display
// (NFKC of what was typed) and the key it is unique by: NFKC, case folded,
// NFKC again (folding can denormalize).
func NormalizeEmail(s string) (display, key string, fe *FieldError) {
	if HasInvisible(s) {
		return "", "", &FieldError{Field: "email", Code: "invalid_characters",
			Message: "must not contain invisible, control or bidi characters"}
	}
	display = norm.NFKC.String(strings.TrimSpace(s))
	if HasInvisible(display) { // NFKC can itself insert U+034F
		return "", "", &FieldError{Field: "email", Code: "invalid_characters",
			Message: "must not contain invisible, control or bidi characters"}
	}
	if utf8.RuneCountInString(display) > 254 {
		return "", "", &FieldError{Field: "email", Code: "too_long", Message: "must be at most 254 characters"}
	}
	addr, err := mail.ParseAddress(display)
	at := strings.LastIndexByte(display, '@')
	if err != nil || addr.Address != display || at < 1 {
		return "", "", &FieldError{Field: "email", Code: "format", Message: "must be an email address such as name@example.org"}
	}
	domainPart := display[at+1:]
	if !strings.Contains(domainPart, ".") || strings.HasSuffix(domainPart, ".") || strings.HasPrefix(domainPart, ".") {
		return "", "", &FieldError{Field: "email", Code: "format", Message: "must have a domain such as example.org"}
	}
	return display, norm.NFKC.String(emailFold.String(display)), nil
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
	folded := norm.NFKC.String(emailFold.String(password))
	if folded == usernameKey || folded == emailKey {
		return &FieldError{Field: field, Code: "same_as_identifier", Message: "must not be the username or the email"}
	}
	return nil
}

// NormalizeDisplayName checks a display name: 1-64 characters, no control,
// format or bidi characters, surrounding space trimmed.
func NormalizeDisplayName(s string) (string, *FieldError) {
	s = norm.NFC.String(strings.TrimSpace(s))
	if HasInvisibleText(s) {
		return "", &FieldError{Field: "displayName", Code: "invalid_characters",
			Message: "must not contain invisible, control or bidi characters"}
	}
	if n := utf8.RuneCountInString(s); n < 1 || n > 64 {
		return "", &FieldError{Field: "displayName", Code: "length", Message: "must be 1-64 characters"}
	}
	return s, nil
}
