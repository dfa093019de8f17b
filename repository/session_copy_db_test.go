//go:build integration

package repository_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestMigrationCopiesTheSessionIndex (037): the entries sessions_by_user
// held before the indexes a page and a revocation read are copied into
// them with their session's password epoch, at their own write timestamps
// and with the TTL they had left, so they are listed and revocable by id;
// a revocation that landed on the new indexes before the copy (it read the
// old entry first) still shadows it, an entry without a creation or
// without a session is left, and a second run changes nothing.
func TestMigrationCopiesTheSessionIndex(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	ctx := context.Background()
	user := domain.NewID(domain.UserIDPrefix)
	created := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	written := created.UnixMicro()
	const epoch = 3
	put := func(hash string, createdAt any) {
		t.Helper()
		if err := db.Session.ContextQuery(ctx, `INSERT INTO sessions_by_user (user_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?) USING TIMESTAMP ? AND TTL 3600`, nil).
			Bind(user, hash, createdAt, created.Add(24*time.Hour), written).ExecRelease(); err != nil {
			t.Fatal(err)
		}
		if hash == "hash-without-session" {
			return
		}
		if err := db.Session.ContextQuery(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at, password_epoch) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ? AND TTL 3600`, nil).
			Bind(hash, user, createdAt, created.Add(24*time.Hour), epoch, written).ExecRelease(); err != nil {
			t.Fatal(err)
		}
	}
	kept, old, revoked, orphan := "hash-kept", "hash-from-before-010", "hash-revoked", "hash-without-session"
	put(kept, created)
	put(old, nil)
	put(revoked, created.Add(time.Second))
	put(orphan, created.Add(2*time.Second))
	sessions := repository.NewSessions(repository.NewDB(db.Session, "LOCAL_SERIAL"))
	// The revocation's deletes of the new entries landed; its delete of
	// the old one had not when the copy read it.
	gone := domain.Session{TokenHash: revoked, UserID: user, CreatedAt: created.Add(time.Second), Written: written, PasswordEpoch: epoch}
	if err := sessions.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	put(revoked, created.Add(time.Second))
	for run := 1; run <= 2; run++ {
		if err := repository.CopySessionIndex(ctx, db.Session); err != nil {
			t.Fatalf("copy run %d: %v", run, err)
		}
		page, err := sessions.Newest(ctx, user, epoch, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 || page[0].TokenHash != kept || !page[0].CreatedAt.Equal(created) || page[0].Written != written {
			t.Fatalf("run %d: newest first %+v, want the kept entry alone, created %v, written at %d", run, page, created, written)
		}
		e, err := sessions.Entry(ctx, user, domain.SessionID(kept))
		if err != nil || e.TokenHash != kept || e.Written != written || e.PasswordEpoch != epoch {
			t.Fatalf("run %d: the kept entry by id: %+v %v", run, e, err)
		}
		for _, hash := range []string{old, revoked, orphan} {
			if e, err := sessions.Entry(ctx, user, domain.SessionID(hash)); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("run %d: %s by id: %+v %v, want none", run, hash, e, err)
			}
		}
		entries, err := sessions.Entries(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if want := map[string]int{kept: epoch}[e.TokenHash]; e.PasswordEpoch != want {
				t.Fatalf("run %d: %s's entry of sessions_by_user has epoch %d, want %d", run, e.TokenHash, e.PasswordEpoch, want)
			}
		}
		var ttl int
		if err := db.Session.ContextQuery(ctx, `SELECT TTL(expires_at) FROM sessions_by_epoch WHERE user_id = ? AND password_epoch = ?`, nil).Bind(user, epoch).GetRelease(&ttl); err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > 3600 {
			t.Fatalf("run %d: the copy's TTL is %d s, want what the entry had left (at most 3600)", run, ttl)
		}
	}
}
