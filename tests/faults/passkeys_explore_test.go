package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
	"shelf/tests/testkit/softkey"
)

const passkeyOrigin = "http://localhost:8080"

// passkeyWorld is ann with a passkey as her only factor (key holds it),
// and a login's challenge with its options, waiting for the key.
type passkeyWorld struct {
	*factorWorld
	key     *softkey.Key
	options []byte
	// answer is the key's answer to the challenge: a client's retry
	// sends the same body again.
	answer []byte
}

// newPasskeys is the relying party of the worlds.
func newPasskeys(t *testing.T) *factor.Passkeys {
	t.Helper()
	p, err := factor.NewPasskeys("localhost", []string{passkeyOrigin}, "shelf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newPasskeyWorld is ann with factors on and a passkey pending
// (registered is false) or confirmed with a login's challenge waiting.
func newPasskeyWorld(t *testing.T, registered bool) *passkeyWorld {
	t.Helper()
	return newPasskeyWorldOf(t, registered, softkey.New(passkeyOrigin))
}

// newPasskeyWorldOf is newPasskeyWorld with the passkey in key.
func newPasskeyWorldOf(t *testing.T, registered bool, key *softkey.Key) *passkeyWorld {
	t.Helper()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, func(st *memstore.Store, c *accounts.Config) {
		c.Passkeys = newPasskeys(t)
		c.Throttle = accounts.Throttle{Store: st.Attempts(), PerAddress: 5, PerLogin: 50, Window: 15 * 60e9}
		c.Audit = st.AccountAudit()
	})
	w := &passkeyWorld{factorWorld: &factorWorld{mailWorld: m, totp: totp}, key: key}
	ctx := context.Background()
	p := domain.Principal{UserID: m.ann.ID}
	e, err := m.svc.EnrolPasskey(ctx, p, m.ann.ID, "laptop", accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	w.fac = accounts.Factor{ID: e.Factor.ID}
	if w.answer, err = w.key.Create(e.PasskeyOptions); err != nil {
		t.Fatal(err)
	}
	if !registered {
		return w
	}
	c, err := m.svc.ConfirmPasskey(ctx, p, m.ann.ID, e.Factor.ID, w.answer)
	if err != nil || len(c.RecoveryCodes) != 10 {
		t.Fatalf("the registration: %+v %v", c, err)
	}
	w.recovery = c.RecoveryCodes
	r, err := m.svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil || r.Challenge == "" || r.Passkey == nil {
		t.Fatalf("a login with a passkey: %+v %v", r, err)
	}
	w.challenge, w.options = r.Challenge, r.Passkey
	if w.answer, err = w.key.Get(w.options); err != nil {
		t.Fatal(err)
	}
	return w
}

// storedCount reads the passkey's stored signature count.
func (w *passkeyWorld) storedCount(t *testing.T) (int64, bool) {
	t.Helper()
	factors, _, err := w.store.Factors().Read(context.Background(), w.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range factors {
		if f.ID == w.fac.ID && f.Confirmed() {
			return f.LastStep, true
		}
	}
	return 0, false
}

func passkeyRefusal(err error) bool {
	var de *domain.Error
	return factorRefusal(err) || (errors.As(err, &de) && de.Code == "invalid_passkey")
}

var passkeyOperations = []struct {
	name       string
	registered bool
	run        func(t *testing.T, w *passkeyWorld) error
	check      func(t *testing.T, name string, w *passkeyWorld, ok bool)
}{
	{
		name: "second step with a passkey", registered: true,
		run: func(t *testing.T, w *passkeyWorld) error {
			return w.secondStep(accounts.Proof{Passkey: &accounts.PasskeyProof{Answer: w.answer}})
		},
		check: func(t *testing.T, name string, w *passkeyWorld, ok bool) {
			aChallengeMakesOneSession(t, name, w.factorWorld, ok)
			// The answer opens nothing again: not on a new challenge (it
			// signed the old one), nor once its count is stored.
			r, err := w.svc.Login(context.Background(), "ann", password, accounts.Client{})
			if err != nil {
				t.Fatalf("%s: a new login: %v", name, err)
			}
			before := len(w.tokens)
			w.challenge = r.Challenge
			if err := w.secondStep(accounts.Proof{Passkey: &accounts.PasskeyProof{Answer: w.answer}}); !errors.Is(err, accounts.ErrPasskeyRefused) {
				t.Errorf("%s: the answer on a new challenge: %v, want refused", name, err)
			}
			if count, _ := w.storedCount(t); ok && count < 2 {
				t.Errorf("%s: success, and the stored count is %d (the answer's was 2)", name, count)
			}
			if len(w.tokens) != before {
				t.Errorf("%s: a used answer made a session", name)
			}
		},
	},
	{
		name: "register a passkey",
		run: func(t *testing.T, w *passkeyWorld) error {
			c, err := w.svc.ConfirmPasskey(context.Background(), domain.Principal{UserID: w.ann.ID}, w.ann.ID, w.fac.ID, w.answer)
			if err == nil {
				w.recovery = c.RecoveryCodes
			}
			return err
		},
		check: func(t *testing.T, name string, w *passkeyWorld, ok bool) {
			_, confirmed := w.storedCount(t)
			_, set, err := w.store.Factors().Read(context.Background(), w.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ok && (!confirmed || len(w.recovery) != 10 || set.Left() != 10 || !shownStand(w.ann.ID, w.recovery, set)) {
				t.Errorf("%s: success, and confirmed %v with %d codes shown (the set's: %v), set %+v",
					name, confirmed, len(w.recovery), shownStand(w.ann.ID, w.recovery, set), set)
			}
			if !confirmed {
				return
			}
			// A registered passkey works.
			r, err := w.svc.Login(context.Background(), "ann", password, accounts.Client{})
			if err != nil || r.Passkey == nil {
				t.Fatalf("%s: a login after the registration: %+v %v", name, r, err)
			}
			w.challenge = r.Challenge
			answer, err := w.key.Get(r.Passkey)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.secondStep(accounts.Proof{Passkey: &accounts.PasskeyProof{Answer: answer}}); err != nil {
				t.Errorf("%s: the registered passkey at a login: %v", name, err)
			}
		},
	},
}

// TestExplorePasskeys runs a passkey's registration and its use at a
// login's second step with every fault at every store call, lands what
// was held, lets the client send the same body again, and checks: a
// challenge makes one session at most, an answer never works twice, a
// registration that answered success works and showed the codes that
// stand.
func TestExplorePasskeys(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range passkeyOperations {
		probe := newPasskeyWorld(t, op.registered)
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(t, probe) })
		total += everySchedule(t, op.name, calls, []string{"land-then-retry"}, func(name string, k int, fault memstore.Fault, _ int) {
			w := newPasskeyWorld(t, op.registered)
			faultOnce(w.store, k, fault)
			err := op.run(t, w)
			recovered(w.store)
			if err != nil && !expected(err) && !passkeyRefusal(err) && !refused(err) {
				t.Errorf("%s: the operation answered %v", name, err)
			}
			w.store.Land()
			ok := err == nil
			if err != nil && !passkeyRefusal(err) && !refused(err) {
				if rerr := op.run(t, w); rerr == nil {
					ok = true
				} else if !passkeyRefusal(rerr) && !expected(rerr) && !enrolmentFenced(rerr) {
					t.Errorf("%s: the retry answered %v", name, rerr)
				}
			}
			op.check(t, name, w, ok)
		})
	}
	t.Logf("%d schedules in all", total)
}

// TestWrongCodesFromManyAddressesLeaveThePasskeyWorking: whoever holds
// ann's password logs in and sends wrong app codes from ten addresses,
// five each, filling the code's tier of all addresses. ann's passkey
// still opens her session from her own address: a passkey's answer is
// counted under its client's address alone (a signature is not guessed),
// so a defence against guessed codes cannot be turned against the owner's
// passkey.
func TestWrongCodesFromManyAddressesLeaveThePasskeyWorking(t *testing.T) {
	t.Parallel()
	w := newPasskeyWorld(t, true)
	ctx := context.Background()
	r, err := w.svc.Login(ctx, "ann", password, accounts.Client{IP: "198.51.100.1"})
	if err != nil || r.Challenge == "" {
		t.Fatalf("the thief's login: %+v %v", r, err)
	}
	for a := range 10 {
		for range 5 {
			_, _ = w.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{Code: "000000"}, accounts.Client{IP: fmt.Sprintf("198.51.100.%d", 10+a)})
		}
	}
	if _, err := w.svc.SecondFactor(ctx, r.Challenge, accounts.Proof{Code: "000000"}, accounts.Client{IP: "198.51.100.99"}); !domainIs(err, domain.ErrTooManyAttempts) {
		t.Fatalf("after 50 wrong codes a code from a new address answered %v, want too many attempts: the tier of all addresses is not full", err)
	}
	got, err := w.svc.SecondFactor(ctx, w.challenge, accounts.Proof{Passkey: &accounts.PasskeyProof{Answer: w.answer}}, accounts.Client{IP: "203.0.113.7"})
	if err != nil || got.Token == "" {
		t.Fatalf("the owner's passkey after the thief's wrong codes: %+v %v; want a session", got, err)
	}
}
