package factor_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/testkit/softkey"
)

const origin = "http://localhost:8080"

func newPasskeys(t *testing.T) *factor.Passkeys {
	t.Helper()
	p, err := factor.NewPasskeys("localhost", []string{origin}, "shelf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// register makes a passkey of key for userID: the confirmed factor as
// the store would keep it.
func register(t *testing.T, p *factor.Passkeys, key *softkey.Key, userID string, have []accounts.Factor) accounts.Factor {
	t.Helper()
	options, state, err := p.Register(userID, "ann", have)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := key.Create(options)
	if err != nil {
		t.Fatal(err)
	}
	cred, count, err := p.Registered(userID, "ann", state, have, answer)
	if err != nil {
		t.Fatalf("registered: %v", err)
	}
	return accounts.Factor{UserID: userID, ID: "fac_" + string(rune('a'+len(have))), Kind: accounts.FactorPasskey, Sealed: cred,
		LastStep: count, ConfirmedAt: time.Now()}
}

// sign asks key for an assertion under challenge over factors.
func sign(t *testing.T, p *factor.Passkeys, key *softkey.Key, userID string, challenge []byte, factors []accounts.Factor) []byte {
	t.Helper()
	options, err := p.Options(userID, challenge, factors)
	if err != nil || options == nil {
		t.Fatalf("options: %s %v", options, err)
	}
	answer, err := key.Get(options)
	if err != nil {
		t.Fatal(err)
	}
	return answer
}

func challenge(b byte) []byte {
	c := make([]byte, 32)
	for i := range c {
		c[i] = b
	}
	return c
}

// A passkey registered is used under its challenge, its counter moving
// on; an answer is refused under another challenge, from another origin,
// for another account, and once the counter went back (a copy).
func TestPasskeyRegisterAndVerify(t *testing.T) {
	p := newPasskeys(t)
	key := softkey.New(origin)
	f := register(t, p, key, "usr_ann", nil)
	factors := []accounts.Factor{f}

	answer := sign(t, p, key, "usr_ann", challenge(1), factors)
	id, count, err := p.Verify("usr_ann", challenge(1), factors, answer)
	if err != nil || id != f.ID || count <= f.LastStep {
		t.Fatalf("verify: %q %d %v (stored count %d)", id, count, err, f.LastStep)
	}
	factors[0].LastStep = count

	refused := func(what string, user string, c []byte, answer []byte) {
		t.Helper()
		if _, _, err := p.Verify(user, c, factors, answer); !errors.Is(err, accounts.ErrPasskeyRefused) {
			t.Fatalf("%s: %v, want refused", what, err)
		}
	}
	refused("an answer under another challenge", "usr_ann", challenge(2), sign(t, p, key, "usr_ann", challenge(1), factors))
	refused("an answer for another account", "usr_bob", challenge(1), sign(t, p, key, "usr_ann", challenge(1), factors))
	refused("garbage", "usr_ann", challenge(1), []byte(`{"id":"x"}`))

	key.Origin = "http://evil.localhost:9999"
	refused("an answer from another origin", "usr_ann", challenge(1), sign(t, p, key, "usr_ann", challenge(1), factors))
	key.Origin = origin

	// A copy of the key reports a counter at or under the stored one.
	key.Rewind(10)
	refused("a counter gone back", "usr_ann", challenge(1), sign(t, p, key, "usr_ann", challenge(1), factors))
}

// A key that keeps no counter (synced passkeys) passes at 0 each time;
// registration excludes the account's passkeys.
func TestPasskeyWithoutCounterAndExclusion(t *testing.T) {
	p := newPasskeys(t)
	key := softkey.New(origin)
	key.NoCounter = true
	f := register(t, p, key, "usr_ann", nil)
	for range 3 {
		_, count, err := p.Verify("usr_ann", challenge(3), []accounts.Factor{f}, sign(t, p, key, "usr_ann", challenge(3), []accounts.Factor{f}))
		if err != nil || count != 0 {
			t.Fatalf("a key without a counter: %d %v", count, err)
		}
	}
	options, _, err := p.Register("usr_ann", "ann", []accounts.Factor{f})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := key.Create(options); err == nil {
		t.Fatal("registering a second passkey on the same authenticator was not excluded")
	}
}

// The relying party is checked at start.
func TestRelyingPartyChecked(t *testing.T) {
	for _, c := range []struct {
		id      string
		origins []string
		ok      bool
	}{
		{"localhost", []string{"http://localhost:8080"}, true},
		{"example.com", []string{"https://app.example.com", "https://example.com"}, true},
		{"127.0.0.1", []string{"http://127.0.0.1:8080"}, false},
		{"example.com", []string{"https://example.org"}, false},
		{"example.com", []string{"http://app.example.com"}, false},
		{"example.com", []string{"https://app.example.com/console"}, false},
		{"example.com", nil, false},
	} {
		if err := factor.CheckRelyingParty(c.id, c.origins); (err == nil) != c.ok {
			t.Errorf("%s %v: %v, want ok=%v", c.id, c.origins, err, c.ok)
		}
	}
}

// An answer registering a credential the account has a passkey of
// already is refused, whatever the authenticator made of the options'
// exclusion: two factors of one credential, the later (another key
// under the same id) hid the earlier from Verify, and the owner's
// passkey stopped proving her.
func TestPasskeyOfAKnownCredentialIsRefused(t *testing.T) {
	p := newPasskeys(t)
	f := register(t, p, softkey.New(origin), "usr_ann", nil)
	var known struct{ ID []byte }
	if err := json.Unmarshal([]byte(f.Sealed), &known); err != nil || len(known.ID) == 0 {
		t.Fatalf("the stored credential's id: %v", err)
	}
	rogue := softkey.New(origin)
	rogue.NextID = known.ID
	options, state, err := p.Register("usr_ann", "ann", nil) // no exclusion to obey
	if err != nil {
		t.Fatal(err)
	}
	answer, err := rogue.Create(options)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Registered("usr_ann", "ann", state, []accounts.Factor{f}, answer); !errors.Is(err, accounts.ErrPasskeyRefused) {
		t.Fatalf("a second passkey of a known credential: %v, want refused", err)
	}
}
