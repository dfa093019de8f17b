package domain

import (
	"strings"
	"testing"
)

// The fuzz tests' seed corpora run with every `go test`; `go test -fuzz`
// explores further.

func FuzzNormalizeUsername(f *testing.F) {
	for _, s := range []string{"Alice", "a.b_c-d", "ab", "al\u200bice", "Ａlice", strings.Repeat("x", 33), "", "-ab", "ab-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		display, key, fe := NormalizeUsername(s)
		if fe != nil {
			if fe.Field != "username" || fe.Code == "" {
				t.Fatalf("%q: bad field error %+v", s, fe)
			}
			return
		}
		if display != s || key != strings.ToLower(s) || HasInvisible(key) {
			t.Fatalf("%q: display %q key %q", s, display, key)
		}
		if _, again, fe := NormalizeUsername(key); fe != nil || again != key {
			t.Fatalf("%q: key %q is not stable (%q, %v)", s, key, again, fe)
		}
	})
}

func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"Al@Example.ORG", "ＡＬ@ｅｘａｍｐｌｅ.org", "Straße@example.org", "a\u202e@example.org", "@x.org", "a@b", "\"q u\"@example.org", "a@[127.0.0.1]", "a@xn--bcher-kva.de", "a@xn--bcher-kvß.de", "a@ex\u3002ample.org"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		display, key, fe := NormalizeEmail(s)
		if fe != nil {
			if fe.Field != "email" || fe.Code == "" {
				t.Fatalf("%q: bad field error %+v", s, fe)
			}
			return
		}
		if HasInvisible(key) || HasInvisible(display) {
			t.Fatalf("%q: invisible characters kept in %q / %q", s, display, key)
		}
		// The key of an accepted address, itself accepted, keys to itself:
		// two spellings that normalize alike collide for good.
		if _, again, fe := NormalizeEmail(key); fe == nil && again != key {
			t.Fatalf("%q: key %q keys to %q", s, key, again)
		}
	})
}
