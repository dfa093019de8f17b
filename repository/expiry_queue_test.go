//go:build integration

package repository_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"shelf/repository"
	"shelf/tests/testkit"
)

// TestExpiryStartHoldsAtTheFirstLiveEntry: the reader's start moves up to
// the first entry still there (one whose lift failed keeps it), and never
// closer to now than the horizon, so an entry written late, after its end,
// is still found within the horizon.
func TestExpiryStartHoldsAtTheFirstLiveEntry(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	s := repository.NewSuspensions(db).WithExpiryHorizon(2 * time.Second)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, id := range []string{"u_a", "u_stuck", "u_b"} {
		if err := s.InsertExpiry(ctx, id, now.Add(time.Duration(i-10)*time.Second), 2); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Expired(ctx, time.Now(), 10)
	if err != nil || len(got) != 3 || got[0].UserID != "u_a" {
		t.Fatalf("expired %+v, %v: want the three, oldest first", got, err)
	}
	// u_a and u_b are lifted; u_stuck's lift fails.
	for _, sp := range []int{0, 2} {
		if err := s.EraseExpiry(ctx, got[sp].UserID, got[sp].Until, 3); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.Expired(ctx, time.Now(), 10)
	if err != nil || len(got) != 1 || got[0].UserID != "u_stuck" {
		t.Fatalf("expired %+v, %v: want the entry whose lift failed", got, err)
	}
	if start := queueStart(t, db, "suspension_expiries"); !start.Equal(now.Add(-9 * time.Second)) {
		t.Fatalf("start %v, want the stuck entry's end %v", start, now.Add(-9*time.Second))
	}
	if err := s.EraseExpiry(ctx, "u_stuck", got[0].Until, 3); err != nil {
		t.Fatal(err)
	}
	called := time.Now()
	if got, err = s.Expired(ctx, time.Now(), 10); err != nil || len(got) != 0 {
		t.Fatalf("expired %+v, %v: want none", got, err)
	}
	answered := time.Now()
	start := queueStart(t, db, "suspension_expiries")
	if start.Before(called.Add(-2*time.Second).Truncate(time.Millisecond)) || start.After(answered.Add(-2*time.Second)) {
		t.Fatalf("start %v, want the horizon (2 s) before the read (between %v and %v)", start, called.Add(-2*time.Second), answered.Add(-2*time.Second))
	}
	// An older start written late (or again, its answer lost) does not
	// move the reader back.
	if err := db.Session.Query(`UPDATE queue_progress USING TIMESTAMP ? SET next = ? WHERE queue = 'suspension_expiries'`, nil).
		Bind(now.Add(-9*time.Second).Add(24*time.Hour).UnixMicro(), now.Add(-9*time.Second)).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	if got := queueStart(t, db, "suspension_expiries"); !got.Equal(start) {
		t.Fatalf("a late write of an older start moved it to %v (was %v)", got, start)
	}
	// An entry whose write lands 1 s after its end is still read.
	if err := s.InsertExpiry(ctx, "u_late", time.Now().Add(-time.Second), 2); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Expired(ctx, time.Now(), 10); err != nil || len(got) != 1 || got[0].UserID != "u_late" {
		t.Fatalf("expired %+v, %v: want the late entry", got, err)
	}
}

// TestExpiryReadCostStaysFlat drives 10 000 timed suspensions' expiry
// entries (SHELF_TEST_EXPIRIES: 100 000 for the run docs/design/capacity-model.md quotes)
// through the sweeper's read, 20 reads in all (each entry read once ended,
// then erased, as a lift does) and counts the tombstone cells each read
// meets. Sliced from the partition's start, as before, a read met every
// entry erased so far (100 000 at the end of the larger run, the failure
// threshold); from the reader's start it meets those of the last horizon
// only: 500 here, where sliced from the start the last read would meet
// 10 000. (The default is 10 000, down from 20 000: its 40 000 writes
// and deletes weighed on make test's Cassandra beside the end-to-end
// tests, and what a read meets depends on the pace, not the total.)
func TestExpiryReadCostStaysFlat(t *testing.T) {
	t.Parallel()
	total := countFromEnv("SHELF_TEST_EXPIRIES", 10_000)
	batch := max(100, total/20)
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	tr := &traces{}
	s := repository.NewSuspensions(db).WithExpiryHorizon(500 * time.Millisecond)
	reader := s.WithTracer(tr)
	ctx := context.Background()

	// Ends spread over 40 s (250 a second for 10 000), starting 2 s
	// after the writes are done.
	base := time.Now().Add(time.Duration(total/15_000)*time.Second + 2*time.Second).UTC()
	spread := 40 * time.Second
	until := func(i int) time.Time {
		return base.Add(spread * time.Duration(i) / time.Duration(total)).Truncate(time.Millisecond)
	}
	writeAll(t, total, func(i int) error { return s.InsertExpiry(ctx, fmt.Sprintf("u_exp%d", i), until(i), 2) })
	time.Sleep(time.Until(base))

	var reads []tracedRead
	erased := 0
	started := time.Now()
	for erased < total {
		if time.Since(started) > 3*spread {
			t.Fatalf("%d of %d entries erased after %s", erased, total, time.Since(started))
		}
		got, err := reader.Expired(ctx, time.Now(), batch)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, tracedRead{at: time.Since(started), progress: erased, traced: tr.take()})
		sem := make(chan struct{}, 32)
		var lifts sync.WaitGroup
		for _, sp := range got {
			sem <- struct{}{}
			lifts.Go(func() {
				defer func() { <-sem }()
				if err := s.EraseExpiry(ctx, sp.UserID, sp.Until, 3); err != nil {
					t.Error(err)
				}
			})
		}
		lifts.Wait()
		erased += len(got)
		time.Sleep(100 * time.Millisecond)
	}
	checkFlat(t, tdb.Session.Session, reads, total, "expiry entries read and erased", time.Since(started))
}
