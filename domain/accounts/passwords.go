package accounts

import (
	"context"
	"strings"
	"unicode/utf8"

	"shelf/domain"
)

// Passwords people cannot guess (docs/design/passwords.md, NIST SP
// 800-63B 5.1.1.2): besides its length, a new password is refused when an
// attacker would find it within minPasswordGuesses guesses (a common or
// breached password, a small change of one, a repeat, a sequence, a row of
// keys, a date, or the account's own words: its username, its email, the
// product's name), and, with SHELF_HIBP_URL, when Have I Been Pwned has
// seen it in a breach. Every path that sets a password applies them:
// signup, a change, a reset.

// PasswordGuesser estimates how many guesses an attacker needs to find a
// password: zxcvbn's estimate in production (internal/password), over its
// lists of common passwords, words and names, and its repeat, sequence,
// keyboard and date patterns.
type PasswordGuesser interface {
	// Guess estimates password, counting words (lower case) as the
	// likeliest guesses of all: they are the account's own.
	Guess(password string, words []string) PasswordGuess
}

// PasswordGuess is an estimate of a password.
type PasswordGuess struct {
	// Guesses is how many guesses find it.
	Guesses float64
	// Weakness is what the cheapest part of it is.
	Weakness Weakness
	// Word is the account's own word it contains (WeakContext).
	Word string
}

// Weakness says what makes a password easy to guess.
type Weakness int

const (
	// WeakGuessable: nothing more specific (short).
	WeakGuessable Weakness = iota
	// WeakCommon: a common password, or a small change of one.
	WeakCommon
	// WeakContext: one of the account's own words (PasswordGuess.Word).
	WeakContext
	// WeakWords: common words or names.
	WeakWords
	// WeakRepeat: repeated characters or words (aaaa, abcabc).
	WeakRepeat
	// WeakSequence: a sequence (abcd, 4321).
	WeakSequence
	// WeakKeyboard: a row or a pattern of keys (qwerty, zxcvbn).
	WeakKeyboard
	// WeakDate: a date or a year.
	WeakDate
)

// BreachedPasswords tells whether a password appears in known breaches:
// Have I Been Pwned's range API in production (SHELF_HIBP_URL), which is
// sent the first five hex digits of the password's SHA-1 and nothing else.
type BreachedPasswords interface {
	// Breaches is how often the breaches it knows hold password (0: never).
	Breaches(ctx context.Context, password string) (int, error)
}

// PasswordChecks are the checks of a new password beyond its length and
// the identifiers (Config.Passwords).
type PasswordChecks struct {
	// Guesser refuses guessable passwords; nil checks nothing more.
	Guesser PasswordGuesser
	// Breached refuses breached passwords; nil is off (SHELF_HIBP_URL
	// empty).
	Breached BreachedPasswords
	// BreachFailClosed: when Breached cannot answer, the password is
	// refused with 503 ErrPasswordCheckUnavailable (SHELF_HIBP_FAIL=closed).
	// Otherwise it passes with the Guesser's checks alone, and the failure
	// is logged.
	BreachFailClosed bool
}

// minPasswordGuesses is the fewest guesses a new password may take: zxcvbn's
// score 2 ("protection from unthrottled online attacks"). It lets a random
// 8-character password through (10^8) and refuses the 30 000 most common
// passwords of the breaches whatever their length. Score 3 begins at 10^8,
// exactly what a random 8-character password takes: raising it would leave
// the shortest random passwords the length rule allows no margin.
const minPasswordGuesses = 1e6

// productName is the service's own name, a word no password should be
// made of.
const productName = "shelf"

// ErrPasswordCheckUnavailable answers a new password when the breach check
// cannot (SHELF_HIBP_FAIL=closed): nothing was changed; try again.
var ErrPasswordCheckUnavailable = &domain.Error{Kind: domain.ErrUnavailable, Code: "password_check_unavailable",
	Message: "The check of the password against known breaches could not answer; try again."}

// contextWord is one of an account's own words and where it comes from.
type contextWord struct {
	word, from string // from: "username", "email" or "product"
}

