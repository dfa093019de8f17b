package faults

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
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
	// Built the way newAuditModWorld builds it again with the audit.
	// EmptiedKept: the sweeper deletes a bucket's emptied mark at its
	// first pass after the clock moved.
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: w.store.Now, Attempts: w.store.ModerationAttempts(), EmptiedKept: time.Nanosecond},
		w.svc, w.store.Users(), w.store.Suspensions())
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

// workers runs what every process runs on its own: the sweeper (its pass
// over the bucket index, lifts, then the interrupted suspensions and
// unsuspensions), and the job worker when deletion is wired.
func (m *modWorld) workers() {
	_, _ = m.mod.IndexBuckets(context.Background(), m.store.Audit())
	_ = m.sweep()
	_, _ = m.mod.FinishInterrupted(context.Background(), time.Minute)
	if m.life != nil {
		_, _ = m.life.WorkJobs(context.Background())
	}
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
	// steps are the action's steps (Hooks.AfterStep) after which a
	// competitor acts in the middle of it, besides after it.
	steps []string
	// grants: the action writes a suspension's records (a list row) on
	// the account as it read it, so it checks again at its end.
	grants bool
}

var (
	suspendSteps = []string{"cas", "records"}
	liftSteps    = []string{"cas", "history"}
)

var modOperations = []modOperation{
	{
		name:     "suspend",
		grants:   true,
		steps:    suspendSteps,
		run:      func(m *modWorld) error { return m.suspend(0) },
		retry:    func(m *modWorld) error { return m.suspend(0) },
		opposite: func(m *modWorld) error { return m.unsuspend() },
	},
	{
		name:     "suspend-until",
		grants:   true,
		steps:    suspendSteps,
		run:      func(m *modWorld) error { return m.suspend(time.Hour) },
		retry:    func(m *modWorld) error { return m.suspend(time.Hour) },
		opposite: func(m *modWorld) error { return m.unsuspend() },
	},
	{
		name:     "unsuspend",
		steps:    liftSteps,
		setup:    func(m *modWorld) error { return m.suspend(time.Hour) },
		run:      func(m *modWorld) error { return m.unsuspend() },
		retry:    func(m *modWorld) error { return m.unsuspend() },
		opposite: func(m *modWorld) error { return m.suspend(0) },
	},
	{
		name:  "sweep",
		steps: liftSteps,
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
		name:   "suspend-after-interrupted-lift",
		grants: true,
		steps:  suspendSteps,
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
		steps:    liftSteps,
		setup:    func(m *modWorld) error { return m.crashAfter("cas", func() error { return m.suspend(time.Hour) }) },
		run:      func(m *modWorld) error { return m.unsuspend() },
		retry:    func(m *modWorld) error { return m.unsuspend() },
		opposite: func(m *modWorld) error { return m.suspend(0) },
	},
	{
		// A suspension that crashed after its compare-and-set, before its
		// records: the repair writes them (the sessions ended with it).
		name:     "repair-suspension",
		steps:    []string{"records"},
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

// modCompetitor is what another admin (or process) does while the
// action is under way: it acts once, at the first of its step of the
// action (at), a Slow call of the action (in Meanwhile, beside the
// sweeper and the repair), or the action's end, always before held writes
// land.
type modCompetitor struct {
	name string
	at   string
	run  func(m *modWorld, op modOperation) error
	// last, when set, is what has the last word after the held writes
	// landed (the competitor's retry) in place of the action's retry.
	last func(m *modWorld, op modOperation) error
}

var (
	competeNone     = modCompetitor{name: "none"}
	competeOpposite = modCompetitor{name: "opposite",
		run:  func(m *modWorld, op modOperation) error { return op.opposite(m) },
		last: func(m *modWorld, op modOperation) error { return op.opposite(m) }}
	// Two of the same action on the same account at once: two
	// suspensions, two lifts, two sweepers, two repairs.
	competeSame = modCompetitor{name: "same",
		run: func(m *modWorld, op modOperation) error { return op.retry(m) }}
)

// competeDelete is another admin deleting the account, at step at of the
// action ("" after its fault), and finishing the deletion after the held
// writes landed (its retry; the action's answer no longer matters).
func competeDelete(at string) modCompetitor {
	name := "delete"
	if at != "" {
		name += "@" + at
	}
	return modCompetitor{name: name, at: at,
		run:  func(m *modWorld, _ modOperation) error { return m.deleteMember() },
		last: func(m *modWorld, _ modOperation) error { return m.deleteMember() }}
}

// competeDeleteStopped is another admin's deletion that stops right
// after its compare-and-set (its process dies before it erases anything),
// at step at of the action; its retry finishes it after the held writes
// landed. Until then only the action can see that what it writes is of an
// account being deleted.
func competeDeleteStopped(at string) modCompetitor {
	return modCompetitor{name: "delete-stopped@" + at, at: at,
		run: func(m *modWorld, _ modOperation) error {
			m.life.Hooks.AfterDeletionStep = func(step string) error {
				if step == "begun" { // the request's compare-and-set, before its job erases anything
					return errors.New("crashed (test hook)")
				}
				return nil
			}
			defer func() { m.life.Hooks.AfterDeletionStep = nil }()
			_ = m.deleteMember()
			return nil
		},
		last: func(m *modWorld, _ modOperation) error { return m.deleteMember() }}
}

// modFinisher finishes what the faulted action left.
type modFinisher struct {
	name string
	run  func(m *modWorld, op modOperation, c modCompetitor, err error)
}

var (
	// finishRetry: the held writes land, then the client retries (or the
	// competitor, who had the last word, does).
	finishRetry = modFinisher{name: "retry", run: func(m *modWorld, op modOperation, c modCompetitor, err error) {
		m.store.Land()
		switch {
		case c.last != nil:
			_ = c.last(m, op)
		case err != nil:
			_ = op.retry(m)
		}
	}}
	// finishWorkers: nobody retries, and no operator runs the repair.
	// With the clock past every end and grace, the sweeper (its lifts and
	// its pass over the attempts left in progress) and the job worker run
	// while the writes are still held, then the writes land, then they
	// run again.
	finishWorkers = modFinisher{name: "workers", run: func(m *modWorld, _ modOperation, _ modCompetitor, _ error) {
		m.store.Advance(2 * time.Hour)
		m.workers()
		m.store.Land()
		m.store.Advance(time.Minute)
		m.workers()
	}}
)

// modVariant is a competitor and a finisher explored together.
type modVariant struct {
	competitor modCompetitor
	finisher   modFinisher
}

// modVariants are what the action is explored with: alone, the opposite
// action, the same action, a deletion (after the fault and after each of
// the action's steps), each finished by the retry; and alone or with a
// deletion, finished by the workers alone.
func modVariants(op modOperation) []modVariant {
	vs := []modVariant{{competeNone, finishRetry}, {competeOpposite, finishRetry}, {competeSame, finishRetry},
		{competeDelete(""), finishRetry}}
	for _, step := range op.steps {
		vs = append(vs, modVariant{competeDelete(step), finishRetry})
	}
	if op.grants {
		for _, step := range op.steps {
			vs = append(vs, modVariant{competeDeleteStopped(step), finishRetry})
		}
	}
	return append(vs, modVariant{competeNone, finishWorkers}, modVariant{competeDelete(""), finishWorkers})
}

// TestExploreModeration runs every moderation action with every fault at
// every store call, with a competitor (the opposite action by another
// admin, the same action at once, a deletion of the account) acting in
// the middle of it or after it, before held writes land, while a Slow
// call lets the sweeper and the repair run; then the held writes land and
// the client (or the competitor) retries, or only the workers run, before
// and after the writes land. It checks S2: the account is the truth, and
// its records agree with it, a deleted account having none, and the
// suspended list shows exactly the suspended visible accounts; S3 for a
// suspended account; and S5: the history holds exactly one entry for each
// suspension and lift the account's compare-and-sets made.
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
		calls := callsOf(t, probe.store, op.name, func() error {
			err := op.run(probe)
			if errorsIsNotFound(err) {
				return nil // the sweep finds nothing to lift: answered as it should
			}
			return err
		})
		vs := modVariants(op)
		names := make([]string, len(vs))
		for i, v := range vs {
			names[i] = v.competitor.name + "/" + v.finisher.name
		}
		total += everySchedule(t, op.name, calls, names, func(name string, k int, fault memstore.Fault, i int) {
			exploreModeration(t, name, op, k, fault, vs[i])
		})
	}
	t.Logf("%d schedules in all", total)
}

