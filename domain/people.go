package domain

import (
	"regexp"
	"strings"
)

// The people search (docs/design/people-search.md): a logged-in user
// finds accounts by the start of their username. The account row carries
// every start of its username key (UsernamePrefixes), written with it; a
// search asks the index for rows holding the prefix, reads their public
// part alone, and keeps the rows that say so themselves
// (Profile.HasUsernamePrefix).

// Prefix bounds, in characters: the shortest start searched (one letter
// would list a twenty-sixth of everyone), the longest a username is.
const (
	MinPeoplePrefix = 2
	MaxPeoplePrefix = 32
)

// prefixRE is what a start of a username may hold: the characters of one.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// FoldPrefix is a people search's prefix as the keys are compared (lower
// case). It refuses one shorter than MinPeoplePrefix, longer than a
// username, or holding a character no username has, naming field.
func FoldPrefix(field, prefix string) (string, *FieldError) {
	if len(prefix) < MinPeoplePrefix || len(prefix) > MaxPeoplePrefix || !prefixRE.MatchString(prefix) {
		return "", &FieldError{Field: field, Code: "format",
			Message: "must be the first 2-32 characters of a username: ASCII letters, digits, '.', '_' or '-'"}
	}
	return strings.ToLower(prefix), nil
}

// UsernamePrefixes is what an account row's username prefixes hold: every
// start of its username key from MinPeoplePrefix characters to the whole
// key (none for a deleted account, whose key is cleared), shortest first.
func UsernamePrefixes(usernameKey string) []string {
	var out []string
	for n := MinPeoplePrefix; n <= len(usernameKey); n++ {
		out = append(out, usernameKey[:n])
	}
	return out
}

// HasUsernamePrefix says whether p is what a people search for the folded
// prefix finds: a visible account (active or suspended, so a search says
// no more of a suspension than a profile does) whose username key (the
// username in lower case) starts with it.
func (p Profile) HasUsernamePrefix(folded string) bool {
	return p.Visible() && strings.HasPrefix(strings.ToLower(p.Username), folded)
}

// FoundProfile is an account a people search read, with its position in
// the search's order (the row's token): a cursor goes on after it.
type FoundProfile struct {
	Profile  Profile
	Position int64
}
