package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/tests/memstore"
)

// TestAModerationRoundAfterTheSweepersFenceHasItsOwnEntry: an admin's
// suspension (or unsuspension) is slow at its compare-and-set, past the
// grace of an interrupted attempt; meanwhile the sweeper's pass takes the
// attempt's entry, fences the account (so that compare-and-set loses),
// finds nothing to finish and ends the entry. The request goes on to
// another round, whose compare-and-set applies, and its process dies
// there, before the records. The change in the account must still have an
// entry for the sweeper to finish it from (docs/design/suspension.md,
// "Finished by the sweeper": a stopped request must not leave an account
// suspended but unlisted until an operator runs the repair). With one
// entry per request, ended by the sweeper before the round began, the
// member stays suspended, out of the list and past its end (S2), or, for
// a lift, listed while active.
func TestAModerationRoundAfterTheSweepersFenceHasItsOwnEntry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		setup  func(m *modWorld) error
		action func(m *modWorld) error
	}{
		{name: "suspend-until slow past the sweeper's fence, then crashed",
			action: func(m *modWorld) error { return m.suspend(time.Hour) }},
		{name: "unsuspend slow past the sweeper's fence, then crashed",
			setup:  func(m *modWorld) error { return m.suspend(0) },
			action: func(m *modWorld) error { return m.unsuspend() }},
	} {
		m := newModWorld(t)
		ctx := context.Background()
		if c.setup != nil {
			if err := c.setup(m); err != nil {
				t.Fatalf("%s: set-up: %v", c.name, err)
			}
		}
		working, updates := false, 0
		m.store.Meanwhile = func() {
			working = true
			defer func() { working = false }()
			if n, err := m.mod.FinishInterrupted(ctx, time.Minute); err != nil || n != 1 {
				t.Errorf("%s: the sweeper's pass while the compare-and-set is slow: %d entries finished, %v", c.name, n, err)
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
		m.mod.Hooks.AfterStep = func(_, step string) error {
			if step == "cas" && !working {
				return errors.New("crashed (test hook)")
			}
			return nil
		}
		_ = c.action(m)
		m.mod.Hooks.AfterStep, m.store.Meanwhile = nil, nil
		recovered(m.store)
		if updates != 2 {
			t.Fatalf("%s: %d compare-and-sets of the action, want the slow one and the next round's", c.name, updates)
		}
		// Nobody retries, and no operator runs the repair: the workers
		// alone, past every grace and the suspension's end.
		for range 3 {
			m.store.Advance(2 * time.Hour)
			m.workers()
		}
		checkModeration(t, c.name, m)
	}
}
