//go:build integration

package repository_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/repository"
	"shelf/tests/testkit"
)

// changesStart is the queue_progress row of the index of membership
// changes (migration 032).
const changesStart = "group_change_attempts_by_start"

// listedChanges lists the attempts an index pass reads.
func listedChanges(t *testing.T, s *repository.GroupChanges) []string {
	t.Helper()
	var out []string
	if err := s.InProgress(context.Background(), func(e groups.ChangeEntry, _ time.Time) error {
		out = append(out, e.Attempt)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAttemptIndexReadCostStaysFlat drives 10 000 membership changes'
// entries (SHELF_TEST_ATTEMPTS) through the index, each begun and ended as
// a change does, in 20 rounds with a worker's pass after each, and counts
// the tombstone cells each pass meets (in the old layout's table too,
// which the pass still reads: no end leaves one there). Laid out before
// migration 032 (a day partition clustered by group, read whole), the last
// pass met every entry ended that day; from the index's start (horizon
// 250 ms here, a round apart) it meets the last two rounds'
// (docs/design/jobs.md#index-start). So it does with an entry open
// throughout, once that entry is held (here once open for the horizon),
// which each pass reads once; while it held the start, the last pass met
// all 10 000.
func TestAttemptIndexReadCostStaysFlat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		open bool
	}{{"nothing open", false}, {"an entry open throughout", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flatPasses(t, tc.open)
		})
	}
}

// flatPasses is TestAttemptIndexReadCostStaysFlat, with an entry open
// throughout or none.
func flatPasses(t *testing.T, open bool) {
	total := countFromEnv("SHELF_TEST_ATTEMPTS", 10_000)
	rounds := 20
	horizon := 250 * time.Millisecond
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	tr := &traces{}
	s := repository.NewGroupChanges(db).WithIndex(horizon, tr).WithHold(horizon)
	ctx := context.Background()
	var want []string
	if open {
		stuck := groups.ChangeEntry{GroupID: "g_open", Attempt: domain.NewAttempt(), At: time.Now().UTC().Truncate(time.Millisecond)}
		if err := s.Begin(ctx, stuck); err != nil {
			t.Fatal(err)
		}
		want = []string{stuck.Attempt}
	}

	var reads []tracedRead
	started := time.Now()
	for round := range rounds {
		writeAll(t, total/rounds, func(i int) error {
			e := groups.ChangeEntry{GroupID: fmt.Sprintf("g_flat%d_%d", round, i), Attempt: domain.NewAttempt(),
				At: time.Now().UTC().Truncate(time.Millisecond)}
			if err := s.Begin(ctx, e); err != nil {
				return err
			}
			return s.End(ctx, e)
		})
		tr.take() // the traces of the writes, if any
		if got := listedChanges(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: the pass read %v; want %v (every other attempt ended)", round, got, want)
		}
		reads = append(reads, tracedRead{at: time.Since(started), progress: (round + 1) * (total / rounds), traced: tr.take()})
		time.Sleep(horizon) // the round before this one is then behind the start
	}
	checkFlat(t, tdb.Session.Session, reads, total, "change entries begun and ended", time.Since(started))
}

