package password

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"github.com/trustelem/zxcvbn/match"
	"golang.org/x/text/unicode/norm"

	"shelf/domain/accounts"
)

// Guesser estimates how guessable a password is with zxcvbn
// (github.com/trustelem/zxcvbn v1.0.1, MIT: a port of Dropbox's zxcvbn
// 4.4.2 that gives its guesses and scores). Its lists ship in the module:
// the 30 000 most common passwords of Xato's corpus of 10 million breached
// ones, English words from Wikipedia and from TV and film, and the US
// census's names and surnames; and it finds keyboard rows and patterns,
// repeats, sequences, dates and l33t spellings. A Guesser is safe for
// concurrent use (zxcvbn keeps no state between calls).
type Guesser struct{}

var _ accounts.PasswordGuesser = Guesser{}

// GuessRunes is how much of a password Guesser reads: the first 24
// characters. zxcvbn's cost grows with the square of the length, times one
// pass per l33t reading of the symbols present (hundreds with symbols
// chosen for it): 128 characters cost over a second of CPU, an open door
// on signup. A password whose first 24 characters take enough guesses is
// at least as strong whole; one whose first 24 characters alone are
// guessable (a long repeat, sequence or row of keys) is refused.
const GuessRunes = 24

// Guess implements accounts.PasswordGuesser. The password is read in NFKC
// (full-width or styled letters are the letters attackers try), case kept
// (zxcvbn counts capitals as the variations they are).
func (Guesser) Guess(password string, words []string) accounts.PasswordGuess {
	password = norm.NFKC.String(password)
	if utf8.RuneCountInString(password) > GuessRunes {
		password = string([]rune(password)[:GuessRunes])
	}
	years := recentYears(time.Now().Year())
	r := zxcvbn.PasswordStrength(password, append(slices.Clip(words), years...))
	g := accounts.PasswordGuess{Guesses: r.Guesses, Weakness: accounts.WeakGuessable}
	// The reason is the account's own word if the estimate uses one (what
	// the person can act on first), else the kind of the longest part
	// that is not brute force.
	longest := 0
	for _, m := range r.Sequence {
		year := m.DictionaryName == "user_inputs" && slices.Contains(years, m.MatchedWord)
		if m.DictionaryName == "user_inputs" && !year {
			return accounts.PasswordGuess{Guesses: r.Guesses, Weakness: accounts.WeakContext, Word: m.MatchedWord}
		}
		if n := utf8.RuneCountInString(m.Token); m.Pattern != "bruteforce" && n > longest {
			longest, g.Weakness = n, weakness(m)
			if year {
				g.Weakness = accounts.WeakDate
			}
		}
	}
	return g
}

// recentYears are the years from 2020 to next year: zxcvbn 4.4.2 (2017)
// knows years up to 2019 only (its recent_year pattern), and people put
// this year in their passwords ("summer2026"). They are given as the
// likeliest words, as an attacker would try them.
func recentYears(now int) []string {
	var ys []string
	for y := 2020; y <= now+1; y++ {
		ys = append(ys, strconv.Itoa(y))
	}
	return ys
}

// weakness is the kind of one part of zxcvbn's estimate.
func weakness(m *match.Match) accounts.Weakness {
	switch m.Pattern {
	case "dictionary":
		if m.DictionaryName == "passwords" {
			return accounts.WeakCommon
		}
		return accounts.WeakWords
	case "repeat":
		return accounts.WeakRepeat
	case "sequence":
		return accounts.WeakSequence
	case "spatial":
		return accounts.WeakKeyboard
	case "date", "regex":
		return accounts.WeakDate
	}
	return accounts.WeakGuessable
}
