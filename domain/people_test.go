package domain

import (
	"slices"
	"strings"
	"testing"
)

// TestUsernamePrefixesHoldEveryStartAFoldedPrefixCanBe: every prefix
// FoldPrefix accepts of a username's own start is in the row's prefixes,
// and nothing shorter than the minimum or not a start is.
func TestUsernamePrefixesHoldEveryStartAFoldedPrefixCanBe(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Al", "Alice.B-2", strings.Repeat("x", 32)} {
		_, key, fe := NormalizeUsername(name)
		if fe != nil && len(name) >= 3 {
			t.Fatalf("%s: %v", name, fe)
		}
		if fe != nil {
			key = strings.ToLower(name)
		}
		held := UsernamePrefixes(key)
		if len(held) != len(key)-MinPeoplePrefix+1 {
			t.Fatalf("%s: %d prefixes %v", name, len(held), held)
		}
		for n := 1; n <= len(name); n++ {
			folded, fe := FoldPrefix("prefix", name[:n])
			if n < MinPeoplePrefix {
				if fe == nil || fe.Field != "prefix" {
					t.Fatalf("%q: a prefix of %d accepted", name[:n], n)
				}
				continue
			}
			if fe != nil || !slices.Contains(held, folded) {
				t.Fatalf("%q: folded %q (%v) not in %v", name[:n], folded, fe, held)
			}
			if !(Profile{Username: name, Status: StatusSuspended}).HasUsernamePrefix(folded) {
				t.Fatalf("%q: a suspended account is not found by its start", name[:n])
			}
			if (Profile{Username: name, Status: StatusPending}).HasUsernamePrefix(folded) {
				t.Fatalf("%q: a pending account is found", name[:n])
			}
		}
	}
	if UsernamePrefixes("") != nil {
		t.Fatal("a cleared key has prefixes")
	}
	for _, bad := range []string{"", "a", "a b", "al@", "ålice", strings.Repeat("a", 33), "a\x00"} {
		if _, fe := FoldPrefix("prefix", bad); fe == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
