package faults

import (
	"context"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestADeletedAccountKeepsNoSecondFactor: ann, with an authenticator
// app (a name she typed, its sealed secret) and her recovery codes,
// deletes her account with her password and a code, and the deletion's
// job runs to its end. The account is deleted, its personal data cleared
// (docs/design/deletion.md, step 5), yet its row of account_factors
// stayed: the app's name and secret and the hashes of the recovery codes,
// for good (a confirmed factor has no TTL), of an account that no longer
// exists. Nothing of its factors is left once the deletion finished.
func TestADeletedAccountKeepsNoSecondFactor(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	wireDeletion(f.world)
	ctx := context.Background()
	pw := password
	proof := accounts.Proof{CurrentPassword: &pw, Code: f.code(t, 0)}
	if err := worked(f.life)(f.life.DeleteUser(ctx, as(f.ann), f.ann.ID, proof)); err != nil {
		t.Fatal(err)
	}
	factors, set, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(factors) > 0 || !set.Ended() || len(set.Codes) > 0 {
		t.Errorf("ann's deleted account keeps %d factors and a recovery set of %d codes", len(factors), len(set.Codes))
	}
}

// TestADeletionWhileFactorsAreOffRemovesThoseWrittenBefore: ann added an
// authenticator app and her recovery codes while the service had second
// factors; its operator then ran it without (SHELF_FACTOR_KEYS unset), and
// ann deleted her account with her password alone. The job skipped the
// factors, since the service had none: her row of account_factors (the
// app's name and sealed secret, the codes' hashes) stayed for good. The
// job removes them whatever the setting, from the rows the app always
// gives it (accounts.Config.FactorRows).
func TestADeletionWhileFactorsAreOffRemovesThoseWrittenBefore(t *testing.T) {
	t.Parallel()
	f := newFactorWorld(t)
	f.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Factors, c.TOTP, c.Passkeys, c.FactorRows = nil, nil, nil, st.Factors()
	})
	wireDeletion(f.world)
	ctx := context.Background()
	pw := password
	if err := worked(f.life)(f.life.DeleteUser(ctx, as(f.ann), f.ann.ID, accounts.Proof{CurrentPassword: &pw})); err != nil {
		t.Fatal(err)
	}
	factors, set, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(factors) > 0 || !set.Ended() || len(set.Codes) > 0 {
		t.Errorf("ann's account, deleted while factors were off, keeps %d factors and a recovery set of %d codes", len(factors), len(set.Codes))
	}
}

// TestARevertWhileFactorsAreOffRemovesTheThiefsFactor: a thief with
// ann's password added an authenticator app while the service had second
// factors; its operator then ran it without (SHELF_FACTOR_KEYS unset),
// and ann followed the revert link of the app's notice. The revert ended
// every session and marked its token done but skipped the factor, since
// the service had none: once factors were on again, the thief's app stood
// between ann's new password and a session, and her one link was spent.
// A revert removes the factors from the rows the app always gives it
// (accounts.Config.FactorRows), as a deletion's job does.
func TestARevertWhileFactorsAreOffRemovesTheThiefsFactor(t *testing.T) {
	t.Parallel()
	m, revert := thiefsChange(t, "revert-factor")
	token := m.box.tokenTo("revert-factor", annHome)
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Factors, c.TOTP, c.Passkeys, c.FactorRows = nil, nil, nil, st.Factors()
	})
	if err := revert(token); err != nil {
		t.Fatal(err)
	}
	factors, _, err := m.store.Factors().Read(context.Background(), m.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(factors) > 0 {
		t.Errorf("ann's account, its factor's revert followed while factors were off, keeps %d factors: %+v", len(factors), factors)
	}
}
