package storecontract

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// Factors runs FactorChecks.
func Factors(t *testing.T, open Open[accounts.FactorStore]) { Run(t, open, FactorChecks) }

// FactorChecks are accounts.FactorStore's contract.
var FactorChecks = []Check[accounts.FactorStore]{
	{"ConfirmDecidedOnceAndOutlivesTheEnrolment", factorConfirmOnce},
	{"PendingGoesWithItsTTL", factorPendingExpires},
	{"EachStepUsedOnce", factorStepOnce},
	{"ATouchNeedsTheFactorAsRead", factorTouch},
	{"RecoveryCodesUsedOnceAndReplacedWhole", factorRecovery},
	{"AnEndedSetTakesNoSetAfterIt", factorRecoveryEnded},
	{"RemovePendingSparesAConfirmedFactor", factorRemovePending},
}

// factorRecoveryEnded: a deleted account's fence (accounts.RecoveryEnded,
// no codes) written in place of a set, or of none, reads back ended and
// empty, and neither a first set nor a replacement of the set it
// replaced lands after it.
func factorRecoveryEnded(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	for _, had := range []bool{true, false} {
		user, prev := Key("user"), ""
		set := accounts.RecoverySet{UserID: user, Generation: Key("gen"), Codes: []string{"h1", "h2"}, CreatedAt: At(c.Now())}
		if had {
			if ok, err := s.SetRecovery(ctx, set, ""); err != nil || !ok {
				t.Fatalf("create: %v %v", ok, err)
			}
			prev = set.Generation
		}
		fence := accounts.RecoverySet{UserID: user, Generation: accounts.RecoveryEnded, CreatedAt: At(c.Now())}
		if ok, err := s.SetRecovery(ctx, fence, prev); err != nil || !ok {
			t.Fatalf("the fence in place of %q: %v %v", prev, ok, err)
		}
		late := accounts.RecoverySet{UserID: user, Generation: Key("gen"), Codes: []string{"h3"}, CreatedAt: At(c.Now())}
		for _, after := range []string{"", set.Generation} {
			if ok, err := s.SetRecovery(ctx, late, after); err != nil || ok {
				t.Fatalf("a set in place of %q after the fence: applied=%v err=%v", after, ok, err)
			}
		}
		if _, got, err := s.Read(ctx, user); err != nil || !got.Ended() || len(got.Codes) != 0 || got.Left() != 0 {
			t.Fatalf("the fence (a set before it: %v) reads %+v %v", had, got, err)
		}
	}
}

func newFactor(c Clock) accounts.Factor {
	return accounts.Factor{UserID: Key("user"), ID: Key("fac"), Kind: accounts.FactorTOTP, Name: "phone",
		Sealed: "k1.sealed", CreatedAt: At(c.Now())}
}

