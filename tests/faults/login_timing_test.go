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
	m := annWithFactors(t)
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

// TestAnUnknownLoginsAccountReadThatFailsIsAnsweredAsAKnownOnes: an
// unknown login reads an account nobody holds so that it makes the
// calls a known one makes, but it let that read's failure go: with the
// node failing reads (overloaded by the attacker, or by anyone), a known
// login's read failed and answered 503, an unknown one's failed and went
// on to its hash and a 401. Probing a login a few times while the node
// struggled told whether it exists. Now a failed read answers the same
// at both.
func TestAnUnknownLoginsAccountReadThatFailsIsAnsweredAsAKnownOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := annWithFactors(t)
	answer := func(login string) string {
		m.store.FaultAt = func(_ int, name string) memstore.Fault {
			if name == "users.credentials" {
				return memstore.FailBefore
			}
			return memstore.None
		}
		defer func() { m.store.FaultAt = nil }()
		_, err := m.svc.Login(ctx, login, "not the password", accounts.Client{})
		return told(err)
	}
	for _, pair := range [][2]string{{"ann", "nobody"}, {"ann@example.org", "nobody@example.org"}} {
		if known, unknown := answer(pair[0]), answer(pair[1]); known != unknown {
			t.Errorf("with the account's read failing, login %q is answered %s and the unknown %q %s: the answer tells which accounts exist", pair[0], known, pair[1], unknown)
		}
	}
}

// annWithFactors is a world of one account, ann, whose service reads
// second factors (so a login reads them beside the account).
func annWithFactors(t *testing.T) *world {
	t.Helper()
	m := newWorld()
	m.rewire(func(st *memstore.Store, c *accounts.Config) { c.Factors = st.Factors() })
	if err := m.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	return m
}
