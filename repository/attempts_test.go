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
	"shelf/internal/testkit"
	"shelf/repository"
)

// entriesOf lists the entries an index's InProgress reads that keep
// picks (the package keyspace is shared with other tests).
func entriesOf[E any](t *testing.T, inProgress func(context.Context, func(E) error) error, keep func(E) bool) []E {
	t.Helper()
	var out []E
	if err := inProgress(context.Background(), func(e E) error {
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

// TestDeletionEntriesBefore014AreCarriedOver: a row of account_deletions
// (a deletion begun before migration 014, whose account row has no tag) is
// listed under the empty tag and moved to the new index, so the finish of
// that deletion (which ends the entry the row records, the empty tag) ends it. A
// write of the old row landing after that is carried over again, and
// stays ended.
func TestDeletionEntriesBefore014AreCarriedOver(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	s := repository.NewDeletions(db)
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	user := key("u_legacy")
	legacyInsert := func() {
		t.Helper()
		if err := db.Session.Query(`INSERT INTO account_deletions (day, user_id, started_at, deleted_by, username_key, email_key) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`, nil).
			Bind(at.Format(time.DateOnly), user, at, "admin", "name", "mail", at.UnixMicro()).ExecRelease(); err != nil {
			t.Fatal(err)
		}
	}
	legacyRows := func() int {
		t.Helper()
		var n int
		if err := db.Session.Query(`SELECT COUNT(*) FROM account_deletions WHERE day = ? AND user_id = ?`, nil).
			Bind(at.Format(time.DateOnly), user).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	legacyInsert()
	want := accounts.DeletionEntry{UserID: user, At: at, By: "admin", UsernameKey: "name", EmailKey: "mail"}
	if got := deletionsOf(t, s, user); len(got) != 1 || got[0] != want {
		t.Fatalf("the old row is listed as %+v; want %+v", got, want)
	}
	if n := legacyRows(); n != 0 {
		t.Fatalf("the old row is still there (%d) once carried over", n)
	}
	if got, err := s.Get(ctx, user, domain.Deletion{At: at, By: "admin"}); err != nil || got != want {
		t.Fatalf("the carried-over entry reads %+v (%v)", got, err)
	}
	if err := s.End(ctx, want); err != nil {
		t.Fatal(err)
	}
	legacyInsert() // landing late
	if got := deletionsOf(t, s, user); len(got) != 0 {
		t.Fatalf("an ended entry is back: %+v", got)
	}
	if n := legacyRows(); n != 0 {
		t.Fatalf("the late old row is still there (%d)", n)
	}
}

// TestClosingAttemptsAreTheirOwn: as TestDeletionAttemptsAreTheirOwn, for
// two managers closing one group in the same millisecond; and a row of
// group_closings (before 014) is carried over under the empty tag.
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

	legacy := key("g_legacy")
	if err := db.Session.Query(`INSERT INTO group_closings (day, group_id, started_at, closed_by) VALUES (?, ?, ?, ?) USING TIMESTAMP ?`, nil).
		Bind(at.Format(time.DateOnly), legacy, at, "u_one", at.UnixMicro()).ExecRelease(); err != nil {
		t.Fatal(err)
	}
	want := groups.ClosingEntry{GroupID: legacy, At: at, By: "u_one"}
	if got := closingsOf(t, s, legacy); len(got) != 1 || got[0] != want {
		t.Fatalf("the old row is listed as %+v; want %+v", got, want)
	}
	if err := s.End(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got := append(closingsOf(t, s, group), closingsOf(t, s, legacy)...); len(got) != 0 {
		t.Fatalf("entries left after every end: %+v", got)
	}
}
