package groups

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"shelf/domain"
)

// NormalizeName checks a group name by the username rules (3-32
// ASCII letters, digits, '.', '_', '-') and returns it as typed and the key
// it is unique by (lower case). Errors name the field "name".
func NormalizeName(s string) (display, key string, fe *domain.FieldError) {
	display, key, fe = domain.NormalizeUsername(s)
	if fe != nil {
		fe.Field = "name"
	}
	return display, key, fe
}

// normalizeGroupDescription checks a description: at most 1000 characters once
// trimmed, line breaks and tabs allowed, other control characters not.
func normalizeGroupDescription(s string) (string, *domain.FieldError) {
	s = norm.NFC.String(strings.TrimSpace(s))
	if domain.HasControl(s) {
		return "", &domain.FieldError{Field: "description", Code: "invalid_characters", Message: "must not contain control characters"}
	}
	if utf8.RuneCountInString(s) > 1000 {
		return "", &domain.FieldError{Field: "description", Code: "too_long", Message: "must be at most 1000 characters"}
	}
	return s, nil
}
