package groups

import (
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

// descriptionRule: at most 1000 characters as sent, white space at either
// end refused (not trimmed), line breaks and tabs allowed, no other
// invisible character.
var descriptionRule = domain.TextRule{Field: "description", Max: 1000, Lines: true}

// normalizeGroupDescription checks a description by descriptionRule.
func normalizeGroupDescription(s string) (string, *domain.FieldError) {
	return descriptionRule.Check(s)
}
