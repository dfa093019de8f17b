package faults

import (
	"testing"
	"time"

	"shelf/tests/memstore"
)

// TestALateLookupOfALiftedSuspensionIsShadowed: an admin suspends the
// member and the write of the reverse lookup goes unanswered, still on its
// way (it lands later); the request answers 503. Another admin lifts the
// suspension, and that request stops right after its compare-and-set,
// before it erases anything. What comes next finds the leftovers through
// the last lift's keys and the lookup: the sweeper's pass over the
// interrupted attempts (eraseLeftovers), or the account's deletion
// (EraseDeleted). Both read the lookup, find none (it has not landed yet)
// and deleted it only when they found one. The lookup lands afterwards,
// written at the suspension's version, older than theirs: nothing shadows
// it, and the account keeps the lookup of a suspension it no longer has,
// for good without an operator's repair (S2: the records agree with the
// account once the workers finished; a deleted account keeps no lookup,
// whatever order the writes land in). The lookup is keyed by the user
// alone: the last lift's erase deletes it by its key too.
func TestALateLookupOfALiftedSuspensionIsShadowed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		then func(m *modWorld)
	}{
		{name: "then the workers", then: func(m *modWorld) {
			m.store.Advance(2 * time.Hour)
			m.workers()
		}},
		{name: "then the account's deletion", then: func(m *modWorld) {
			if err := m.deleteMember(); err != nil {
				t.Fatalf("the deletion: %v", err)
			}
		}},
	} {
		name := "a suspension whose lookup lands late, its lift stopped after its compare-and-set, " + c.name
		m := newModWorld(t).withDeletion()
		m.store.FaultAt = func(_ int, call string) memstore.Fault {
			if call == "suspended_users.insert" {
				return memstore.LandLate
			}
			return memstore.None
		}
		if err := m.suspend(0); err == nil {
			t.Fatalf("%s: the suspension answered success", name)
		}
		recovered(m.store)
		_ = m.crashAfter("cas", m.unsuspend)
		m.store.Recover()
		c.then(m)
		m.store.Land()
		for range 2 {
			m.store.Advance(time.Hour)
			m.workers()
		}
		checkModeration(t, name, m)
	}
}
