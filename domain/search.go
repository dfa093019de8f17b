package domain

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A moderator's search for accounts by part of a username or email
// (docs/design/user-search.md). The account row carries the grams of its
// keys (SearchGrams), written with them; a search asks the index for rows
// holding a few grams of the query (QueryGrams) and keeps the rows whose
// keys hold the query itself (Matches): the grams only narrow the read.

// SearchGram is how many characters a gram has: three, so that a query of
// three characters is one gram and a longer one a few.
const SearchGram = 3

// Search query bounds, in characters: the shortest that has a gram, the
// longest an email can be.
const (
	MinSearchQuery = SearchGram
	MaxSearchQuery = 254
)

// maxQueryGrams bounds the grams one search asks for: the index
// intersects them, and a few already narrow a read to almost exactly the
// matches.
const maxQueryGrams = 4

// FoldSearch is the query as the keys are compared: case-folded and NFKC,
// as an email key is (a username key is lower-case ASCII, which the fold
// leaves alone). It refuses a query that is not valid UTF-8, longer than
// an email as sent, or whose folded form is shorter than a gram, naming
// field.
func FoldSearch(field, q string) (string, *FieldError) {
	if !utf8.ValidString(q) {
		return "", &FieldError{Field: field, Code: "format", Message: "must be valid UTF-8"}
	}
	if n := utf8.RuneCountInString(q); n > MaxSearchQuery {
		return "", &FieldError{Field: field, Code: "too_long", Message: "must be at most 254 characters"}
	}
	folded := norm.NFKC.String(foldCase(norm.NFKC.String(domainSpelled(norm.NFKC.String(q)))))
	if utf8.RuneCountInString(folded) < MinSearchQuery {
		return "", &FieldError{Field: field, Code: "too_short",
			Message: "must be at least 3 characters (compared case-folded, in NFKC)"}
	}
	return folded, nil
}

// domainSpelled is a query (NFKC) with what follows its last at read as
// an email key reads a domain (NormalizeEmail): IDNA's full stops as
// dots, punycode labels decoded one by one, so a search by either
// spelling of a domain asks for its key's grams
// (TestASearchByEitherSpellingOfADomainFindsItsKey). A query with no at
// may be a username or a local part, and is kept.
func domainSpelled(q string) string {
	at := strings.LastIndexByte(q, '@')
	if at < 0 {
		return q
	}
	return q[:at+1] + oneSpelling(dots.Replace(q[at+1:]))
}

// grams are s's distinct runs of SearchGram characters, in order.
func grams(s string) []string {
	rs := []rune(s)
	var out []string
	for i := 0; i+SearchGram <= len(rs); i++ {
		g := string(rs[i : i+SearchGram])
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// SearchGrams is what an account row's search grams hold: every gram of
// its username key and its email key (none for a deleted account, whose
// keys are cleared), sorted.
func SearchGrams(usernameKey, emailKey string) []string {
	out := append(grams(usernameKey), grams(emailKey)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// QueryGrams are the grams a search for the folded query asks the index
// for: its first and its last, and up to two between, evenly spread. Any
// row that holds the query holds them all.
func QueryGrams(folded string) []string {
	all := grams(folded)
	if len(all) <= maxQueryGrams {
		return all
	}
	out := make([]string, 0, maxQueryGrams)
	for i := range maxQueryGrams {
		out = append(out, all[i*(len(all)-1)/(maxQueryGrams-1)])
	}
	return out
}

// Matches says whether u is what a search for the folded query finds: a
// visible account (active or suspended: not pending, deleting or deleted)
// whose username key or email key holds the query.
func (u User) Matches(folded string) bool {
	return u.Visible() && (strings.Contains(u.UsernameKey, folded) || strings.Contains(u.EmailKey, folded))
}

// Found is an account a search read, with its position in the search's
// order (the row's token): a cursor goes on after it.
type Found struct {
	User     User
	Position int64
}
