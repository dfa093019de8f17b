package storecontract

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
)

// Claims runs ClaimChecks.
func Claims(t *testing.T, open Open[domain.ClaimStore]) { Run(t, open, ClaimChecks) }

// ClaimChecks are domain.ClaimStore's contract.
var ClaimChecks = []Check[domain.ClaimStore]{
	{"ClaimDecidedOnce", claimDecidedOnce},
	{"CommitAndReleaseAreTheHolders", claimHoldersOnly},
	{"TakeoverAndAdoptDecidedOnce", claimMovesDecidedOnce},
	{"LeaseRunsOut", claimLeaseRunsOut},
	{"CommitOutlivesTheLease", claimCommitOutlivesLease},
	{"ClaimsSayWhenTheyWereWritten", claimsSayWhen},
}

// claimsSayWhen: a claim's At is when it was last written (claimed,
// committed, adopted, taken over), by the store's clock, and a claim in
// the way of another's says its own (the claimer tells a change stopped
// after committing by it: domain.StaleClaimAge).
func claimsSayWhen(t testing.TB, s domain.ClaimStore, c Clock) {
	ctx, key := context.Background(), Key("when")
	const step = 50 * time.Millisecond
	within := func(what string, got domain.Claim, from, to time.Time) {
		t.Helper()
		if got.At.Before(At(from)) || got.At.After(to) {
			t.Errorf("%s: At %v, want between %v and %v", what, got.At, At(from), to)
		}
	}
	written := func(what string, write func() error) domain.Claim {
		t.Helper()
		c.Pass(step)
		from := c.Now()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := s.Lookup(ctx, domain.KindUsername, key)
		if err != nil {
			t.Fatalf("%s: lookup: %v", what, err)
		}
		within(what, got, from, c.Now())
		return got
	}
	claimed := written("claimed", func() error {
		_, err := s.Claim(ctx, domain.KindUsername, key, "u_a", "op1", 2, Long)
		return err
	})
	inTheWay, err := s.Claim(ctx, domain.KindUsername, key, "u_b", "op9", 0, Long)
	if err != nil || !inTheWay.At.Equal(claimed.At) {
		t.Errorf("a claim in the way: %+v %v, want its At %v", inTheWay, err, claimed.At)
	}
	committed := written("committed", func() error {
		_, err := s.Commit(ctx, domain.KindUsername, key, "u_a", "op1", 2)
		return err
	})
	adopted := written("adopted", func() error {
		_, err := s.Adopt(ctx, domain.KindUsername, key, committed, "op2", 3)
		return err
	})
	written("taken over", func() error {
		_, err := s.Takeover(ctx, domain.KindUsername, key, adopted, "u_b", "op3", 0, Long)
		return err
	})
}

// claimDecidedOnce: of racers claiming one key, exactly one holds it, and
// every answer reports that holder; the winner's retry finds its own row.
func claimDecidedOnce(t testing.TB, s domain.ClaimStore, _ Clock) {
	ctx, key := context.Background(), Key("claim")
	type answer struct {
		c   domain.Claim
		err error
	}
	answers := concurrently(racers, func(i int) answer {
		c, err := s.Claim(ctx, domain.KindUsername, key, fmt.Sprintf("u%d", i), "op", 0, Long)
		return answer{c, err}
	})
	winners := 0
	var holder domain.Claim
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("claim %d: %v", i, a.err)
		}
		if a.c.Owner == fmt.Sprintf("u%d", i) {
			winners++
			holder = a.c
		}
	}
	if winners != 1 {
		t.Fatalf("%d of %d concurrent claims of one key hold it, want exactly 1: %+v", winners, racers, answers)
	}
	for i, a := range answers {
		if a.c.Owner != holder.Owner || a.c.Op != "op" || a.c.State != domain.ClaimPending {
			t.Errorf("claim %d answered %+v, the row holds %+v", i, a.c, holder)
		}
	}
	again, err := s.Claim(ctx, domain.KindUsername, key, holder.Owner, "op", 0, Long)
	if err != nil || again.Owner != holder.Owner || again.Op != "op" {
		t.Errorf("the holder's retry: %+v %v, want its own claim", again, err)
	}
	if got, err := s.Lookup(ctx, domain.KindUsername, key); err != nil || got.Owner != holder.Owner {
		t.Errorf("lookup: %+v %v, want %s's claim", got, err, holder.Owner)
	}
}

