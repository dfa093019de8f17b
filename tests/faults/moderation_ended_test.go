package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestASuspensionAfterAnEndedOneTakesEffect: the member is suspended for
// a minute; the minute passes and the sweeper has not yet lifted it (it
// runs every few seconds). The suspension no longer blocks anything (S3:
// "a suspension past its until blocks no login, even before the sweeper
// lifts it"), and another admin suspends the member again, until lifted.
// The request finds the ended suspension in the row, lifts it as the
// sweeper would (liftIfEnded) and answers 409 already_suspended: the
// member is active, free to log in, and the admin was told the user is
// suspended (S1: 409 answers a user who is suspended). A request that
// passed its own checks (an until in the future, or none) is no retry of
// a suspension that has ended: once the ended one is lifted, it decides
// again on the lifted row.
func TestASuspensionAfterAnEndedOneTakesEffect(t *testing.T) {
	t.Parallel()
	const name = "suspend again a minute after a one-minute suspension, before the sweeper"
	m := newModWorld(t)
	ctx := context.Background()
	if err := m.suspend(time.Minute); err != nil {
		t.Fatalf("%s: the first suspension: %v", name, err)
	}
	m.store.Advance(2 * time.Minute)
	if err := m.suspend(0); err != nil {
		t.Errorf("%s: the second suspension answered %v", name, err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status != domain.StatusSuspended || u.Suspension == nil || !u.Suspension.Until.IsZero() {
		t.Errorf("%s: S1: the member is %s with suspension %+v, want suspended until lifted", name, u.Status, u.Suspension)
	}
	checkModeration(t, name, m)
}

// TestASuspensionAfterAnEndedOneHasItsOwnEntry: as above, and the lift
// of the ended suspension is slow, past the grace of an interrupted
// attempt: the sweeper's pass over the attempts takes the request's
// entry, fences the account, finds nothing to finish and ends the entry.
// The request then decides again, its compare-and-set applies, and its
// process dies before the records. That round must have an entry of its
// own for the sweeper to finish from (as every round of changeAccount
// does: TestAModerationRoundAfterTheSweepersFenceHasItsOwnEntry), or the
// member stays suspended and out of the list (S2).
func TestASuspensionAfterAnEndedOneHasItsOwnEntry(t *testing.T) {
	t.Parallel()
	const name = "suspend again after an ended suspension, its lift slow past the sweeper's fence, then crashed"
	m := newModWorld(t)
	ctx := context.Background()
	if err := m.suspend(time.Minute); err != nil {
		t.Fatalf("%s: the first suspension: %v", name, err)
	}
	m.store.Advance(2 * time.Minute)
	working, updates := false, 0
	m.store.Meanwhile = func() {
		working = true
		defer func() { working = false }()
		if _, err := m.mod.FinishInterrupted(ctx, time.Minute); err != nil {
			t.Errorf("%s: the sweeper's pass while the lift is slow: %v", name, err)
		}
	}
	m.store.FaultAt = func(_ int, call string) memstore.Fault {
		if working || call != "users.update" {
			return memstore.None
		}
		updates++
		if updates == 1 {
			return memstore.Slow
		}
		return memstore.None
	}
	m.mod.Hooks.AfterStep = func(op, step string) error {
		if op == "suspend" && step == "cas" && !working {
			return errors.New("crashed (test hook)")
		}
		return nil
	}
	_ = m.suspend(0)
	m.mod.Hooks.AfterStep, m.store.Meanwhile = nil, nil
	recovered(m.store)
	for range 3 {
		m.store.Advance(2 * time.Hour)
		m.workers()
	}
	checkModeration(t, name, m)
}
