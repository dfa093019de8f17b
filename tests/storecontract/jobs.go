package storecontract

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/jobs"
)

// Jobs runs JobChecks.
func Jobs(t *testing.T, open Open[jobs.Store]) { Run(t, open, JobChecks) }

// JobChecks are jobs.Store's contract, and the lease built on it, what the
// job worker counts on (docs/design/jobs.md): a row made once, every change
// a compare-and-set on the version decided once, and a worker whose lease
// was taken over unable to write the row again.
var JobChecks = []Check[jobs.Store]{
	{"CreatedOnce", jobsCreatedOnce},
	{"OneOfConcurrentUpdatesApplies", jobsOneUpdateApplies},
	{"OneWorkerHoldsTheLease", jobsOneWorkerHoldsTheLease},
	{"ATakenOverLeaseCannotWrite", jobsTakenOverLeaseCannotWrite},
}

// newJob is a job of the check's own.
func newJob(c Clock) jobs.Job {
	return jobs.Job{ID: jobs.IDOf(domain.NewAttempt(), ""), Kind: jobs.KindDeletion, Subject: Key("u"), By: Key("u"),
		CreatedAt: At(c.Now()), Version: 1, UpdatedAt: At(c.Now())}
}

// jobsCreatedOnce: a job's row is made once, whatever else creates it
// after; it reads back with every field; an unknown id is not found.
func jobsCreatedOnce(t testing.TB, s jobs.Store, c Clock) {
	ctx := context.Background()
	j := newJob(c)
	j.Phase, j.Done, j.Total, j.Runs = "items", 3, 10, 1
	if created, err := s.Create(ctx, j); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	again := j
	again.Phase = "other"
	if created, err := s.Create(ctx, again); err != nil || created {
		t.Fatalf("create again: %v %v; want not created", created, err)
	}
	for _, get := range []func(context.Context, string) (jobs.Job, error){s.Get, s.GetSerial} {
		got, err := get(ctx, j.ID)
		if err != nil || got != j {
			t.Fatalf("read back %+v %v; want %+v", got, err, j)
		}
	}
	if _, err := s.Get(ctx, jobs.IDOf(domain.NewAttempt(), "")); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

// jobsOneUpdateApplies: of several compare-and-sets on one version,
// exactly one applies, and the row is that one's.
func jobsOneUpdateApplies(t testing.TB, s jobs.Store, c Clock) {
	ctx := context.Background()
	j := newJob(c)
	if _, err := s.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	type result struct {
		applied bool
		err     error
	}
	results := concurrently(8, func(i int) result {
		next := j
		next.Version, next.Owner = 2, Key("w")
		next.Done = i
		applied, err := s.Update(ctx, next)
		return result{applied, err}
	})
	winner := -1
	for i, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.applied {
			if winner >= 0 {
				t.Fatalf("updates %d and %d both applied", winner, i)
			}
			winner = i
		}
	}
	got, err := s.GetSerial(ctx, j.ID)
	if err != nil || winner < 0 || got.Version != 2 || got.Done != winner {
		t.Fatalf("row %+v %v; winner %d", got, err, winner)
	}
}

// jobsOneWorkerHoldsTheLease: of workers acquiring one job at once, one
// holds it; the others are told it is held, until it runs out.
func jobsOneWorkerHoldsTheLease(t testing.TB, s jobs.Store, c Clock) {
	ctx := context.Background()
	j := newJob(c)
	results := concurrently(4, func(i int) error {
		_, err := jobs.Acquire(ctx, s, c.Now, TTL, j, Key("w"))
		return err
	})
	held := 0
	for _, err := range results {
		switch {
		case err == nil:
			held++
		case !errors.Is(err, jobs.ErrHeld):
			t.Fatalf("acquire: %v", err)
		}
	}
	if held != 1 {
		t.Fatalf("%d workers hold the lease; want 1", held)
	}
	if _, err := jobs.Acquire(ctx, s, c.Now, TTL, j, Key("late")); !errors.Is(err, jobs.ErrHeld) {
		t.Fatalf("a worker while the lease runs: %v", err)
	}
	c.Pass(TTLPassed)
	if _, err := jobs.Acquire(ctx, s, c.Now, TTL, j, Key("next")); err != nil {
		t.Fatalf("after the lease ran out: %v", err)
	}
}

// jobsTakenOverLeaseCannotWrite: a worker whose lease ran out and was
// taken over can neither report nor finish (ErrLost): the row stays the
// next holder's, who finishes it.
func jobsTakenOverLeaseCannotWrite(t testing.TB, s jobs.Store, c Clock) {
	ctx := context.Background()
	j := newJob(c)
	first, err := jobs.Acquire(ctx, s, c.Now, TTL, j, Key("first"))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Report(ctx, "items", 1, 5); err != nil {
		t.Fatal(err)
	}
	c.Pass(TTLPassed)
	second, err := jobs.Acquire(ctx, s, c.Now, TTL, j, Key("second"))
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Report(ctx, "items", 4, 5); !errors.Is(err, jobs.ErrLost) {
		t.Fatalf("the first worker reports after the takeover: %v", err)
	}
	if err := first.Finish(ctx); !errors.Is(err, jobs.ErrLost) {
		t.Fatalf("the first worker finishes after the takeover: %v", err)
	}
	if err := second.Report(ctx, "items", 2, 5); err != nil {
		t.Fatal(err)
	}
	if err := second.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSerial(ctx, j.ID)
	if err != nil || got.State(c.Now()) != jobs.Finished || got.Done != 2 || got.Runs != 2 || got.Owner != "" {
		t.Fatalf("row %+v %v; want finished by the second worker, done 2, runs 2", got, err)
	}
}
