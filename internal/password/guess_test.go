package password

import (
	"context"
	"strings"
	"sync"
	"testing"

	"shelf/domain/accounts"
)

// aliceWords are the account's own words as accounts builds them for
// alice.smith / alice.smith@example.org.
var aliceWords = []string{"alice.smith", "alicesmith", "alice", "smith", "alice.smith@example.org", "example", "org", "shelf"}

func TestGuessRefusesWhatAttackersTryFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pw   string
		want accounts.Weakness
		word string
	}{
		// The first four any guesser tries, and their kin.
		{"password1", accounts.WeakCommon, ""},
		{"12345678", accounts.WeakCommon, ""},
		{"qwertyuiop", accounts.WeakCommon, ""},
		{"aaaaaaaa", accounts.WeakRepeat, ""},
		{"P@ssw0rd", accounts.WeakCommon, ""},
		{"Password123!", accounts.WeakCommon, ""},
		{"ｐａｓｓｗｏｒｄ１", accounts.WeakCommon, ""}, // full-width: NFKC reads it as password1
		{"abcabcabcabc", accounts.WeakRepeat, ""},
		{"asdfghjkl;'", accounts.WeakKeyboard, ""},
		{"abcdefghijk", accounts.WeakSequence, ""},
		{"19841984", accounts.WeakRepeat, ""},
		// The account's own words.
		{"alicesmith2024", accounts.WeakContext, "alicesmith"},
		{"Alice.Smith!", accounts.WeakContext, "alice.smith"},
		{"shelf2024", accounts.WeakContext, "shelf"},
		{"alice2024", accounts.WeakContext, "alice"},
		{"example123", accounts.WeakContext, "example"},
		// Years zxcvbn 4.4.2 does not know (recentYears).
		{"summer2025", accounts.WeakCommon, ""},
		// Long, but the first GuessRunes characters are a repeat.
		{strings.Repeat("a", 128), accounts.WeakRepeat, ""},
		{strings.Repeat("password", 16), accounts.WeakRepeat, ""},
	} {
		g := Guesser{}.Guess(tc.pw, aliceWords)
		if g.Guesses >= 1e6 || g.Weakness != tc.want || g.Word != tc.word {
			t.Errorf("%q: %+v, want fewer than 1e6 guesses, weakness %d, word %q", tc.pw, g, tc.want, tc.word)
		}
	}
}

func TestGuessLetsStrongPasswordsThrough(t *testing.T) {
	t.Parallel()
	for _, pw := range []string{
		"correct horse", // docs/api.md's example
		"correct horse battery",
		"a brand new passphrase",
		"k9#Lm2!q",                    // random, the shortest length allowed
		"alice in wonderland is long", // her name, and much more
		"Wh@t a lovely b00kshelf",
		"Ünïcödé pässwörd ✓ 日本語",
		strings.Repeat("aaaa", 5) + "k9#Lm2!q" + strings.Repeat("b", 90), // strong inside the first 24
	} {
		if g := (Guesser{}).Guess(pw, aliceWords); g.Guesses < 1e6 {
			t.Errorf("%q: %+v, want at least 1e6 guesses", pw, g)
		}
	}
}

// TestGuessReadsOnlyAPrefix: what lies past GuessRunes characters changes
// nothing (the cost stays bounded whatever the length).
func TestGuessReadsOnlyAPrefix(t *testing.T) {
	t.Parallel()
	prefix := "Wh@t a lovely b00kshelf!"[:GuessRunes]
	want := Guesser{}.Guess(prefix, aliceWords)
	for _, tail := range []string{"x", strings.Repeat("4@8({[<3&69!1|7+0$5%2", 5)} {
		if got := (Guesser{}).Guess(prefix+tail, aliceWords); got != want {
			t.Errorf("with %d more characters: %+v, want %+v", len(tail), got, want)
		}
	}
}

// TestGuessConcurrently: one Guesser serves every request (run with -race).
func TestGuessConcurrently(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			pw := []string{"password1", "correct horse battery", "alicesmith2024", "aaaaaaaa"}[i%4]
			want := Guesser{}.Guess(pw, aliceWords)
			for range 20 {
				if got := (Guesser{}).Guess(pw, aliceWords); got != want {
					t.Errorf("%q: %+v then %+v", pw, want, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// The cost of the checks per signup, beside the hash they precede:
//
//	go test -run '^$' -bench 'Guess|Hash' -benchmem ./internal/password/
func BenchmarkGuess(b *testing.B) {
	for _, c := range []struct{ name, pw string }{
		{"common", "password1"},
		{"passphrase", "correct horse battery staple"},
		{"random16", "k9#Lm2!qZx4$Vb7&"},
		// The dearest input there is: every symbol zxcvbn reads as a
		// letter (hundreds of l33t readings), GuessRunes of them.
		{"worst", strings.Repeat("4@8({[<3&69!1|7+0$5%2", 7)[:128]},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				Guesser{}.Guess(c.pw, aliceWords)
			}
		})
	}
}

func BenchmarkHash(b *testing.B) {
	h := New(DefaultParams, 1)
	for b.Loop() {
		if _, err := h.Hash(context.Background(), "correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}
