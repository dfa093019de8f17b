package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestOneHomeLineCannotFillALoginsBudget: a client address is an IPv4
// address or an IPv6 /64, and a home line is often a /56, 256 of them.
// Guessing at ann's login from forty /64s of one /56, one guess each
// (well inside each /64's budget), filled the login's budget (12), which
// the limits assume takes three separate addresses, and kept the owner
// out for the window. A /56 now has a budget of its own at each login,
// twice an address's and below the login's: past it the line is refused,
// and the owner, from elsewhere, logs in.
func TestOneHomeLineCannotFillALoginsBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, _, _ := newThrottled(t)
	counted := 0
	for i := range 40 {
		_, err := svc.Login(ctx, "ann", "wrong", from(fmt.Sprintf("2001:db8:1:1%02x::1", i)))
		switch {
		case errors.Is(err, accounts.ErrInvalidCredentials):
			counted++
		case !errors.Is(err, domain.ErrTooManyAttempts):
			t.Fatalf("guess %d from the line: %v", i, err)
		}
	}
	if want := min(2*perAddress, perLogin-1); counted != want {
		t.Errorf("one /56 had %d wrong passwords counted at the login, want %d", counted, want)
	}
	if _, err := svc.Login(ctx, "ann", password, from("198.51.100.7")); err != nil {
		t.Errorf("the owner, from another address, after the line's guesses: %v", err)
	}
}
