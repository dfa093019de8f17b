package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAGrantRacingAnAdminsFactorRemovalRefusesIt (rule 3, check again
// at the end; docs/design/second-factors.md): root, an admin, removes
// ann's authenticator ("an admin may remove a factor, never on another
// admin's account"). His removal reads ann's account (no admin), and is
// slow at one of its steps after that read: its read of the factors, its
// audit entry's write, or its fence of ann's account. Meanwhile the
// operator runs `api admin grant ann`. The removal must decide again on
// what the account holds now: ann is an admin, so it is refused 403 and
// her factor stands. Before, the removal rested on the account read
// before the grant (the factors are in another partition, no version
// of the account in their condition) and one admin removed another's
// factor.
func TestAGrantRacingAnAdminsFactorRemovalRefusesIt(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"factors.read", "account_audit.claim", "users.update"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			f := newFactorWorld(t)
			ctx := context.Background()
			if err := f.signup("root", "root@example.org"); err != nil {
				t.Fatal(err)
			}
			root, err := f.svc.SetAdmin(ctx, "root", true)
			if err != nil {
				t.Fatal(err)
			}
			var granted error
			ran := false
			slowOnce(f.store, step, 0, func() {
				ran = true
				_, granted = f.svc.SetAdmin(ctx, "ann", true)
			})
			err = f.svc.RemoveFactor(ctx, domain.Principal{UserID: root.ID}, f.ann.ID, f.fac.ID, accounts.Proof{})
			calm(f.store)
			if !ran || granted != nil {
				t.Fatalf("the grant inside the removal's %s: ran %v, answered %v", step, ran, granted)
			}
			if !errors.Is(err, domain.ErrForbidden) {
				t.Errorf("root's removal of the factor of ann, an admin since, answered %v, want forbidden", err)
			}
			factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(factors) != 1 || !factors[0].Confirmed() {
				t.Errorf("ann's factors after another admin's refused removal: %+v, want her app", factors)
			}
		})
	}
}

// TestAnAdminsFactorRemovalFinishesPastItsFence: the fence of
// TestAGrantRacingAnAdminsFactorRemovalRefusesIt, a compare-and-set of
// ann's account (a member's), meets a fault: slow while ann is renamed
// (it loses to that write, reads again and decides again), its answer
// lost, landing late, or the process dying once it applied. Whatever it
// left, ann still logs in with her password and app, and root's removal,
// tried again by the client, removes her factor: a fence left behind
// moves only the account's version on.
func TestAnAdminsFactorRemovalFinishesPastItsFence(t *testing.T) {
	t.Parallel()
	for _, fault := range []memstore.Fault{memstore.Slow, memstore.LoseAnswer, memstore.LandLate, memstore.Crash} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			f := newFactorWorld(t)
			ctx := context.Background()
			if err := f.signup("root", "root@example.org"); err != nil {
				t.Fatal(err)
			}
			root, err := f.svc.SetAdmin(ctx, "root", true)
			if err != nil {
				t.Fatal(err)
			}
			admin := domain.Principal{UserID: root.ID}
			faultNamed(f.store, "users.update", 0, fault)
			f.store.Meanwhile = func() {
				name := "anna"
				if _, err := f.svc.UpdateUser(ctx, admin, f.ann.ID, accounts.UpdateInput{Username: &name}); err != nil {
					t.Errorf("ann's rename inside the fence: %v", err)
				}
			}
			err = f.svc.RemoveFactor(ctx, admin, f.ann.ID, f.fac.ID, accounts.Proof{})
			calm(f.store)
			f.store.Recover()
			f.store.Land()
			t.Logf("the removal answered %v", err)
			annLogsIn(t, f)
			if err != nil {
				if err = f.svc.RemoveFactor(ctx, admin, f.ann.ID, f.fac.ID, accounts.Proof{}); err != nil && !errors.Is(err, accounts.ErrFactorNotFound) {
					t.Fatalf("the client's retry of the removal: %v", err)
				}
			}
			factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
			if err != nil || len(factors) != 0 {
				t.Fatalf("ann's factors after root's removal: %+v %v, want none", factors, err)
			}
		})
	}
}

// annLogsIn fails the test unless ann's password, and her app's code if
// the account still asks for it, open a session.
func annLogsIn(t *testing.T, f *factorWorld) {
	t.Helper()
	r, err := f.svc.Login(context.Background(), f.ann.Email, password, accounts.Client{})
	if err == nil && r.Challenge != "" {
		f.challenge = r.Challenge
		err = f.secondStep(accounts.Proof{Code: f.code(t, 0)})
	} else if err == nil && r.Token == "" {
		err = errors.New("no session")
	}
	if err != nil {
		t.Errorf("ann's login: %v", err)
	}
}
