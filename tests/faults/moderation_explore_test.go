package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/moderation"
	"shelf/internal/memstore"
)

// modWorld is a schedule's accounts and moderation on fresh tables, with an
// admin and a member.
type modWorld struct {
	*world
	mod    *moderation.Service
	admin  domain.Principal
	member domain.User
}

func newModWorld(t *testing.T) *modWorld {
	t.Helper()
	w := newWorld()
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: w.store.Now},
		w.svc, w.store.Users(), w.store.Sessions(), w.store.Suspensions())
	if err := w.signup("root", "root@example.org"); err != nil {
		t.Fatal(err)
	}
	admin, err := w.svc.SetAdmin(context.Background(), "root", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.signup("member", "member@example.org"); err != nil {
		t.Fatal(err)
	}
	return &modWorld{world: w, mod: mod, admin: domain.Principal{UserID: admin.ID}, member: w.created[1]}
}

func (m *modWorld) suspend(until time.Duration) error {
	in := moderation.SuspendInput{Reason: "spam"}
	if until > 0 {
		end := m.store.Now().Add(until)
		in.Until = &end
	}
	_, err := m.mod.Suspend(context.Background(), m.admin, m.member.ID, in)
	return err
}

func (m *modWorld) unsuspend() error {
	return m.mod.Unsuspend(context.Background(), m.admin, m.member.ID)
}

func (m *modWorld) repair() error {
	_, err := m.mod.RepairSuspensions(context.Background(), m.store.Audit(), false)
	return err
}

// crashAfter stops the next moderation action right after step, as a
// crash would (the repair's work).
func (m *modWorld) crashAfter(step string, action func() error) error {
	m.mod.Hooks.AfterStep = func(_, s string) error {
		if s == step {
			return errors.New("crashed (test hook)")
		}
		return nil
	}
	defer func() { m.mod.Hooks.AfterStep = nil }()
	_ = action()
	return nil
}

func (m *modWorld) sweep() error {
	_, err := m.mod.SweepExpired(context.Background(), 100)
	return err
}

// modOperation is one moderation action with its set-up, its retry and
// the opposite action another admin may take meanwhile.
type modOperation struct {
	name                 string
	setup                func(m *modWorld) error
	run, retry, opposite func(m *modWorld) error
}

var modOperations = []modOperation{
	{
		name:     "suspend",
		run:      func(m *modWorld) error { return m.suspend(0) },
		retry:    func(m *modWorld) error { return m.suspend(0) },
		opposite: func(m *modWorld) error { return m.unsuspend() },
	},
	{
		name:     "suspend-until",
		run:      func(m *modWorld) error { return m.suspend(time.Hour) },
		retry:    func(m *modWorld) error { return m.suspend(time.Hour) },
		opposite: func(m *modWorld) error { return m.unsuspend() },
	},
	{
		name:     "unsuspend",
		setup:    func(m *modWorld) error { return m.suspend(time.Hour) },
		run:      func(m *modWorld) error { return m.unsuspend() },
		retry:    func(m *modWorld) error { return m.unsuspend() },
		opposite: func(m *modWorld) error { return m.suspend(0) },
	},
	{
		name: "sweep",
		setup: func(m *modWorld) error {
			if err := m.suspend(time.Minute); err != nil {
				return err
			}
			m.store.Advance(2 * time.Minute)
			return nil
		},
		run:      func(m *modWorld) error { return m.sweep() },
		retry:    func(m *modWorld) error { return m.sweep() },
		opposite: func(m *modWorld) error { return m.suspend(0) },
	},
	{
		// A suspension after a lift that crashed after its compare-and-set
		// (no history entries yet): the suspension writes them before its
		// own compare-and-set, since the next lift overwrites the last one.
		name: "suspend-after-interrupted-lift",
		setup: func(m *modWorld) error {
			if err := m.suspend(time.Hour); err != nil {
				return err
			}
			return m.crashAfter("cas", m.unsuspend)
		},
		run:      func(m *modWorld) error { return m.suspend(0) },
		retry:    func(m *modWorld) error { return m.suspend(0) },
		opposite: func(m *modWorld) error { return m.unsuspend() },
	},
	{
		// A lift of a suspension that crashed after its compare-and-set
		// (no records, no history entry): the lift writes the suspension's
		// entry beside its own.
		name:     "unsuspend-after-interrupted-suspension",
		setup:    func(m *modWorld) error { return m.crashAfter("cas", func() error { return m.suspend(time.Hour) }) },
		run:      func(m *modWorld) error { return m.unsuspend() },
		retry:    func(m *modWorld) error { return m.unsuspend() },
		opposite: func(m *modWorld) error { return m.suspend(0) },
	},
	{
		// A suspension that crashed after its compare-and-set, before its
		// records: the repair writes them and ends the sessions.
		name:     "repair-suspension",
		setup:    func(m *modWorld) error { return m.crashAfter("cas", func() error { return m.suspend(time.Hour) }) },
		run:      func(m *modWorld) error { return m.repair() },
		retry:    func(m *modWorld) error { return m.repair() },
		opposite: func(m *modWorld) error { return m.unsuspend() },
	},
	{
		// A lift that crashed after its compare-and-set: the repair erases
		// the records of a suspension the account no longer has.
		name: "repair-lift",
		setup: func(m *modWorld) error {
			if err := m.suspend(time.Hour); err != nil {
				return err
			}
			return m.crashAfter("cas", m.unsuspend)
		},
		run:      func(m *modWorld) error { return m.repair() },
		retry:    func(m *modWorld) error { return m.repair() },
		opposite: func(m *modWorld) error { return m.suspend(0) },
	},
}