// claimHoldersOnly: only (owner, op) commits or releases a claim.
func claimHoldersOnly(t testing.TB, s domain.ClaimStore, _ Clock) {
	ctx, key := context.Background(), Key("holders")
	if _, err := s.Claim(ctx, domain.KindEmail, key, "u_a", "op1", 3, Long); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Commit(ctx, domain.KindEmail, key, "u_a", "op2", 3); err != nil || ok {
		t.Fatalf("a commit by another op of the holder: applied=%v err=%v", ok, err)
	}
	if err := s.Release(ctx, domain.KindEmail, key, "u_b", "op1"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Lookup(ctx, domain.KindEmail, key); err != nil || got.Owner != "u_a" || got.BaseVersion != 3 {
		t.Fatalf("a release by another owner touched the claim: %+v %v", got, err)
	}
	if ok, err := s.Commit(ctx, domain.KindEmail, key, "u_a", "op1", 4); err != nil || !ok {
		t.Fatalf("the holder's commit: applied=%v err=%v", ok, err)
	}
	got, err := s.Lookup(ctx, domain.KindEmail, key)
	if err != nil || got.State != domain.ClaimCommitted || got.BaseVersion != 4 {
		t.Fatalf("after commit: %+v %v, want committed at base 4", got, err)
	}
	if err := s.Release(ctx, domain.KindEmail, key, "u_a", "op1"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Lookup(ctx, domain.KindEmail, key); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("after the holder's release: %+v %v, want ErrNotFound", got, err)
	}
	if ok, err := s.Commit(ctx, domain.KindEmail, key, "u_a", "op1", 4); err != nil || ok {
		t.Fatalf("a commit of a released claim: applied=%v err=%v", ok, err)
	}
}

// claimMovesDecidedOnce: of racers taking over one committed claim
// exactly one applies, and a second identical takeover does not; an
// adoption applies once, from the claim as it was found.
func claimMovesDecidedOnce(t testing.TB, s domain.ClaimStore, _ Clock) {
	ctx, key := context.Background(), Key("move")
	kind := domain.KindGroupName
	if _, err := s.Claim(ctx, kind, key, "dead", "signup", 0, Long); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Commit(ctx, kind, key, "dead", "signup", 0); err != nil || !ok {
		t.Fatalf("commit: %v %v", ok, err)
	}
	dead, err := s.Lookup(ctx, kind, key)
	if err != nil {
		t.Fatal(err)
	}
	winner := race(t, "takeover", func(i int) (bool, error) {
		return s.Takeover(ctx, kind, key, dead, fmt.Sprintf("t%d", i), "take", 1, Long)
	})
	owner := fmt.Sprintf("t%d", winner)
	got, err := s.Lookup(ctx, kind, key)
	if err != nil || got.Owner != owner || got.Op != "take" || got.State != domain.ClaimPending || got.BaseVersion != 1 {
		t.Fatalf("after the takeover: %+v %v, want %s's pending claim", got, err, owner)
	}
	if ok, err := s.Takeover(ctx, kind, key, dead, "late", "take", 1, Long); err != nil || ok {
		t.Fatalf("a second takeover from the same dead claim: applied=%v err=%v", ok, err)
	}
	if ok, err := s.Adopt(ctx, kind, key, got, "adopt", 2); err != nil || ok {
		t.Fatalf("adopting a pending claim: applied=%v err=%v", ok, err)
	}
	if ok, err := s.Commit(ctx, kind, key, owner, "take", 1); err != nil || !ok {
		t.Fatalf("commit after takeover: %v %v", ok, err)
	}
	committed, _ := s.Lookup(ctx, kind, key)
	if ok, err := s.Adopt(ctx, kind, key, committed, "adopt", 2); err != nil || !ok {
		t.Fatalf("adopt: applied=%v err=%v", ok, err)
	}
	if ok, err := s.Adopt(ctx, kind, key, committed, "adopt2", 3); err != nil || ok {
		t.Fatalf("a second adoption from the same claim: applied=%v err=%v", ok, err)
	}
	got, err = s.Lookup(ctx, kind, key)
	if err != nil || got.Owner != owner || got.Op != "adopt" || got.State != domain.ClaimCommitted || got.BaseVersion != 2 {
		t.Fatalf("after the adoption: %+v %v", got, err)
	}
}

// claimLeaseRunsOut: a pending claim is gone after its lease, and the key
// is free for anyone; a commit after it does not apply.
func claimLeaseRunsOut(t testing.TB, s domain.ClaimStore, c Clock) {
	ctx, key := context.Background(), Key("lease")
	if _, err := s.Claim(ctx, domain.KindUsername, key, "u_a", "op", 0, TTL); err != nil {
		t.Fatal(err)
	}
	c.Pass(TTLPassed)
	if got, err := s.Lookup(ctx, domain.KindUsername, key); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a claim past its lease: %+v %v, want ErrNotFound", got, err)
	}
	if ok, err := s.Commit(ctx, domain.KindUsername, key, "u_a", "op", 0); err != nil || ok {
		t.Fatalf("a commit past the lease: applied=%v err=%v", ok, err)
	}
	if got, err := s.Claim(ctx, domain.KindUsername, key, "u_b", "op", 0, Long); err != nil || got.Owner != "u_b" {
		t.Fatalf("claiming a key whose lease ran out: %+v %v", got, err)
	}
}

// claimCommitOutlivesLease: a committed claim has no TTL; a takeover
// gives it one again.
func claimCommitOutlivesLease(t testing.TB, s domain.ClaimStore, c Clock) {
	ctx, key, taken := context.Background(), Key("commit"), Key("taken")
	for _, k := range []string{key, taken} {
		if _, err := s.Claim(ctx, domain.KindUsername, k, "u_a", "op", 0, TTL); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Commit(ctx, domain.KindUsername, k, "u_a", "op", 0); err != nil || !ok {
			t.Fatalf("commit: %v %v", ok, err)
		}
	}
	dead, err := s.Lookup(ctx, domain.KindUsername, taken)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Takeover(ctx, domain.KindUsername, taken, dead, "u_b", "op", 0, TTL); err != nil || !ok {
		t.Fatalf("takeover: %v %v", ok, err)
	}
	c.Pass(TTLPassed)
	if got, err := s.Lookup(ctx, domain.KindUsername, key); err != nil || got.State != domain.ClaimCommitted {
		t.Fatalf("a committed claim after its first lease: %+v %v", got, err)
	}
	if got, err := s.Lookup(ctx, domain.KindUsername, taken); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a taken-over claim past its new lease: %+v %v, want ErrNotFound", got, err)
	}
}
