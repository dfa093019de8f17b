package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
)

// throttledSession is newThrottled's ann logged in from one address: the
// request's context (with that client) and her session's principal.
func throttledSession(t *testing.T) (*accounts.Service, *countingHasher, domain.User, context.Context, domain.Principal) {
	t.Helper()
	svc, _, h, u := newThrottled(t)
	ctx := accounts.WithClient(context.Background(), from("192.0.2.1"))
	res, err := svc.Login(ctx, "ann", password, from("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	return svc, h, u, ctx, domain.Principal{UserID: u.ID, Session: domain.Session{TokenHash: accounts.HashToken(res.Token), UserID: u.ID}}
}

// TestEveryCurrentPasswordIsThrottled: the current passwords a new email,
// a new username and the account's deletion take (U9,
// docs/design/reauthentication.md) are
// counted with the password change's, per account: a stolen session gets
// 5 guesses in all, whatever it asks with them (one wrong guess of each,
// the password change's included, and a fifth); the 6th is refused
// before the password is checked, the right one included, whichever of
// the four asks it. The account keeps its email, username and password.
func TestEveryCurrentPasswordIsThrottled(t *testing.T) {
	t.Parallel()
	svc, h, u, ctx, p := throttledSession(t)
	wrong, email, username := "wrong", "thief@example.net", "thief"
	// Every guess is refused before the deletion reaches another service.
	life := lifecycle.New(lifecycle.Config{}, svc, nil, nil, nil, lifecycle.Stores{})
	guesses := []func(current *string) error{
		func(current *string) error {
			_, err := svc.UpdateUser(ctx, p, u.ID, accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: current}})
			return err
		},
		func(current *string) error {
			_, err := svc.UpdateUser(ctx, p, u.ID, accounts.UpdateInput{Username: &username, Proof: accounts.Proof{CurrentPassword: current}})
			return err
		},
		func(current *string) error {
			_, err := life.DeleteUser(ctx, p, u.ID, accounts.Proof{CurrentPassword: current})
			return err
		},
		func(current *string) error {
			return svc.ChangePassword(ctx, p, u.ID, accounts.Proof{CurrentPassword: current}, "a quite new passphrase")
		},
	}
	for i := range perAddress {
		if err := guesses[i%len(guesses)](&wrong); !errors.Is(err, accounts.ErrWrongCurrentPassword) {
			t.Fatalf("wrong %d: %v", i, err)
		}
	}
	right := password
	before := h.runs.Load()
	for i, guess := range guesses {
		refusedFor(t, "a current password past the limit", guess(&right))
		if h.runs.Load() != before {
			t.Fatalf("guess %d: a refused check verified the password", i)
		}
	}
	if got, err := svc.Me(ctx, domain.Principal{UserID: u.ID}); err != nil || got.Email != "ann@example.org" || got.Username != "ann" {
		t.Fatalf("after the refused guesses: %+v %v", got, err)
	}
	// A login counts under its own scope: the password is still the old.
	if _, err := svc.Login(ctx, "ann", password, from("192.0.2.1")); err != nil {
		t.Fatalf("the password after the refused guesses: %v", err)
	}
}

// TestAStolenSessionsGuessesDoNotLockTheOwnersProofsOut: a thief holds a
// stolen session of ann's and not her password. He guesses it as the
// current password of her changes from many addresses, five each, until
// the account's whole budget of checks is spent: counted by the account,
// every proof of hers (a password change, a new address, a deletion)
// answered 429 for the window, and again while his session lived, a
// lockout a stolen session alone could keep up. The checks count by the
// session they come with: his guesses spend his session's budget, and
// her own session proves her password at once.
func TestAStolenSessionsGuessesDoNotLockTheOwnersProofsOut(t *testing.T) {
	t.Parallel()
	svc, _, u, _, stolen := throttledSession(t)
	wrong := "wrong"
	for i := range perLogin {
		addr := fmt.Sprintf("198.51.100.%d", i/perAddress+1)
		ctx := accounts.WithSession(accounts.WithClient(context.Background(), from(addr)), stolen.Session.TokenHash)
		err := svc.ChangePassword(ctx, stolen, u.ID, accounts.Proof{CurrentPassword: &wrong}, "a quite new passphrase")
		if !errors.Is(err, accounts.ErrWrongCurrentPassword) {
			t.Fatalf("the thief's guess %d from %s: %v", i, addr, err)
		}
	}
	thief := accounts.WithSession(accounts.WithClient(context.Background(), from("198.51.100.200")), stolen.Session.TokenHash)
	refusedFor(t, "the thief's guess past his session's budget",
		svc.ChangePassword(thief, stolen, u.ID, accounts.Proof{CurrentPassword: &wrong}, "a quite new passphrase"))

	res, err := svc.Login(context.Background(), "ann", password, from("192.0.2.1"))
	if err != nil {
		t.Fatal(err)
	}
	hers := domain.Principal{UserID: u.ID, Session: domain.Session{TokenHash: accounts.HashToken(res.Token), UserID: u.ID}}
	ctx := accounts.WithSession(accounts.WithClient(context.Background(), from("192.0.2.1")), hers.Session.TokenHash)
	right := password
	if err := svc.ChangePassword(ctx, hers, u.ID, accounts.Proof{CurrentPassword: &right}, "a quite new passphrase"); err != nil {
		t.Errorf("ann's password change from her own session after the thief's guesses: %v", err)
	}
}
