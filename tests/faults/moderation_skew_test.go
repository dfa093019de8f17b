package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// sweeperAhead is the moderation service of a process whose clock runs
// skew ahead of the store's.
func (m *modWorld) sweeperAhead(skew time.Duration) *moderation.Service {
	return moderation.New(moderation.Config{BucketSize: moderation.BucketMonth,
		Now: func() time.Time { return m.store.Now().Add(skew) }, Attempts: m.store.ModerationAttempts()},
		m.svc, m.store.Users(), m.store.SkewedSuspensions(skew))
}

// TestASweeperAheadLeavesNoSuspensionUnlifted: one process's clock runs 10
// minutes ahead. Its sweeper's pass over an empty expiry queue moves the
// reader's start to its own clock less the 2-minute horizon, 8 minutes
// into the others' future (Suspensions.Expired caps the start by the
// process's clock, db.Now, where walkFromStart takes the earlier of it and
// the node's). An admin on a process on time then suspends the member for
// 5 minutes: its expiry entry lies behind the start, is never read, and
// no sweeper ever lifts the suspension (S2: "a suspension with an end is
// lifted once it passed, by the workers alone"). Nothing else lifts it:
// the Suspend finished, its attempt ended, and the repair finds every
// record in place.
func TestASweeperAheadLeavesNoSuspensionUnlifted(t *testing.T) {
	m := newModWorld(t)
	ctx := context.Background()
	ahead := m.sweeperAhead(10 * time.Minute)
	if _, err := ahead.SweepExpired(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if err := m.suspend(5 * time.Minute); err != nil {
		t.Fatal(err)
	}
	m.store.Advance(time.Hour)
	for range 3 {
		m.workers()
		_, _ = ahead.SweepExpired(ctx, 100)
	}
	if err := m.repair(); err != nil {
		t.Fatal(err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status == domain.StatusSuspended {
		t.Errorf("S2: suspended until %v, still suspended at %v after every sweeper's passes and the repair", u.Suspension.Until, m.store.Now())
	}
}

// TestASweeperAheadLiftsNoSuspensionEarly: a sweeper whose clock runs 10
// minutes ahead reads a 5-minute suspension's expiry entry only once it
// ended by the node's clock too (Suspensions.Expired bounds its read by
// the earlier clock), and lifts it by the entry's end, not by its clock:
// the suspension holds for its 5 minutes, then the same sweeper lifts it.
func TestASweeperAheadLiftsNoSuspensionEarly(t *testing.T) {
	m := newModWorld(t)
	ctx := context.Background()
	ahead := m.sweeperAhead(10 * time.Minute)
	if err := m.suspend(5 * time.Minute); err != nil {
		t.Fatal(err)
	}
	status := func() domain.Status {
		t.Helper()
		u, err := m.store.Users().Get(ctx, m.member.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u.Status
	}
	m.store.Advance(4 * time.Minute)
	if n, err := ahead.SweepExpired(ctx, 100); n != 0 || err != nil || status() != domain.StatusSuspended {
		t.Fatalf("a minute before its end, the sweeper ahead lifted %d (%v): the member is %s", n, err, status())
	}
	m.store.Advance(time.Minute)
	if n, err := ahead.SweepExpired(ctx, 100); n != 1 || err != nil || status() == domain.StatusSuspended {
		t.Fatalf("at its end, the sweeper ahead lifted %d (%v): the member is %s", n, err, status())
	}
}

// TestAFinisherAheadLiftsNoSuspensionEarly: a 5-minute suspension stops
// after its compare-and-set (before its records); two minutes later a
// process whose clock runs 10 minutes ahead finishes the attempt. It
// writes the records and leaves the lift to the sweeper, since the
// suspension has not ended by the node's clock (before, it lifted it by
// its own clock, 3 minutes early, and dated the expiry at an end not yet
// come); at its end the sweeper lifts it.
func TestAFinisherAheadLiftsNoSuspensionEarly(t *testing.T) {
	t.Parallel()
	m := newModWorld(t)
	ctx := context.Background()
	ahead := m.sweeperAhead(10 * time.Minute)
	_ = m.crashAfter("cas", func() error { return m.suspend(5 * time.Minute) })
	m.store.Recover()
	m.store.Advance(2 * time.Minute)
	if _, err := ahead.FinishInterrupted(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status != domain.StatusSuspended {
		t.Fatalf("3 minutes before its end, the finisher ahead left the member %s (last lift %+v)", u.Status, u.LastLift)
	}
	m.store.Advance(3 * time.Minute)
	if n, err := ahead.SweepExpired(ctx, 100); n != 1 || err != nil {
		t.Fatalf("at its end the sweeper lifted %d (%v)", n, err)
	}
	if u, err := m.store.Users().Get(ctx, m.member.ID); err != nil || u.Status != domain.StatusActive || u.LastLift == nil || !u.LastLift.At.Equal(u.LastLift.Suspension.Until) {
		t.Fatalf("after its end: %+v %v, want active, lifted at its end", u.LastLift, err)
	}
}

// usersThen runs before once, just before the first SERIAL read of an
// account: what another process does between an attempt's entry and its
// read.
type usersThen struct {
	moderation.Users
	before func()
}

func (u *usersThen) GetSerial(ctx context.Context, id string) (domain.User, error) {
	if f := u.before; f != nil {
		u.before = nil
		f()
	}
	return u.Users.GetSerial(ctx, id)
}

// TestASweeperAheadNeverEndsTheEntryOfASuspensionUnderWay: one process's
// clock runs 2 minutes ahead. Its sweeper's FinishInterrupted runs while an
// admin's suspension, on a process on time, has written its entry and not
// yet read the account. By its own clock the entry is older than the grace
// (a minute: "its request is surely over"); were it judged so, the sweeper
// would fence the account (which moves nothing, the request has not read
// it yet), find nothing to finish and end the entry, and the request's
// compare-and-set would then apply and it stop (a crash) before its
// records, with nothing left for the workers to find: the member suspended,
// out of the suspended list, never lifted past its end (S2). The sweeper
// judges the entry's age by the earlier of its clock and the node's
// (domain.FinishStale), so it leaves the entry, and a later pass finishes
// the suspension.
func TestASweeperAheadNeverEndsTheEntryOfASuspensionUnderWay(t *testing.T) {
	m := newModWorld(t)
	ctx := context.Background()
	ahead := m.sweeperAhead(2 * time.Minute)
	users := &usersThen{Users: m.store.Users(), before: func() {
		if n, err := ahead.FinishInterrupted(ctx, time.Minute); n != 0 || err != nil {
			t.Errorf("the sweeper ahead ended %d entries (%v): the suspension's, still under way", n, err)
		}
	}}
	admin := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: m.store.Now, Attempts: m.store.ModerationAttempts()},
		m.svc, users, m.store.Suspensions())
	admin.Hooks.AfterStep = func(_, step string) error {
		if step == "cas" {
			return errors.New("crashed (test hook)")
		}
		return nil
	}
	end := m.store.Now().Add(5 * time.Minute)
	if _, err := admin.Suspend(ctx, m.admin, m.member.ID, moderation.SuspendInput{Reason: "spam", Until: &end}); err == nil {
		t.Fatal("the suspension did not stop after its compare-and-set")
	}
	for range 3 {
		m.store.Advance(time.Hour)
		m.workers()
	}
	checkSuspendedList(t, "a sweeper ahead", m)
	if u, err := m.store.Users().Get(ctx, m.member.ID); err != nil || u.Status == domain.StatusSuspended {
		t.Errorf("S2: suspended until %v, still suspended at %v after the workers' passes (%v)", end, m.store.Now(), err)
	}
}

// TestAWorkerAheadLeavesTheEntryOfADeletionUnderWay: the jobs' worker of a
// process whose clock runs 11 minutes ahead passes over the deletions
// while a deletion, on a process on time, has written its entry and not
// yet sent its compare-and-set. By the worker's clock alone the entry is
// past the age of one that never took effect (10 minutes), and would be
// fenced and removed; judged by the earlier of its clock and the node's
// (domain.Age) it is not: the pass removes nothing, and the deletion
// finishes.
func TestAWorkerAheadLeavesTheEntryOfADeletionUnderWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sc := delScenarios[0]
	d := newDelWorld(t, sc)
	ahead := lifecycleOn(d.world, d.grp, d.lib, func() time.Time { return d.store.Now().Add(11 * time.Minute) })
	d.life.Hooks.AfterDeletionStep = func(step string) error {
		if step == "entry" {
			d.life.Hooks.AfterDeletionStep = nil
			if r, err := ahead.RepairDeletions(ctx, false); r.Stale != 0 || err != nil {
				t.Errorf("the worker ahead removed %d entries as stale (%v): the deletion's, under way", r.Stale, err)
			}
		}
		return nil
	}
	if err := d.deleteAs(sc); err != nil {
		t.Fatal(err)
	}
	checkDeletion(t, "a worker ahead", d)
}

// TestAnAdminBehindLeavesNoSuspensionUnlifted: one process's clock runs
// 10 minutes behind the store's. The sweepers on time have moved the
// expiry reader's start to two minutes before now. An admin on the
// process behind suspends the member for 5 minutes by its clock: an end 5
// minutes past by the node's. Its expiry entry lies behind the start and
// is never read; the request's own lift (liftIfEnded) asked its clock too,
// which says the end has not come, so it leaves the lift to a sweeper that
// never reads the entry. The member, free to log in on every process on
// time, stays suspended and listed for good once the request answered
// (S2: "a suspension with an end is lifted once it passed, by the workers
// alone"): the attempt ended, and the repair finds every record in place.
// An entry behind the reader's start is one whose end passed by the
// node's clock: that clock alone says whether the finisher lifts.
func TestAnAdminBehindLeavesNoSuspensionUnlifted(t *testing.T) {
	t.Parallel()
	m := newModWorld(t)
	ctx := context.Background()
	if _, err := m.mod.SweepExpired(ctx, 100); err != nil {
		t.Fatal(err)
	}
	behind := m.sweeperAhead(-10 * time.Minute)
	end := m.store.Now().Add(-5 * time.Minute)
	if _, err := behind.Suspend(ctx, m.admin, m.member.ID, moderation.SuspendInput{Reason: "spam", Until: &end}); err != nil {
		t.Fatalf("the suspension by the admin behind: %v", err)
	}
	for range 3 {
		m.store.Advance(time.Hour)
		m.workers()
		_, _ = behind.SweepExpired(ctx, 100)
	}
	if err := m.repair(); err != nil {
		t.Fatal(err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Status == domain.StatusSuspended {
		t.Errorf("S2: suspended until %v, still suspended at %v after every sweeper's passes and the repair", u.Suspension.Until, m.store.Now())
	}
	checkModeration(t, "an admin 10 minutes behind suspends for 5 minutes", m)
}

// TestASuspensionAfterALiftAheadNeverEndsBeforeItBegins: an admin on a
// process whose clock runs 2 seconds ahead lifts the member's suspension
// (the lift's time is his clock's); another admin, on time, suspends the
// member again until a second from now, in the future as he sent it. A
// suspension begins a millisecond after the account's last event, so
// that no two history entries share a key: this one began 2 seconds
// ahead, after its own end. It answered 201 with an until before its
// suspendedAt, and the account, its list row, its history and the
// member's login said so ("suspended since 12:00:02 until 12:00:01").
// An until no later than the start the suspension would take is refused
// naming until, as a past one is, and nothing changes; one after it is
// taken.
func TestASuspensionAfterALiftAheadNeverEndsBeforeItBegins(t *testing.T) {
	t.Parallel()
	m := newModWorld(t)
	ctx := context.Background()
	if err := m.suspend(0); err != nil {
		t.Fatal(err)
	}
	ahead := m.sweeperAhead(2 * time.Second)
	if err := ahead.Unsuspend(ctx, m.admin, m.member.ID); err != nil {
		t.Fatal(err)
	}
	before, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = m.suspend(time.Second)
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "until" || de.Fields[0].Code != "not_future" {
		u, _ := m.store.Users().Get(ctx, m.member.ID)
		if u.Suspension != nil && !u.Suspension.Until.After(u.Suspension.SuspendedAt) {
			t.Fatalf("a suspension answered %v, suspended at %v until %v: it ends before it begins", err, u.Suspension.SuspendedAt, u.Suspension.Until)
		}
		t.Fatalf("the suspension answered %v, want 400 naming until", err)
	}
	after, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != domain.StatusActive || after.PasswordEpoch != before.PasswordEpoch {
		t.Errorf("the refused suspension changed the account: %s, epoch %d (was %d)", after.Status, after.PasswordEpoch, before.PasswordEpoch)
	}
	if err := m.suspend(3 * time.Second); err != nil {
		t.Fatalf("an until after the suspension's start: %v", err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := u.Suspension; s == nil || !s.Until.After(s.SuspendedAt) {
		t.Errorf("the suspension taken: %+v", s)
	}
}