// TestAttemptIndexStartHoldsAtTheOldestOpenEntry: the start moves up to
// the oldest entry still open and no further, whatever ends around it;
// once it ends, the start moves on to the horizon. Each pass reports how
// far the start trails now (DB.OnIndexPass, the metric
// shelf_attempt_index_lag_seconds): the open entry's age while it holds
// the start, the horizon after. An entry acknowledged
// after a pass, within the horizon of its time, is read by the next; one
// acknowledged later than that may be passed, which is why an attempt
// whose entry is acknowledged past domain.EntryGrant goes no further
// (domain.Entered; the horizon is the grant and the clock skew). Without
// its start's row a pass still reads every entry and reports a day's lag.
func TestAttemptIndexStartHoldsAtTheOldestOpenEntry(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	horizon := 500 * time.Millisecond
	var lagMu sync.Mutex
	var lag time.Duration
	db.OnIndexPass = func(index string, p repository.IndexPass) {
		if index == changesStart {
			lagMu.Lock()
			lag = p.Lag
			lagMu.Unlock()
		}
	}
	lastLag := func() time.Duration {
		lagMu.Lock()
		defer lagMu.Unlock()
		return lag
	}
	s := repository.NewGroupChanges(db).WithIndex(horizon, nil)
	ctx := context.Background()
	entry := func(at time.Time) groups.ChangeEntry {
		return groups.ChangeEntry{GroupID: "g_" + domain.NewAttempt()[:8], Attempt: domain.NewAttempt(), At: at.UTC().Truncate(time.Millisecond)}
	}
	begin := func(e groups.ChangeEntry) {
		t.Helper()
		if err := s.Begin(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	end := func(e groups.ChangeEntry) {
		t.Helper()
		if err := s.End(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	open := entry(time.Now())
	begin(open)
	for range 6 {
		e := entry(time.Now())
		begin(e)
		time.Sleep(horizon / 2)
		// The pass runs inside listedChanges, at or after this: its lag is
		// at least the open entry's age now (a loaded machine may take a
		// while between the pass and the checks below).
		passed := time.Now()
		if got := listedChanges(t, s); !slices.Contains(got, open.Attempt) || !slices.Contains(got, e.Attempt) {
			t.Fatalf("a pass read %v; want the open %s and %s", got, open.Attempt, e.Attempt)
		}
		end(e)
		if start := queueStart(t, db, changesStart); start.After(open.At) {
			t.Fatalf("the start moved to %s, past the entry still open at %s", start, open.At)
		}
		if age := passed.Sub(open.At); lastLag() < age-horizon {
			t.Fatalf("the pass reported the start %s behind now; the open entry holding it is %s old", lastLag(), age)
		}
	}
	end(open)
	listedChanges(t, s)
	afterEnd := time.Now()
	listedChanges(t, s)
	if start := queueStart(t, db, changesStart); !start.After(open.At) || start.Before(afterEnd.Add(-2*horizon)) {
		t.Fatalf("every entry ended: the start is %s; want it within %s of now (the entry ended was at %s)", start, 2*horizon, open.At)
	}
	if got := lastLag(); got < horizon-50*time.Millisecond || got > 2*horizon {
		t.Fatalf("every entry ended: the pass reported the start %s behind now; want the horizon, %s", got, horizon)
	}

	// A pass has moved the start to now − horizon. An entry whose write is
	// acknowledged just after it, its time within the horizon, is read.
	inTime := entry(time.Now().Add(-horizon / 2))
	begin(inTime)
	if got := listedChanges(t, s); !slices.Contains(got, inTime.Attempt) {
		t.Fatalf("an entry acknowledged %s after its time, within the horizon %s, was not read: %v", horizon/2, horizon, got)
	}
	end(inTime)
	listedChanges(t, s)
	time.Sleep(horizon)
	listedChanges(t, s)
	tooLate := entry(time.Now().Add(-4 * horizon))
	begin(tooLate)
	if got := listedChanges(t, s); slices.Contains(got, tooLate.Attempt) {
		t.Fatalf("an entry acknowledged %s after its time was read though the start had passed it: the test no longer shows what the grant is for", 4*horizon)
	}
	end(tooLate)

	// Without its start's row (a fault), a pass reads from a day back,
	// writes no start, and reports a day's lag: the metric shows it.
	// (Its writes are stamped a day ahead of the start they write.)
	gone := time.Now().Add(48 * time.Hour).UnixMicro()
	if err := db.Session.Query(`DELETE FROM queue_progress USING TIMESTAMP ? WHERE queue = ?`, nil).Bind(gone, changesStart).Exec(); err != nil {
		t.Fatal(err)
	}
	lost := entry(time.Now())
	begin(lost)
	if got := listedChanges(t, s); !slices.Contains(got, lost.Attempt) {
		t.Fatalf("without its start's row a pass read %v; want %s", got, lost.Attempt)
	}
	if got := lastLag(); got != 24*time.Hour {
		t.Fatalf("without its start's row the pass reported the start %s behind now; want a day, which shows the fault", got)
	}
	if start := queueStart(t, db, changesStart); !start.IsZero() {
		t.Fatalf("a pass without its start's row wrote one at %s", start)
	}
	end(lost)
}

// TestAttemptIndexHoldsAnEntryOpenLong: an entry open past holdAfter
// (500 ms here) is held, read by every pass once, and no longer holds the
// start; the pass reports it (DB.OnIndexPass: shelf_attempt_index_held
// and its oldest's age). The hold's write answers lost: the copy landed,
// but the pass does not know, so the entry holds the start one pass more
// and the next finds the copy and moves on. An end whose delete of the
// copy fails leaves the entry read again, for its repair to end again.
// The end deletes the copy too, and the same copy landing again after it
// is shadowed: no pass reads the ended entry back.
func TestAttemptIndexHoldsAnEntryOpenLong(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	holds := &holdWrites{lose: true}
	db.Decorate(func(s repository.Sender) repository.Sender { holds.Sender = s; return holds })
	var passMu sync.Mutex
	var last repository.IndexPass
	db.OnIndexPass = func(index string, p repository.IndexPass) {
		if index == changesStart {
			passMu.Lock()
			last = p
			passMu.Unlock()
		}
	}
	lastPass := func() repository.IndexPass {
		passMu.Lock()
		defer passMu.Unlock()
		return last
	}
	horizon, holdAfter := 200*time.Millisecond, 500*time.Millisecond
	s := repository.NewGroupChanges(db).WithIndex(horizon, nil).WithHold(holdAfter)
	ctx := context.Background()
	open := groups.ChangeEntry{GroupID: "g_long", Attempt: domain.NewAttempt(), At: time.Now().UTC().Truncate(time.Millisecond)}
	if err := s.Begin(ctx, open); err != nil {
		t.Fatal(err)
	}
	readsOnce := func(when string) {
		t.Helper()
		if got := listedChanges(t, s); fmt.Sprint(got) != fmt.Sprint([]string{open.Attempt}) {
			t.Fatalf("%s: a pass read %v; want the open entry once", when, got)
		}
	}
	readsOnce("young")
	time.Sleep(holdAfter + 50*time.Millisecond)
	readsOnce("held, its answer lost")
	if start := queueStart(t, db, changesStart); start.After(open.At) {
		t.Fatalf("the hold's answer was lost, yet the start moved to %s, past the entry at %s", start, open.At)
	}
	if holds.count() != 1 {
		t.Fatalf("%d holds written; want 1", holds.count())
	}
	holds.answer()
	readsOnce("held")
	if start := queueStart(t, db, changesStart); !start.After(open.At) {
		t.Fatalf("the entry is held, yet the start stays at %s, before it (%s)", start, open.At)
	}
	if p := lastPass(); p.Held != 1 || p.OldestHeld < holdAfter || p.Lag > holdAfter {
		t.Fatalf("the pass reported %+v; want 1 held, at least %s old, and the start within %s", p, holdAfter, holdAfter)
	}
	readsOnce("held, again")
	if holds.count() != 1 {
		t.Fatalf("%d holds written; want 1 (a held entry is not held again)", holds.count())
	}
	holds.failEnds(true)
	if err := s.End(ctx, open); err == nil {
		t.Fatal("the end's delete of the held copy failed, yet End answered nil")
	}
	holds.failEnds(false)
	readsOnce("its end failed at the held copy (the repair reads it again and ends it)")
	if err := s.End(ctx, open); err != nil {
		t.Fatal(err)
	}
	if got := listedChanges(t, s); len(got) != 0 {
		t.Fatalf("the entry ended; a pass read %v", got)
	}
	holds.land(t)
	if got := listedChanges(t, s); len(got) != 0 {
		t.Fatalf("the hold landed again after the end; a pass read %v", got)
	}
	if p := lastPass(); p.Held != 0 || p.OldestHeld != 0 {
		t.Fatalf("nothing open; the pass reported %+v", p)
	}
}

// holdWrites decorates a DB's sender: the index's holds are sent, their
// answers lost until answer, and kept to land again; the ends' deletes of
// held copies fail unsent while failEnds says so.
type holdWrites struct {
	repository.Sender
	mu       sync.Mutex
	lose     bool
	failHeld bool
	sent     []repository.Write
}

func (h *holdWrites) Write(ctx context.Context, w repository.Write) error {
	h.mu.Lock()
	failHeld := h.failHeld
	h.mu.Unlock()
	if w.Name == "group_changes.delete_held" && failHeld {
		return errors.New("the delete was not sent (test)")
	}
	if w.Name != "group_changes.hold" {
		return h.Sender.Write(ctx, w)
	}
	h.mu.Lock()
	h.sent = append(h.sent, w)
	lose := h.lose
	h.mu.Unlock()
	err := h.Sender.Write(ctx, w)
	if err == nil && lose {
		return errors.New("the answer was lost (test)")
	}
	return err
}

func (h *holdWrites) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sent)
}

// answer lets the holds' answers through from now on.
func (h *holdWrites) answer() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lose = false
}

// failEnds makes the ends' deletes of held copies fail, or not.
func (h *holdWrites) failEnds(fail bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failHeld = fail
}

// land sends every hold written so far again, as a late attempt would.
func (h *holdWrites) land(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.sent {
		if err := w.Send(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAttemptIndexStartIgnoresAClockAhead: a process whose clock runs an
// hour ahead passes over the index; the start moves no further than the
// node's clock allows (its own would have put it 58 minutes ahead of
// everyone else's entries), so an entry another process writes next, by
// the right clock, is read by either.
func TestAttemptIndexStartIgnoresAClockAhead(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	ahead := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	ahead.Now = func() time.Time { return time.Now().Add(time.Hour) }
	horizon := 500 * time.Millisecond
	s, fast := repository.NewGroupChanges(db).WithIndex(horizon, nil), repository.NewGroupChanges(ahead).WithIndex(horizon, nil)
	listedChanges(t, fast) // from the seed, a day back
	listedChanges(t, fast)
	if start := queueStart(t, db, changesStart); start.After(time.Now()) {
		t.Fatalf("a process an hour ahead moved the start to %s, ahead of now", start)
	}
	e := groups.ChangeEntry{GroupID: "g_now", Attempt: domain.NewAttempt(), At: time.Now().UTC().Truncate(time.Millisecond)}
	if err := s.Begin(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	for _, reader := range []*repository.GroupChanges{fast, s} {
		if got := listedChanges(t, reader); !slices.Contains(got, e.Attempt) {
			t.Fatalf("an entry written by the right clock after a pass of a clock an hour ahead was not read: %v", got)
		}
	}
}

// TestAttemptIndexReadsTheOldLayoutUntilDrained: an entry a process of the
// release before wrote in the old table (migration 031's) is read and
// ended there too, until a day after migration 032 ran and a pass of this
// process found the old table empty; from then on it is read no more. An
// end deletes in the old table only what the process read there (else
// every end would leave a tombstone there for the old table's whole-day
// reads): an entry ended by a process that had not read it is read again
// and ended then.
func TestAttemptIndexReadsTheOldLayoutUntilDrained(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	ctx := context.Background()
	// writtenOld is a fresh attempt written in the old table.
	writtenOld := func(s *repository.GroupChanges) groups.ChangeEntry {
		t.Helper()
		e := groups.ChangeEntry{GroupID: "g_old", Attempt: domain.NewAttempt(), At: time.Now().UTC().Truncate(time.Millisecond)}
		if err := s.BeginInOldLayout(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	end := func(s *repository.GroupChanges, e groups.ChangeEntry) {
		t.Helper()
		if err := s.End(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// wantRead checks what a pass of s reads.
	wantRead := func(s *repository.GroupChanges, what string, want ...string) {
		t.Helper()
		if got := listedChanges(t, s); !slices.Equal(got, want) {
			t.Fatalf("%s: the pass read %v, want %v", what, got, want)
		}
	}

	s := repository.NewGroupChanges(db)
	wantRead(s, "a fresh index")
	// Read empty before the day is over: still read.
	old := writtenOld(s)
	wantRead(s, "an entry of the old layout", old.Attempt)
	end(s, old)
	wantRead(s, "the old layout's entry ended")
	unseen := writtenOld(s)
	other := repository.NewGroupChanges(db) // a process that has not read it
	end(other, unseen)
	wantRead(other, "ended by a process that had not read it, the old entry is read again", unseen.Attempt)
	end(other, unseen)
	wantRead(other, "ended once read")

	// The day after the migration: one empty pass and the old table is
	// read no more by this process.
	if err := db.Session.Query(`UPDATE queue_progress SET next = ? WHERE queue = ?`, nil).
		Bind(time.Now().Add(-time.Minute), "group_change_attempts_until").Exec(); err != nil {
		t.Fatal(err)
	}
	s = repository.NewGroupChanges(db)
	late := writtenOld(s)
	wantRead(s, "past the day, an entry left in the old layout is still read", late.Attempt)
	end(s, late)
	wantRead(s, "past the day, read empty: drained")
	writtenOld(s)
	wantRead(s, "drained, the old layout is read no more")
}
