package domain

import (
	"slices"
	"strings"
	"testing"
)

// TestSearchGramsCoverEveryPartOfTheKeys: every run of three or more
// characters of a username key or an email key holds the grams a search
// for it asks for, so the index finds every account that matches; a
// deleted account's cleared keys carry none.
func TestSearchGramsCoverEveryPartOfTheKeys(t *testing.T) {
	t.Parallel()
	keys := [][2]string{
		{"alice.smith", "alice.smith@example.org"},
		{"bob", "straße@bücher.de"},
		{"x-_y", "ab@c.io"},
	}
	for _, k := range keys {
		held := SearchGrams(k[0], k[1])
		if !slices.IsSorted(held) || len(slices.Compact(slices.Clone(held))) != len(held) {
			t.Errorf("%v: grams %v are not sorted and distinct", k, held)
		}
		for _, key := range k {
			rs := []rune(key)
			for i := range rs {
				for j := i + SearchGram; j <= len(rs); j++ {
					q := string(rs[i:j])
					for _, g := range QueryGrams(q) {
						if !slices.Contains(held, g) {
							t.Errorf("%v: a search for %q asks for %q, which the row does not hold", k, q, g)
						}
					}
				}
			}
		}
	}
	if g := SearchGrams("", ""); len(g) != 0 {
		t.Errorf("cleared keys carry grams %v", g)
	}
	if got := SearchGrams("ab", ""); len(got) != 0 {
		t.Errorf("a key shorter than a gram carries %v", got)
	}
}

// TestQueryGramsAreFewAndSpread: a long query asks for four grams, its
// first and last among them; a short one for each of its own.
func TestQueryGramsAreFewAndSpread(t *testing.T) {
	t.Parallel()
	for q, want := range map[string][]string{
		"ann":       {"ann"},
		"anna":      {"ann", "nna"},
		"aaaa":      {"aaa"},
		"abcdef":    {"abc", "bcd", "cde", "def"},
		"abcdefghi": {"abc", "cde", "efg", "ghi"},
	} {
		if got := QueryGrams(q); !slices.Equal(got, want) {
			t.Errorf("QueryGrams(%q) = %v, want %v", q, got, want)
		}
	}
	long := QueryGrams(strings.Repeat("abcdefghij", 25))
	if len(long) != 4 {
		t.Errorf("a long query asks for %d grams", len(long))
	}
}

// TestFoldSearch: the query is folded as email keys are, and refused,
// naming its field, when it is not UTF-8, too long as given or too short
// once folded.
func TestFoldSearch(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]string{
		"ANN":        "ann",
		"Straße":     "strasse",
		"ＡＢＣ":        "abc",
		"@EXAMPLE.O": "@example.o",
	} {
		got, fe := FoldSearch("q", q)
		if fe != nil || got != want {
			t.Errorf("FoldSearch(%q) = %q, %v; want %q", q, got, fe, want)
		}
	}
	for q, code := range map[string]string{
		"ab":                     "too_short",
		"e\u0301x":               "too_short", // three characters, two once composed
		"\xff\xfeabc":            "format",
		strings.Repeat("a", 255): "too_long",
	} {
		_, fe := FoldSearch("q", q)
		if fe == nil || fe.Field != "q" || fe.Code != code {
			t.Errorf("FoldSearch(%q) = %+v, want code %s naming q", q, fe, code)
		}
	}
	if _, fe := FoldSearch("q", strings.Repeat("a", 254)); fe != nil {
		t.Errorf("254 characters refused: %v", fe)
	}
}

// TestMatchesIsTheRowsOwnWord: an account is found only while visible and
// only by what its keys hold now, never by the grams alone.
func TestMatchesIsTheRowsOwnWord(t *testing.T) {
	t.Parallel()
	u := User{UsernameKey: "abcxbcd", EmailKey: "someone@example.org", Status: StatusActive}
	for q, want := range map[string]bool{"abcx": true, "@example": true, "abcd": false, "nobody": false} {
		if got := u.Matches(q); got != want {
			t.Errorf("Matches(%q) = %v, want %v", q, got, want)
		}
	}
	for _, s := range []Status{StatusPending, StatusDeleting, StatusDeleted} {
		u.Status = s
		if u.Matches("abcx") {
			t.Errorf("a %s account matches", s)
		}
	}
	u.Status = StatusSuspended
	if !u.Matches("abcx") {
		t.Error("a suspended account does not match")
	}
}

// TestASearchByEitherSpellingOfADomainFindsItsKey: an email key decodes
// its domain's punycode labels and reads IDNA's full stops as dots, and a
// search was folded as the key was before, so an admin's search for
// ann@xn--bcher-kva.de, or for @mail。example.org, asked for grams no key
// holds and found nobody, though a login by either spelling finds the
// account. What follows the query's at is now read as a key reads a
// domain: its full stops as dots, its labels decoded one by one. A query
// with no at may be a username (xn--bcher-kva is one) or a local part
// (which keeps its full stops) and is folded as before.
func TestASearchByEitherSpellingOfADomainFindsItsKey(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]string{
		"ann@xn--bcher-kva.de":     "ann@bücher.de",
		"ANN@XN--BCHER-KVA.DE":     "ann@bücher.de",
		"@xn--bcher-kva.de":        "@bücher.de",
		"@mail\u3002example.org":   "@mail.example.org",
		"x\u3002y":                 "x\u3002y",
		"xn--bcher-kva":            "xn--bcher-kva",
		"xn--bcher-kva@example.de": "xn--bcher-kva@example.de",
	} {
		if got, fe := FoldSearch("q", q); fe != nil || got != want {
			t.Errorf("FoldSearch(%q) = %q, %v; want %q", q, got, fe, want)
		}
	}
}
