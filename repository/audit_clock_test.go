//go:build integration

package repository_test

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestATidierAheadKeepsAFreshEmptiedMark: a bucket's last suspension is
// erased, which marks its index entry emptied at this moment; a tidier
// whose clock runs two hours ahead then tidies entries emptied over an
// hour ago. By its own clock the mark is old enough and it would delete
// it at the mark's time, so a suspension in that bucket from a process
// whose clock is behind the mark would find no entry and mark it live
// under the delete: the bucket hidden from the list until the clocks
// pass the mark. Counted by the node's clock too, the mark is kept; a
// tidy of every emptied entry then drops it.
func TestATidierAheadKeepsAFreshEmptiedMark(t *testing.T) {
	t.Parallel()
	tdb := testkit.NewDB(t)
	db := repository.NewDB(tdb.Session, "LOCAL_SERIAL")
	ctx, store, now := context.Background(), repository.NewSuspensions(db), time.Now().UTC()
	sp := domain.Suspension{UserID: "u_tidied", Username: "tidied", Reason: "r", SuspendedAt: now.Truncate(time.Millisecond),
		SuspendedBy: "admin", Bucket: now.Format("2006-01")}
	if err := store.Record(ctx, sp, 1); err != nil {
		t.Fatal(err)
	}
	if err := store.Erase(ctx, sp, 1); err != nil {
		t.Fatal(err)
	}
	ahead := repository.NewAudit(db).WithClock(func() time.Time { return time.Now().Add(2 * time.Hour) })
	if n, err := ahead.TidyIndex(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("a tidier two hours ahead changed %d entries (%v), want none: the mark was made just now", n, err)
	}
	if n, err := repository.NewAudit(db).TidyIndex(ctx, 0); err != nil || n != 1 {
		t.Fatalf("tidying every emptied entry changed %d (%v), want the one kept", n, err)
	}
}
