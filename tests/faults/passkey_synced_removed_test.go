package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
	"shelf/tests/testkit/softkey"
)

// syncedPasskeyRemovedMeanwhile is ann's account with a synced passkey (it
// keeps no counter: the thief's, added with a code of hers) beside her
// authenticator app, and a login's challenge answered by the passkey:
// run runs with the read of the factors slow, and the owner's removal of
// the passkey landing while it is on its way.
func syncedPasskeyRemovedMeanwhile(t *testing.T, run func(w *passkeyWorld) error) (*passkeyWorld, error) {
	t.Helper()
	key := softkey.New(passkeyOrigin)
	key.NoCounter = true
	w := newPasskeyWorldOf(t, true, key)
	ctx := context.Background()
	// Her app, the account's other factor: its removal leaves her one.
	app := accounts.Factor{UserID: w.ann.ID, ID: "fac_app", Kind: accounts.FactorTOTP, Name: "phone", Sealed: "app", CreatedAt: w.store.Now()}
	if err := w.store.Factors().Begin(ctx, app, time.Hour); err != nil {
		t.Fatal(err)
	}
	app.ConfirmedAt = w.store.Now()
	if ok, err := w.store.Factors().Confirm(ctx, app, app.Sealed); err != nil || !ok {
		t.Fatalf("her app: %v %v", ok, err)
	}
	removed := false
	w.store.Meanwhile = func() {
		if !removed {
			removed = true
			if ok, err := w.store.Factors().Remove(ctx, w.ann.ID, w.fac.ID); err != nil || !ok {
				t.Errorf("the owner's removal of the passkey: %v %v", ok, err)
			}
		}
	}
	w.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "factors.read" && !removed {
			return memstore.Slow
		}
		return memstore.None
	}
	err := run(w)
	w.store.FaultAt, w.store.Meanwhile = nil, nil
	if !removed {
		t.Fatal("the factors were never read")
	}
	return w, err
}

// TestASyncedPasskeyRemovedWhileItsAnswerIsCheckedOpensNoSession: a
// thief's synced passkey (no counter) answers a login's challenge; his
// second step reads the factors, and the owner's removal of the passkey
// lands before the answer is taken. The answer is refused and no session
// is opened: the use of a passkey that keeps no counter is a conditional
// write of its row, as a counted one's is, which a removal landed first
// fails.
func TestASyncedPasskeyRemovedWhileItsAnswerIsCheckedOpensNoSession(t *testing.T) {
	t.Parallel()
	w, err := syncedPasskeyRemovedMeanwhile(t, func(w *passkeyWorld) error {
		return w.secondStep(accounts.Proof{Passkey: &accounts.PasskeyProof{Answer: w.answer}})
	})
	if !passkeyRefusal(err) {
		t.Errorf("the second step with the removed passkey answered %v, want invalid_passkey", err)
	}
	if n := w.working(t); n != 0 || len(w.tokens) != 0 {
		t.Errorf("the removed passkey opened %d sessions (%d handed out)", n, len(w.tokens))
	}
}