func exploreModeration(t *testing.T, name string, op modOperation, k int, fault memstore.Fault, v modVariant) {
	m := newModWorld(t).withDeletion()
	if op.setup != nil {
		if err := op.setup(m); err != nil {
			t.Fatalf("%s: set-up: %v", name, err)
		}
	}
	// Call k of the action takes the fault; the calls of a competitor or
	// a worker acting in the middle of it are neither counted nor
	// faulted, so k is the same call with every competitor.
	racing, calls := false, 0
	m.store.FaultAt = func(int, string) memstore.Fault {
		if racing {
			return memstore.None
		}
		calls++
		if calls-1 == k {
			return fault
		}
		return memstore.None
	}
	c := v.competitor
	acted := c.run == nil
	compete := func() {
		if acted {
			return
		}
		acted = true
		racing = true
		defer func() { racing = false }()
		if err := c.run(m, op); err != nil && !expected(err) && !errorsIsNotFound(err) {
			t.Errorf("%s: the competitor answered %v", name, err)
		}
	}
	m.mod.Hooks.AfterStep = func(_, step string) error {
		if c.at != "" && step == c.at {
			compete()
		}
		return nil
	}
	m.store.Meanwhile = func() {
		racing = true
		_ = m.sweep()
		_ = m.repair()
		racing = false
		compete()
	}
	err := op.run(m)
	m.mod.Hooks.AfterStep, m.store.Meanwhile = nil, nil
	recovered(m.store)
	if err != nil && !expected(err) && !errorsIsNotFound(err) {
		t.Errorf("%s: the action answered %v", name, err)
	}
	compete()
	if err == nil || errorsIsNotFound(err) {
		checkAnswered(t, name, m)
	}
	v.finisher.run(m, op, c, err)
	checkModeration(t, name, m)
}