// passwordContext lists the account's own words: the username, its parts
// and its parts run together (alice.smith: alice, smith, alicesmith), the
// same of the email's local part, the email, the labels of its domain,
// and the product's name. Parts shorter than 3 characters are left out
// (they would mark every "co" or "42" as the account's).
func passwordContext(usernameKey, emailKey string) []contextWord {
	var words []contextWord
	seen := map[string]bool{}
	add := func(from string, ws ...string) {
		for _, w := range ws {
			if utf8.RuneCountInString(w) >= 3 && !seen[w] {
				seen[w] = true
				words = append(words, contextWord{w, from})
			}
		}
	}
	parts := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("._-+", r) })
	}
	add("username", usernameKey, strings.Join(parts(usernameKey), ""))
	add("username", parts(usernameKey)...)
	if at := strings.LastIndexByte(emailKey, '@'); at >= 0 {
		local, host := emailKey[:at], emailKey[at+1:]
		add("email", emailKey, local, strings.Join(parts(local), ""))
		add("email", parts(local)...)
		add("email", strings.Split(host, ".")...)
	}
	add("product", productName)
	return words
}

// guessablePassword reports why a new password is too easy to guess for
// the account with these keys, or nil.
func (a *Service) guessablePassword(field, password, usernameKey, emailKey string) *domain.FieldError {
	if a.passwords.Guesser == nil {
		return nil
	}
	ctxWords := passwordContext(usernameKey, emailKey)
	words := make([]string, len(ctxWords))
	for i, w := range ctxWords {
		words[i] = w.word
	}
	g := a.passwords.Guesser.Guess(password, words)
	if g.Guesses >= minPasswordGuesses {
		return nil
	}
	fe := &domain.FieldError{Field: field, Code: "too_guessable"}
	switch g.Weakness {
	case WeakCommon:
		fe.Code, fe.Message = "common_password", "is one of the most common passwords, or a small change of one"
	case WeakContext:
		from := "product"
		for _, w := range ctxWords {
			if w.word == g.Word {
				from = w.from
				break
			}
		}
		switch from {
		case "username":
			fe.Code, fe.Message = "contains_username", "is too close to the username"
		case "email":
			fe.Code, fe.Message = "contains_email", "is too close to the email address"
		default:
			fe.Code, fe.Message = "contains_product_name", "is too close to the name of this service ("+productName+")"
		}
	case WeakWords:
		fe.Message = "is too easy to guess: common words or names; add more words, or less common ones"
	case WeakRepeat:
		fe.Message = "is too easy to guess: repeated characters or words (such as aaaa or abcabc)"
	case WeakSequence:
		fe.Message = "is too easy to guess: a sequence (such as abcd or 4321)"
	case WeakKeyboard:
		fe.Message = "is too easy to guess: a row or pattern of keys (such as qwerty)"
	case WeakDate:
		fe.Message = "is too easy to guess: a date or a year"
	default:
		fe.Message = "is too easy to guess"
	}
	return fe
}

// passwordRules applies the rules of a new password that need nothing
// but the process, for the account with these keys: the length and the
// identifiers (domain.CheckPassword), then guessability. field is the JSON
// field checked.
func (a *Service) passwordRules(field, password, usernameKey, emailKey string) *domain.FieldError {
	if fe := domain.CheckPassword(field, password, usernameKey, emailKey); fe != nil {
		return fe
	}
	return a.guessablePassword(field, password, usernameKey, emailKey)
}

// breachedPassword refuses a password that known breaches hold (with
// SHELF_HIBP_URL): an ErrInvalid naming field, ErrPasswordCheckUnavailable,
// or nil. Asked last, once passwordRules pass: it is the one check that
// costs a request to another service.
func (a *Service) breachedPassword(ctx context.Context, field, password string) error {
	if a.passwords.Breached == nil {
		return nil
	}
	n, err := a.passwords.Breached.Breaches(ctx, password)
	switch {
	case err != nil && a.passwords.BreachFailClosed:
		a.log.Warn(ctx, "breached-password check failed; the password is refused (SHELF_HIBP_FAIL=closed)", "error", err.Error())
		return ErrPasswordCheckUnavailable
	case err != nil:
		a.log.Warn(ctx, "breached-password check failed; the password passes on the local checks (SHELF_HIBP_FAIL=open)", "error", err.Error())
		return nil
	case n > 0:
		return domain.Invalid("The password is not valid.", domain.FieldError{Field: field, Code: "breached",
			Message: "appears in known data breaches (Have I Been Pwned), so attackers try it: choose another"})
	}
	return nil
}
