package faults

import (
	"context"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestAFactorNoKeyOpensLeavesTheOthersCodesWorking: ann has two
// authenticator apps, and the secret of the older one was sealed under a
// key the operator has since dropped from SHELF_FACTOR_KEYS. A proof with
// a code checks it against every app of the account, and the first
// secret no key opened ended the check with an error: every code of the
// account, her newer app's too, was answered 500, and she could pass
// only with a recovery code. Such a factor is passed over (and logged),
// and her newer app's code proves her.
func TestAFactorNoKeyOpensLeavesTheOthersCodesWorking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t)
	old := accounts.Factor{UserID: f.ann.ID, ID: "f_old", Kind: accounts.FactorTOTP, Name: "old phone",
		Sealed: "dropped.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", CreatedAt: f.store.Now().Add(-1)}
	if err := f.store.Factors().Begin(ctx, old, lease); err != nil {
		t.Fatal(err)
	}
	old.ConfirmedAt = old.CreatedAt
	if ok, err := f.store.Factors().Confirm(ctx, old, old.Sealed); err != nil || !ok {
		t.Fatalf("planting the old app: %v %v", ok, err)
	}
	factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil || len(factors) != 2 || factors[0].ID != old.ID {
		t.Fatalf("the factors planted: %+v %v (want the old app first)", factors, err)
	}
	p := domain.Principal{UserID: f.ann.ID}
	proof := accounts.Password(password)
	proof.Code = f.code(t, 0)
	if _, err := f.svc.NewRecoveryCodes(ctx, p, f.ann.ID, proof); err != nil {
		t.Errorf("a proof with her newer app's code beside an app no key opens: %v", err)
	}
}
