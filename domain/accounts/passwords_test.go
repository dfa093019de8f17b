package accounts

import (
	"context"
	"errors"
	"slices"
	"testing"

	"shelf/domain"
)

func TestPasswordContext(t *testing.T) {
	t.Parallel()
	var got []string
	for _, w := range passwordContext("alice.smith", "a.l+shelf@mail.example.org") {
		got = append(got, w.from+":"+w.word)
	}
	want := []string{
		"username:alice.smith", "username:alicesmith", "username:alice", "username:smith",
		"email:a.l+shelf@mail.example.org", "email:a.l+shelf", "email:alshelf",
		"email:shelf", // the email's, first: the reason names the email
		"email:mail", "email:example", "email:org",
	}
	if !slices.Equal(got, want) {
		t.Errorf("words\n%v\nwant\n%v", got, want)
	}
	if w := passwordContext("ann", "ann@example.org"); w[len(w)-1] != (contextWord{"shelf", "product"}) {
		t.Errorf("words %v, the product's name not last", w)
	}
}

// fixedGuess is a PasswordGuesser that answers one estimate and keeps the
// words it was given.
type fixedGuess struct {
	g     PasswordGuess
	words *[]string
}

func (f fixedGuess) Guess(_ string, words []string) PasswordGuess {
	*f.words = words
	return f.g
}

func TestGuessablePasswordSaysWhy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		g    PasswordGuess
		code string
	}{
		{PasswordGuess{Guesses: 1e6}, ""},
		{PasswordGuess{Guesses: 190, Weakness: WeakCommon}, "common_password"},
		{PasswordGuess{Guesses: 15000, Weakness: WeakContext, Word: "alicesmith"}, "contains_username"},
		{PasswordGuess{Guesses: 15000, Weakness: WeakContext, Word: "example"}, "contains_email"},
		{PasswordGuess{Guesses: 15000, Weakness: WeakContext, Word: "shelf"}, "contains_product_name"},
		{PasswordGuess{Guesses: 97, Weakness: WeakRepeat}, "too_guessable"},
		{PasswordGuess{Guesses: 45, Weakness: WeakSequence}, "too_guessable"},
		{PasswordGuess{Guesses: 4321, Weakness: WeakKeyboard}, "too_guessable"},
		{PasswordGuess{Guesses: 999999, Weakness: WeakWords}, "too_guessable"},
	} {
		var words []string
		a := &Service{passwords: PasswordChecks{Guesser: fixedGuess{tc.g, &words}}}
		fe := a.guessablePassword("newPassword", "whatever", "alice.smith", "alice@example.org")
		switch {
		case tc.code == "" && fe != nil:
			t.Errorf("%+v refused: %+v", tc.g, fe)
		case tc.code != "" && (fe == nil || fe.Field != "newPassword" || fe.Code != tc.code || fe.Message == ""):
			t.Errorf("%+v: %+v, want newPassword/%s", tc.g, fe, tc.code)
		}
		if !slices.Contains(words, "alicesmith") || !slices.Contains(words, "example") || !slices.Contains(words, "shelf") {
			t.Errorf("the guesser was given %v", words)
		}
	}
	if fe := (&Service{}).guessablePassword("password", "password1", "", ""); fe != nil {
		t.Errorf("without a guesser: %+v", fe)
	}
}

// breaches is a BreachedPasswords that answers n or err.
type breaches struct {
	n   int
	err error
}

func (b breaches) Breaches(context.Context, string) (int, error) { return b.n, b.err }

// warnings is a domain.Logger that counts its warnings.
type warnings struct{ n *int }

func (w warnings) Warn(context.Context, string, ...string) { *w.n++ }

func TestBreachedPassword(t *testing.T) {
	t.Parallel()
	down := errors.New("pwned passwords: answered 500 Internal Server Error")
	for _, tc := range []struct {
		name     string
		checks   PasswordChecks
		want     error // matched with errors.Is; nil: passes
		code     string
		warnings int
	}{
		{"off", PasswordChecks{}, nil, "", 0},
		{"never breached", PasswordChecks{Breached: breaches{}}, nil, "", 0},
		{"breached", PasswordChecks{Breached: breaches{n: 3}}, domain.ErrInvalid, "breached", 0},
		{"breached, and closed", PasswordChecks{Breached: breaches{n: 1}, BreachFailClosed: true}, domain.ErrInvalid, "breached", 0},
		{"down, open", PasswordChecks{Breached: breaches{err: down}}, nil, "", 1},
		{"down, closed", PasswordChecks{Breached: breaches{err: down}, BreachFailClosed: true}, domain.ErrUnavailable, "password_check_unavailable", 1},
	} {
		n := 0
		a := &Service{passwords: tc.checks, log: warnings{&n}}
		err := a.breachedPassword(context.Background(), "password", "hunter2hunter2")
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		} else {
			var de *domain.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &de) ||
				(de.Code != tc.code && (len(de.Fields) != 1 || de.Fields[0].Field != "password" || de.Fields[0].Code != tc.code)) {
				t.Errorf("%s: %v, want %v %s", tc.name, err, tc.want, tc.code)
			}
		}
		if n != tc.warnings {
			t.Errorf("%s: %d warnings, want %d", tc.name, n, tc.warnings)
		}
	}
}
