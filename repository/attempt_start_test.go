//go:build integration

package repository_test

import (
	"context"
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
	if err := s.InProgress(context.Background(), func(e groups.ChangeEntry) error {
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
// which the pass still reads: no end leaves one there). Laid out before migration 032 (a
// day partition clustered by group, read whole), the last pass met every
// entry ended that day; from the index's start (horizon 500 ms here) it
// meets the last round's (docs/design/jobs.md#index-start).
func TestAttemptIndexReadCostStaysFlat(t *testing.T) {
	t.Parallel()
	total := countFromEnv("SHELF_TEST_ATTEMPTS", 10_000)
	rounds := 20
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	tr := &traces{}
	s := repository.NewGroupChanges(db).WithIndex(500*time.Millisecond, tr)
	ctx := context.Background()

	var reads []tracedRead
	started := time.Now()
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < total/rounds; i += 16 {
					e := groups.ChangeEntry{GroupID: fmt.Sprintf("g_flat%d_%d", round, i), Attempt: domain.NewAttempt(),
						At: time.Now().UTC().Truncate(time.Millisecond)}
					if err := s.Begin(ctx, e); err != nil {
						errs <- err
						return
					}
					if err := s.End(ctx, e); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		tr.take() // the traces of the writes, if any
		if got := listedChanges(t, s); len(got) != 0 {
			t.Fatalf("round %d: every attempt ended, the pass read %d", round, len(got))
		}
		reads = append(reads, tracedRead{at: time.Since(started), progress: (round + 1) * (total / rounds), traced: tr.take()})
		time.Sleep(100 * time.Millisecond)
	}
	checkFlat(t, tdb.Session.Session, reads, total, "change entries begun and ended", time.Since(started))
}

// TestAttemptIndexStartHoldsAtTheOldestOpenEntry: the start moves up to
// the oldest entry still open and no further, whatever ends around it;
// once it ends, the start moves on to the horizon. Each pass reports how
// far the start trails now (DB.OnIndexStart, the metric
// shelf_attempt_index_lag_seconds): the open entry's age while it holds
// the start, the horizon after. An entry acknowledged
// after a pass, within the horizon of its time, is read by the next; one
// acknowledged later than that may be passed, which is why an attempt
// whose entry is acknowledged past domain.EntryGrant goes no further
// (domain.Entered; the horizon is the grant and the clock skew).
func TestAttemptIndexStartHoldsAtTheOldestOpenEntry(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	horizon := 500 * time.Millisecond
	var lagMu sync.Mutex
	var lag time.Duration
	db.OnIndexStart = func(index string, d time.Duration) {
		if index == changesStart {
			lagMu.Lock()
			lag = d
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
		if got := listedChanges(t, s); !slices.Contains(got, open.Attempt) || !slices.Contains(got, e.Attempt) {
			t.Fatalf("a pass read %v; want the open %s and %s", got, open.Attempt, e.Attempt)
		}
		end(e)
		if start := queueStart(t, db, changesStart); start.After(open.At) {
			t.Fatalf("the start moved to %s, past the entry still open at %s", start, open.At)
		}
		if age := time.Since(open.At); lastLag() < age-horizon {
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