// TestExploreModeration runs every moderation action with every fault at
// every store call, then (or after the opposite action by another admin)
// lands what was held, retries, and checks S2: the account is the truth,
// and its records agree with it; S3 for a suspended account; and S5: the
// history holds exactly one entry for each suspension and lift the
// account's compare-and-sets made.
func TestExploreModeration(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range modOperations {
		probe := newModWorld(t)
		if op.setup != nil {
			if err := op.setup(probe); err != nil {
				t.Fatal(err)
			}
		}
		before := probe.store.Calls()
		_ = op.run(probe)
		calls := probe.store.Calls() - before
		n := 0
		for k := 0; k < calls; k++ {
			for _, fault := range memstore.Faults {
				for _, opposite := range []bool{false, true} {
					name := fmt.Sprintf("%s/call%d/%s/opposite=%v", op.name, k, fault, opposite)
					exploreModeration(t, name, op, k, fault, opposite)
					n++
				}
			}
		}
		t.Logf("%s: %d store calls, %d schedules", op.name, calls, n)
		total += n
	}
	t.Logf("%d schedules in all", total)
}

func exploreModeration(t *testing.T, name string, op modOperation, k int, fault memstore.Fault, opposite bool) {
	m := newModWorld(t)
	if op.setup != nil {
		if err := op.setup(m); err != nil {
			t.Fatalf("%s: set-up: %v", name, err)
		}
	}
	at := m.store.Calls() + k
	m.store.FaultAt = func(n int, _ string) memstore.Fault {
		if n == at {
			return fault
		}
		return memstore.None
	}
	err := op.run(m)
	m.store.FaultAt = nil
	m.store.Recover()
	if err != nil && !expected(err) && !errorsIsNotFound(err) {
		t.Errorf("%s: the action answered %v", name, err)
	}
	last := op.retry
	if opposite {
		_ = op.opposite(m)
		last = op.opposite // the opposite was the last word: its retry finishes it
	}
	m.store.Land()
	if err != nil || opposite {
		_ = last(m)
	}
	checkModeration(t, name, m)
}

