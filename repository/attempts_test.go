//go:build integration

package repository_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/repository"
	"shelf/tests/testkit"
)

// entriesOf lists the entries an index's InProgress reads that keep
// picks (the package keyspace is shared with other tests).
func entriesOf[E any](t *testing.T, inProgress func(context.Context, func(E, time.Time) error) error, keep func(E) bool) []E {
	t.Helper()
	var out []E
	if err := inProgress(context.Background(), func(e E, _ time.Time) error {
		if keep(e) {
			out = append(out, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// deletionsOf lists the index's entries of one account.
func deletionsOf(t *testing.T, s *repository.Deletions, userID string) []accounts.DeletionEntry {
	t.Helper()
	return entriesOf(t, s.InProgress, func(e accounts.DeletionEntry) bool { return e.UserID == userID })
}

// closingsOf lists the index's entries of one group.
func closingsOf(t *testing.T, s *repository.Closings, groupID string) []groups.ClosingEntry {
	t.Helper()
	return entriesOf(t, s.InProgress, func(e groups.ClosingEntry) bool { return e.GroupID == groupID })
}

// TestDeletionAttemptsAreTheirOwn: two attempts of one account's deletion
// begun in the same millisecond (the worst case: the same start, the same
// caller) keep an entry each. The end of one (the loser's) leaves the
// other's, which Get finds by the tag the account row records; a write of
// the ended one landing late stays ended. Before migration 014 they were
// one row, and the loser's end deleted the winner's (docs/design/deletion.md,
// "every attempt's record is its own").
func TestDeletionAttemptsAreTheirOwn(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	s := repository.NewDeletions(db)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	user := key("u_attempts")
	winner := accounts.DeletionEntry{UserID: user, Attempt: domain.NewAttempt(), At: at, By: user, UsernameKey: "name", EmailKey: "mail"}
	loser := winner
	loser.Attempt = domain.NewAttempt()
	for _, e := range []accounts.DeletionEntry{winner, loser} {
		if err := s.Begin(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if got := deletionsOf(t, s, user); len(got) != 2 {
		t.Fatalf("two attempts, listed %+v", got)
	}
	if err := s.End(ctx, loser); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(ctx, loser); err != nil { // a late write of the ended one
		t.Fatal(err)
	}
	if got := deletionsOf(t, s, user); len(got) != 1 || got[0] != winner {
		t.Fatalf("after the loser's end, listed %+v; want the winner's %+v", got, winner)
	}
	got, err := s.Get(ctx, user, domain.Deletion{At: at, By: user, Attempt: winner.Attempt})
	if err != nil || got != winner {
		t.Fatalf("the winner's entry reads %+v (%v)", got, err)
	}
	if _, err := s.Get(ctx, user, domain.Deletion{At: at, By: user, Attempt: loser.Attempt}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the loser's entry reads %v; want not found", err)
	}
	if err := s.End(ctx, winner); err != nil {
		t.Fatal(err)
	}
	if got := deletionsOf(t, s, user); len(got) != 0 {
		t.Fatalf("after both ends, listed %+v", got)
	}
}

// TestClosingAttemptsAreTheirOwn: as TestDeletionAttemptsAreTheirOwn, for
// two managers closing one group in the same millisecond.
func TestClosingAttemptsAreTheirOwn(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	s := repository.NewClosings(db)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	group := key("g_attempts")
	winner := groups.ClosingEntry{GroupID: group, Attempt: domain.NewAttempt(), At: at, By: "u_one"}
	loser := groups.ClosingEntry{GroupID: group, Attempt: domain.NewAttempt(), At: at, By: "u_two"}
	for _, e := range []groups.ClosingEntry{winner, loser} {
		if err := s.Begin(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.End(ctx, loser); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(ctx, loser); err != nil {
		t.Fatal(err)
	}
	if got := closingsOf(t, s, group); len(got) != 1 || got[0] != winner {
		t.Fatalf("after the loser's end, listed %+v; want the winner's %+v", got, winner)
	}
	if err := s.End(ctx, winner); err != nil {
		t.Fatal(err)
	}
	if got := closingsOf(t, s, group); len(got) != 0 {
		t.Fatalf("entries left after every end: %+v", got)
	}
}