// checkAnswered asserts S2 once the action answered its last word
// (success or not found: nothing of it is left to land) and the
// competitor acted: an account being deleted or deleted is in no list
// row and has no lookup, whether or not its deletion is finished. (An
// expiry entry alone lists nobody: it is the sweeper's.)
func checkAnswered(t *testing.T, name string, m *modWorld) {
	t.Helper()
	u, err := m.store.Users().Get(context.Background(), m.member.ID)
	if err != nil {
		t.Fatalf("%s: the member: %v", name, err)
	}
	if u.Visible() {
		return
	}
	if list, lookup, _ := m.store.Records(u.ID); len(list)+len(lookup) != 0 {
		t.Errorf("%s: S2: once answered, the %s account keeps list rows %+v and lookup %+v", name, u.Status, list, lookup)
	}
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

// checkModeration asserts S2 and S3 for the member, and that the
// suspended list shows exactly the suspended visible accounts.
func checkModeration(t *testing.T, name string, m *modWorld) {
	t.Helper()
	u, err := m.store.Users().Get(context.Background(), m.member.ID)
	if err != nil {
		t.Fatalf("%s: the member: %v", name, err)
	}
	checkHistory(t, name, m)
	checkSuspendedList(t, name, m)
	list, lookup, expiry := m.store.Records(u.ID)
	same := func(a, b domain.Suspension) bool { return a.SuspendedAt.Equal(b.SuspendedAt) && a.Bucket == b.Bucket }
	suspended := u.Status == domain.StatusSuspended && u.Suspension != nil
	switch {
	case !u.Visible():
		if len(list)+len(lookup) == 0 && len(expiry) != 0 {
			// An expiry entry alone (a lift stopped before its last erase)
			// is the sweeper's, once its end has come.
			m.store.Advance(2 * time.Hour)
			if err := m.sweep(); err != nil {
				t.Errorf("%s: the sweeper: %v", name, err)
			}
			list, lookup, expiry = m.store.Records(u.ID)
		}
		if len(list)+len(lookup)+len(expiry) != 0 {
			t.Errorf("%s: S2: the %s account keeps list rows %+v, lookup %+v, expiry entries %+v", name, u.Status, list, lookup, expiry)
		}
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
		// A suspension with an end is lifted once it passed, by the sweeper
		// alone, whenever its records were written (an expiry entry written
		// further behind than the reader's start is never read).
		if !s.Until.IsZero() {
			if past := s.Until.Sub(m.store.Now()) + time.Minute; past > 0 {
				m.store.Advance(past)
			}
			m.workers()
			m.workers()
			if now, err := m.store.Users().Get(context.Background(), u.ID); err == nil && now.Status == domain.StatusSuspended &&
				now.Suspension != nil && same(*now.Suspension, s) {
				t.Errorf("%s: S2: suspended until %v, still suspended at %v after the sweeper's passes", name, s.Until, m.store.Now())
			}
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

// checkSuspendedList asserts S2 as an admin sees it: the suspended list
// shows exactly the suspended accounts that are visible, each once.
func checkSuspendedList(t *testing.T, name string, m *modWorld) {
	t.Helper()
	ctx := context.Background()
	page, err := m.mod.ListSuspended(ctx, m.admin, "", 100)
	if err != nil {
		t.Fatalf("%s: the suspended list: %v", name, err)
	}
	var listed, want []string
	for _, s := range page.Items {
		listed = append(listed, s.UserID)
	}
	_, users := m.store.Snapshot()
	for _, u := range users {
		if u.Status == domain.StatusSuspended && u.Suspension != nil {
			want = append(want, u.ID)
		}
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("%s: S2: the suspended list shows %v, the suspended accounts are %v", name, listed, want)
	}
}

func domainIs(err, kind error) bool { return errors.Is(err, kind) }