// checkHistory asserts S5 for the member: its history is exactly the
// events of the account's applied changes (each suspension begun, each
// lift), once each, with what the change wrote, newest first, and paging
// through it one entry at a time finds the same.
func checkHistory(t *testing.T, name string, m *modWorld) {
	t.Helper()
	var want []moderation.Event
	var prev domain.User
	for _, u := range m.store.Changes(m.member.ID) {
		if s := u.Suspension; s != nil && (prev.Suspension == nil || !prev.Suspension.SuspendedAt.Equal(s.SuspendedAt)) {
			want = append(want, moderation.SuspendedEvent(*s))
		}
		if l := u.LastLift; l != nil && (prev.LastLift == nil || !prev.LastLift.At.Equal(l.At)) {
			want = append(want, moderation.LiftEvents(*l)[1])
		}
		prev = u
	}
	slices.Reverse(want)
	got := m.store.Events(m.member.ID)
	if !equalEvents(got, want) {
		t.Errorf("%s: S5: history\n%+v\nwant\n%+v", name, got, want)
		return
	}
	if u, err := m.store.Users().Get(context.Background(), m.member.ID); err != nil || !u.Visible() {
		return // a deleted account's history is kept, and shown to nobody
	}
	var paged []moderation.Event
	cursor := ""
	for range len(want) + 1 {
		page, err := m.mod.History(context.Background(), m.admin, m.member.ID, cursor, 1)
		if err != nil {
			t.Fatalf("%s: history: %v", name, err)
		}
		paged = append(paged, page.Items...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !equalEvents(paged, want) {
		t.Errorf("%s: S5: paged history\n%+v\nwant\n%+v", name, paged, want)
	}
}

func equalEvents(a, b []moderation.Event) bool {
	return slices.EqualFunc(a, b, func(x, y moderation.Event) bool {
		return x.UserID == y.UserID && x.Kind == y.Kind && x.At.Equal(y.At) && x.Actor == y.Actor && x.Reason == y.Reason &&
			x.SuspendedAt.Equal(y.SuspendedAt) && x.Until.Equal(y.Until)
	})
}

func errorsIsNotFound(err error) bool { return err != nil && domainIs(err, domain.ErrNotFound) }

// checkModeration asserts S2 and S3 for the member.
func checkModeration(t *testing.T, name string, m *modWorld) {
	t.Helper()
	u, err := m.store.Users().Get(context.Background(), m.member.ID)
	if err != nil {
		t.Fatalf("%s: the member: %v", name, err)
	}
	checkHistory(t, name, m)
	list, lookup, expiry := m.store.Records(u.ID)
	same := func(a, b domain.Suspension) bool { return a.SuspendedAt.Equal(b.SuspendedAt) && a.Bucket == b.Bucket }
	suspended := u.Status == domain.StatusSuspended && u.Suspension != nil
	switch {
	case suspended:
		s := *u.Suspension
		if len(lookup) != 1 || !same(lookup[0], s) {
			t.Errorf("%s: S2: suspended account, reverse lookup %+v", name, lookup)
		}
		if len(list) != 1 || !same(list[0], s) {
			t.Errorf("%s: S2: suspended account, list rows %+v", name, list)
		}
		if !s.Until.IsZero() && len(expiry) == 0 {
			t.Errorf("%s: S2: suspended until %v, no expiry entry", name, s.Until)
		}
		// S3: the password is right, and the login is refused while the
		// suspension lasts (one whose until has passed no longer blocks).
		if _, err := m.svc.Login(context.Background(), "member", password, accounts.Client{}); s.ActiveAt(m.store.Now()) && !domainIs(err, domain.ErrForbidden) {
			t.Errorf("%s: S3: a suspended member logs in: %v", name, err)
		}
	default:
		if len(lookup) != 0 || len(list) != 0 {
			t.Errorf("%s: S2: active account, yet lookup %+v and list rows %+v", name, lookup, list)
		}
		if _, err := m.svc.Login(context.Background(), "member", password, accounts.Client{}); err != nil {
			t.Errorf("%s: an active member cannot log in: %v", name, err)
		}
	}
}

func domainIs(err, kind error) bool { return errors.Is(err, kind) }