// readFactor returns the account's factor id, and whether it is there.
func readFactor(t testing.TB, s accounts.FactorStore, userID, id string) (accounts.Factor, bool) {
	t.Helper()
	factors, _, err := s.Read(context.Background(), userID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range factors {
		if f.ID == id {
			return f, true
		}
	}
	return accounts.Factor{}, false
}

// factorConfirmOnce: a pending factor reads as begun (proven by the
// password alone, here), is confirmed by exactly one of racers, not with
// another secret, and then lives past its enrolment's TTL (the
// confirmation rewrote it without one).
func factorConfirmOnce(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	f := newFactor(c)
	f.PasswordOnly = true
	if err := s.Begin(ctx, f, TTL); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(ctx, f, TTL); err == nil {
		t.Fatal("beginning a factor whose row exists succeeded")
	}
	if got, ok := readFactor(t, s, f.UserID, f.ID); !ok || got.Confirmed() || got.Sealed != f.Sealed || got.Name != "phone" || !got.PasswordOnly {
		t.Fatalf("pending: %+v %v", got, ok)
	}
	other := f
	other.ConfirmedAt, other.LastStep = At(c.Now()), 5
	if ok, err := s.Confirm(ctx, other, "k1.other"); err != nil || ok {
		t.Fatalf("a confirmation of another pending secret: applied=%v err=%v", ok, err)
	}
	// Each racer stores a value of its own in place of the pending one
	// (a passkey's credential in place of its registration's state).
	winner := race(t, "confirmation", func(i int) (bool, error) {
		g := f
		g.Sealed = fmt.Sprintf("credential-%d", i)
		g.ConfirmedAt, g.LastStep, g.LastUsedAt = At(c.Now()), int64(100+i), At(c.Now())
		return s.Confirm(ctx, g, f.Sealed)
	})
	want := fmt.Sprintf("credential-%d", winner)
	got, ok := readFactor(t, s, f.UserID, f.ID)
	if !ok || !got.Confirmed() || got.LastStep != int64(100+winner) || got.Sealed != want {
		t.Fatalf("after the race: %+v %v, want confirmed at step %d with %s", got, ok, 100+winner, want)
	}
	c.Pass(TTLPassed)
	if got, ok := readFactor(t, s, f.UserID, f.ID); !ok || !got.Confirmed() || got.Sealed != want || got.Kind != accounts.FactorTOTP {
		t.Fatalf("a confirmed factor past its enrolment's TTL: %+v %v", got, ok)
	}
}

// factorRemovePending: a pending enrolment's conditional removal applies
// and a late confirmation then brings nothing back; a confirmed factor's
// does not apply, and the factor stands; on a row that is gone it
// applies (its columns are null), removing nothing.
func factorRemovePending(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	pending := newFactor(c)
	if err := s.Begin(ctx, pending, TTL); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RemovePending(ctx, pending.UserID, pending.ID); err != nil || !ok {
		t.Fatalf("removing a pending enrolment: applied=%v err=%v", ok, err)
	}
	late := pending
	late.ConfirmedAt, late.LastStep = At(c.Now()), 3
	if ok, err := s.Confirm(ctx, late, pending.Sealed); err != nil || ok {
		t.Fatalf("a confirmation after the removal: applied=%v err=%v", ok, err)
	}
	if got, ok := readFactor(t, s, pending.UserID, pending.ID); ok {
		t.Fatalf("a removed enrolment: %+v", got)
	}
	confirmed := newFactor(c)
	if err := s.Begin(ctx, confirmed, TTL); err != nil {
		t.Fatal(err)
	}
	done := confirmed
	done.ConfirmedAt, done.LastStep = At(c.Now()), 4
	if ok, err := s.Confirm(ctx, done, confirmed.Sealed); err != nil || !ok {
		t.Fatalf("confirming: applied=%v err=%v", ok, err)
	}
	if ok, err := s.RemovePending(ctx, confirmed.UserID, confirmed.ID); err != nil || ok {
		t.Fatalf("removing a confirmed factor as pending: applied=%v err=%v", ok, err)
	}
	if got, ok := readFactor(t, s, confirmed.UserID, confirmed.ID); !ok || !got.Confirmed() {
		t.Fatalf("the confirmed factor after a pending removal: %+v %v", got, ok)
	}
	if ok, err := s.RemovePending(ctx, Key("user"), Key("fac")); err != nil || !ok {
		t.Fatalf("removing an enrolment that never was: applied=%v err=%v", ok, err)
	}
}

// factorPendingExpires: an enrolment never confirmed is gone after its
// TTL, and a late confirmation then brings nothing back.
func factorPendingExpires(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	f := newFactor(c)
	if err := s.Begin(ctx, f, TTL); err != nil {
		t.Fatal(err)
	}
	c.Pass(TTLPassed)
	if got, ok := readFactor(t, s, f.UserID, f.ID); ok {
		t.Fatalf("an enrolment past its TTL: %+v", got)
	}
	f.ConfirmedAt, f.LastStep = At(c.Now()), 7
	if ok, err := s.Confirm(ctx, f, f.Sealed); err != nil || ok {
		t.Fatalf("confirming an expired enrolment: applied=%v err=%v", ok, err)
	}
	if got, ok := readFactor(t, s, f.UserID, f.ID); ok {
		t.Fatalf("a late confirmation brought the factor back: %+v", got)
	}
}

// factorStepOnce: a step at or before the last one is refused, of racers
// with one step exactly one applies, a pending factor takes no step, and
// a removed one neither (nor comes back).
func factorStepOnce(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	f := newFactor(c)
	if err := s.Begin(ctx, f, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.UseStep(ctx, f, 50, At(c.Now())); err != nil || ok {
		t.Fatalf("a step of a pending factor: applied=%v err=%v", ok, err)
	}
	f.ConfirmedAt, f.LastStep = At(c.Now()), 50
	if ok, err := s.Confirm(ctx, f, f.Sealed); err != nil || !ok {
		t.Fatalf("confirm: %v %v", ok, err)
	}
	for _, step := range []int64{49, 50} {
		if ok, err := s.UseStep(ctx, f, step, At(c.Now())); err != nil || ok {
			t.Fatalf("step %d after 50: applied=%v err=%v", step, ok, err)
		}
	}
	race(t, "use of step 51", func(int) (bool, error) { return s.UseStep(ctx, f, 51, At(c.Now())) })
	if got, _ := readFactor(t, s, f.UserID, f.ID); got.LastStep != 51 || got.LastUsedAt.IsZero() {
		t.Fatalf("after step 51: %+v", got)
	}
	if ok, err := s.Remove(ctx, f.UserID, f.ID); err != nil || !ok {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if ok, err := s.Remove(ctx, f.UserID, f.ID); err != nil || ok {
		t.Fatalf("removing it again: applied=%v err=%v", ok, err)
	}
	if ok, err := s.UseStep(ctx, f, 60, At(c.Now())); err != nil || ok {
		t.Fatalf("a step of a removed factor: applied=%v err=%v", ok, err)
	}
	if got, ok := readFactor(t, s, f.UserID, f.ID); ok {
		t.Fatalf("a removed factor is back: %+v", got)
	}
}

// factorTouch: a use of a passkey that keeps no counter is recorded on
// the confirmed factor with the sealed value read (its step kept), never
// on the pending row (its registration's state), nor on one removed,
// which does not come back.
func factorTouch(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	f := newFactor(c)
	f.Kind, f.Sealed = accounts.FactorPasskey, "registration state"
	if err := s.Begin(ctx, f, time.Hour); err != nil {
		t.Fatal(err)
	}
	credential := f
	credential.Sealed = "credential"
	if ok, err := s.Touch(ctx, f, At(c.Now())); err != nil || ok {
		t.Fatalf("a touch of a pending factor: applied=%v err=%v", ok, err)
	}
	if ok, err := s.Touch(ctx, credential, At(c.Now())); err != nil || ok {
		t.Fatalf("a touch of a pending factor with another sealed value: applied=%v err=%v", ok, err)
	}
	credential.ConfirmedAt, credential.LastStep = At(c.Now()), 0
	if ok, err := s.Confirm(ctx, credential, f.Sealed); err != nil || !ok {
		t.Fatalf("confirm: %v %v", ok, err)
	}
	if ok, err := s.Touch(ctx, f, At(c.Now())); err != nil || ok {
		t.Fatalf("a touch with the pending row's sealed value: applied=%v err=%v", ok, err)
	}
	used := At(c.Now().Add(time.Minute))
	if ok, err := s.Touch(ctx, credential, used); err != nil || !ok {
		t.Fatalf("a touch of the confirmed factor: applied=%v err=%v", ok, err)
	}
	if got, _ := readFactor(t, s, f.UserID, f.ID); got.LastStep != 0 || !got.LastUsedAt.Equal(used) || got.Sealed != "credential" {
		t.Fatalf("after a touch: %+v", got)
	}
	if ok, err := s.Remove(ctx, f.UserID, f.ID); err != nil || !ok {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if ok, err := s.Touch(ctx, credential, At(c.Now())); err != nil || ok {
		t.Fatalf("a touch of a removed factor: applied=%v err=%v", ok, err)
	}
	if got, ok := readFactor(t, s, f.UserID, f.ID); ok {
		t.Fatalf("a removed factor is back: %+v", got)
	}
}

// factorRecovery: a set is created once, each code used by exactly one
// of racers, a replacement needs the generation it replaces and starts
// with every code unused, a use against an old generation does nothing,
// and a removal needs the generation too.
func factorRecovery(t testing.TB, s accounts.FactorStore, c Clock) {
	ctx := context.Background()
	user := Key("user")
	set := accounts.RecoverySet{UserID: user, Generation: Key("gen"), Codes: []string{"h1", "h2", "h3"}, CreatedAt: At(c.Now())}
	if ok, err := s.SetRecovery(ctx, set, ""); err != nil || !ok {
		t.Fatalf("create: %v %v", ok, err)
	}
	if ok, err := s.SetRecovery(ctx, set, ""); err != nil || ok {
		t.Fatalf("creating a set where one stands: applied=%v err=%v", ok, err)
	}
	winner := race(t, "use of h2", func(i int) (bool, error) { return s.UseRecovery(ctx, set, "h2", fmt.Sprintf("use%d", i)) })
	_, got, err := s.Read(ctx, user)
	if err != nil || got.Generation != set.Generation || len(got.Codes) != 3 || got.Used["h2"] != fmt.Sprintf("use%d", winner) || got.Left() != 2 {
		t.Fatalf("after the race: %+v %v", got, err)
	}
	next := accounts.RecoverySet{UserID: user, Generation: Key("gen"), Codes: []string{"h4", "h5"}, CreatedAt: At(c.Now())}
	if ok, err := s.SetRecovery(ctx, next, "not-the-generation"); err != nil || ok {
		t.Fatalf("a replacement of another generation: applied=%v err=%v", ok, err)
	}
	if ok, err := s.SetRecovery(ctx, next, set.Generation); err != nil || !ok {
		t.Fatalf("replace: %v %v", ok, err)
	}
	if ok, err := s.UseRecovery(ctx, set, "h4", "old"); err != nil || ok {
		t.Fatalf("a use against the old generation: applied=%v err=%v", ok, err)
	}
	_, got, err = s.Read(ctx, user)
	if err != nil || got.Generation != next.Generation || got.Left() != 2 || len(got.Used) != 0 {
		t.Fatalf("after the replacement: %+v %v", got, err)
	}
	if err := s.RemoveRecovery(ctx, user, set.Generation); err != nil {
		t.Fatal(err)
	}
	if _, got, _ = s.Read(ctx, user); got.Generation != next.Generation {
		t.Fatalf("a removal of the old generation removed the new set: %+v", got)
	}
	if err := s.RemoveRecovery(ctx, user, next.Generation); err != nil {
		t.Fatal(err)
	}
	if _, got, _ = s.Read(ctx, user); got.Generation != "" {
		t.Fatalf("after its removal: %+v", got)
	}
}
