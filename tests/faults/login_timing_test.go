package faults

import (
	"context"
	"errors"
	"slices"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAnUnknownLoginReadsWhatAKnownOneReads: a wrong password at a
// known login read the account (its credentials, beside its factors)
// between the claim and the hash, where an unknown login went from the
// claim's read straight to its hash: a round trip more, about a
// millisecond beside argon2's spread, that told a patient guesser which
// logins exist. An unknown login now reads an account nobody holds, so
// both make the same store calls, and answer the same.
func TestAnUnknownLoginReadsWhatAKnownOneReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newWorld()
	m.rewire(func(st *memstore.Store, c *accounts.Config) { c.Factors = st.Factors() })
	if err := m.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	callsOf := func(login string) ([]string, error) {
		var calls []string
		m.store.FaultAt = func(_ int, name string) memstore.Fault {
			calls = append(calls, name)
			return memstore.None
		}
		defer func() { m.store.FaultAt = nil }()
		_, err := m.svc.Login(ctx, login, "not the password", accounts.Client{})
		slices.Sort(calls)
		return calls, err
	}
	known, knownErr := callsOf("ann")
	for _, login := range []string{"nobody", "nobody@example.org"} {
		unknown, err := callsOf(login)
		if !errors.Is(err, accounts.ErrInvalidCredentials) || !errors.Is(knownErr, accounts.ErrInvalidCredentials) {
			t.Errorf("the answers: %v to %q, %v to a wrong password, want both %v", err, login, knownErr, accounts.ErrInvalidCredentials)
		}
		if !slices.Equal(unknown, known) {
			t.Errorf("an unknown login (%q) made the store calls %v, a known one with a wrong password %v", login, unknown, known)
		}
	}
}
