package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
)

// TestASuspensionWhoseRecordsComeAfterItsEndIsLifted: an admin suspends
// the member for a minute, and the suspension's compare-and-set is slow
// (it decides at its end, five minutes on); meanwhile the sweeper's pass
// moves the expiry reader's start to two minutes before now, past the
// suspension's end. The compare-and-set applies, the request writes the
// records, reads the account again and answers 201, its attempt ended.
// Its expiry entry lies behind the reader's start and is never read, the
// repair finds every record in place, and nothing else lifts it: the
// member stays suspended past its end until an admin lifts it (S2: "a
// suspension with an end is lifted once it passed, by the workers
// alone"). Whoever writes the records of a suspension that has ended
// lifts it (liftIfEnded): the request too.
func TestASuspensionWhoseRecordsComeAfterItsEndIsLifted(t *testing.T) {
	t.Parallel()
	const name = "suspend for a minute, its compare-and-set slow past its end"
	m := newModWorld(t)
	ctx := context.Background()
	working, updates := false, 0
	m.store.Meanwhile = func() {
		working = true
		defer func() { working = false }()
		if err := m.sweep(); err != nil {
			t.Errorf("%s: the sweeper's pass while the compare-and-set is slow: %v", name, err)
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
	if err := m.suspend(time.Minute); err != nil {
		t.Fatalf("%s: the suspension answered %v", name, err)
	}
	m.store.Meanwhile = nil
	recovered(m.store)
	for range 3 {
		m.store.Advance(time.Hour)
		m.workers()
	}
	if err := m.repair(); err != nil {
		t.Fatalf("%s: the repair: %v", name, err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status == domain.StatusSuspended {
		t.Errorf("%s: S2: suspended until %v, still suspended at %v after the workers' passes and the repair", name, u.Suspension.Until, m.store.Now())
	}
	checkModeration(t, name, m)
}

// TestASweepersLiftStoppedTwiceLeavesNoLookup: a one-minute suspension
// ends and the sweeper lifts it; its erase of the records stops at the
// reverse lookup's delete (a write that fails), leaving the lookup and the
// expiry entry. A lift by nobody has no attempt entry: the expiry entry is
// what leads the next sweep back. The next sweep finds the account lifted
// and erases the leftovers (eraseLeftovers): the last lift's list row and
// expiry entry by their keys, then what the lookup names; its delete of
// the lookup fails again. The expiry entry went before the lookup, so no
// sweep meets the user again, and the lookup of a suspension the account
// no longer has stays for good without an operator's repair (S2: the
// records agree with the account once the sweeper finished an interrupted
// operation). The last lift's expiry entry goes last, as Erase's does.
func TestASweepersLiftStoppedTwiceLeavesNoLookup(t *testing.T) {
	t.Parallel()
	const name = "the sweeper's lift and its next pass each stopped at the lookup's delete"
	m := newModWorld(t)
	if err := m.suspend(time.Minute); err != nil {
		t.Fatalf("%s: the suspension: %v", name, err)
	}
	m.store.Advance(2 * time.Minute)
	m.store.FaultAt = func(_ int, call string) memstore.Fault {
		if call == "suspended_users.delete" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	for pass := range 2 {
		if err := m.sweep(); err == nil {
			t.Fatalf("%s: pass %d of the sweeper answered no failure", name, pass)
		}
	}
	recovered(m.store)
	for range 3 {
		m.store.Advance(time.Hour)
		m.workers()
	}
	checkModeration(t, name, m)
}

// TestTheRepairLiftsAnEndedSuspensionNoSweeperReads: the state a release
// before liftIfEnded left (TestAnAdminBehindLeavesNoSuspensionUnlifted's
// schedule): the member suspended until five minutes ago, the records
// written since, the attempt ended, the expiry entry behind the
// sweepers' start, where no pass reads it. Free to log in, the member
// stays suspended and listed until an admin lifts it; the operator's
// repair is all that is left, and it found every record in place and
// lifted nothing. Likewise when the repair wrote a missing record itself
// and its lift failed (the node's clock unread): it asks to be run
// again, and the run again found every record in place. The repair lifts
// a suspension ended by the node's clock, as the sweeper would, whatever
// records it finds (S2: a suspension with an end is lifted once it
// passed).
func TestTheRepairLiftsAnEndedSuspensionNoSweeperReads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// unlisted: the list row is missing, and the repair's first run
		// fails to read the node's clock once it wrote it.
		unlisted bool
	}{
		{name: "every record in place"},
		{name: "the list row missing, the first run's lift failing", unlisted: true},
	} {
		m := newModWorld(t)
		ctx := context.Background()
		if _, err := m.mod.SweepExpired(ctx, 100); err != nil {
			t.Fatal(err)
		}
		// What the release before left: the account suspended until five
		// minutes ago, its records written at the suspension's version.
		u, err := m.store.Users().GetSerial(ctx, m.member.ID)
		if err != nil {
			t.Fatal(err)
		}
		at := m.store.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
		s := domain.Suspension{UserID: u.ID, Username: u.Username, Reason: "spam", SuspendedAt: at, SuspendedBy: m.admin.UserID,
			Until: at.Add(5 * time.Minute), Bucket: moderation.BucketOf(at, moderation.BucketMonth)}
		u.Status, u.Suspension, u.PasswordEpoch = domain.StatusSuspended, &s, u.PasswordEpoch+1
		u.Version++
		if ok, err := m.store.Users().Update(ctx, u); err != nil || !ok {
			t.Fatalf("%s: the suspension of the release before: %v %v", c.name, ok, err)
		}
		if c.unlisted {
			m.store.FaultAt = func(_ int, call string) memstore.Fault {
				if call == "users_by_status.insert" {
					return memstore.FailBefore
				}
				return memstore.None
			}
		}
		if err := m.store.Suspensions().Record(ctx, s, u.Version); err != nil && !c.unlisted {
			t.Fatal(err)
		}
		if c.unlisted {
			m.store.FaultAt = func(_ int, call string) memstore.Fault {
				if call == "system.local.now" {
					return memstore.FailBefore
				}
				return memstore.None
			}
			if err := m.repair(); err == nil {
				t.Fatalf("%s: the repair's first run answered no failure", c.name)
			}
			recovered(m.store)
		}
		for range 3 {
			m.store.Advance(time.Hour)
			m.workers()
		}
		if err := m.repair(); err != nil {
			t.Fatalf("%s: the repair: %v", c.name, err)
		}
		u, err = m.store.Users().Get(ctx, m.member.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Status == domain.StatusSuspended {
			t.Errorf("%s: S2: suspended until %v, still suspended at %v after the workers' passes and the repair", c.name, u.Suspension.Until, m.store.Now())
		}
		checkModeration(t, c.name, m)
	}
}

// TestARepairErasingAStoppedLiftsRecordsWritesItsHistory: a one-minute
// suspension ends, and the sweeper's lift stops right after its
// compare-and-set (its process dies): the lift's history entries are not
// written, and its expiry entry, the only thing that leads a sweeper back
// to a lift by nobody, is still there. Before the next sweep, the repair's
// lookups phase (a run whose accounts phase read the user before the
// lift, here one resumed from that phase) finds the lookup of a
// suspension the account no longer has and erases the records (forget),
// the expiry entry among them. No sweep meets the user again, and the
// history lacks the expiry until the user is moderated again or another
// repair runs (S5: "once ... the sweeper or the repair ran"). The repair
// writes the last lift's history entries before it erases what leads to
// them, as every other finisher does.
func TestARepairErasingAStoppedLiftsRecordsWritesItsHistory(t *testing.T) {
	t.Parallel()
	const name = "the sweeper's lift stopped after its compare-and-set, then the repair's lookups phase"
	m := newModWorld(t)
	ctx := context.Background()
	if err := m.suspend(time.Minute); err != nil {
		t.Fatalf("%s: the suspension: %v", name, err)
	}
	m.store.Advance(2 * time.Minute)
	_ = m.crashAfter("cas", m.sweep)
	if _, err := m.mod.Repair(ctx, m.store.Audit(), moderation.RepairOptions{From: moderation.PhaseLookups + ":"}); err != nil {
		t.Fatalf("%s: the repair: %v", name, err)
	}
	for range 3 {
		m.store.Advance(time.Hour)
		m.workers()
	}
	checkModeration(t, name, m)
}
