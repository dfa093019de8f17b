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
// them at their own write timestamps and with the TTL they had left, so
// they are listed and revocable by id; a revocation that landed on the new
// indexes before the copy (it read the old entry first) still shadows it,
// an entry without a creation is left, and a second run changes nothing.
func TestMigrationCopiesTheSessionIndex(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	ctx := context.Background()
	user := domain.NewID(domain.UserIDPrefix)
	created := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	written := created.UnixMicro()
	put := func(hash string, createdAt any) {
		t.Helper()
		if err := db.Session.ContextQuery(ctx, `INSERT INTO sessions_by_user (user_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?) USING TIMESTAMP ? AND TTL 3600`, nil).
			Bind(user, hash, createdAt, created.Add(24*time.Hour), written).ExecRelease(); err != nil {
			t.Fatal(err)
		}
	}
	kept, old, revoked := "hash-kept", "hash-from-before-010", "hash-revoked"
	put(kept, created)
	put(old, nil)
	put(revoked, created.Add(time.Second))
	sessions := repository.NewSessions(repository.NewDB(db.Session, "LOCAL_SERIAL"))
	// The revocation's deletes of the new entries landed; its delete of
	// the old one had not when the copy read it.
	gone := domain.Session{TokenHash: revoked, UserID: user, CreatedAt: created.Add(time.Second), Written: written}
	if err := sessions.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	put(revoked, created.Add(time.Second))
	for run := 1; run <= 2; run++ {
		if err := repository.CopySessionIndex(ctx, db.Session); err != nil {
			t.Fatalf("copy run %d: %v", run, err)
		}
		page, err := sessions.Newest(ctx, user, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 || page[0].TokenHash != kept || !page[0].CreatedAt.Equal(created) || page[0].Written != written {
			t.Fatalf("run %d: newest first %+v, want the kept entry alone, created %v, written at %d", run, page, created, written)
		}
		e, err := sessions.Entry(ctx, user, domain.SessionID(kept))
		if err != nil || e.TokenHash != kept || e.Written != written {
			t.Fatalf("run %d: the kept entry by id: %+v %v", run, e, err)
		}
		for _, hash := range []string{old, revoked} {
			if e, err := sessions.Entry(ctx, user, domain.SessionID(hash)); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("run %d: %s by id: %+v %v, want none", run, hash, e, err)
			}
		}
		var ttl int
		if err := db.Session.ContextQuery(ctx, `SELECT TTL(expires_at) FROM sessions_by_user_created WHERE user_id = ?`, nil).Bind(user).GetRelease(&ttl); err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > 3600 {
			t.Fatalf("run %d: the copy's TTL is %d s, want what the entry had left (at most 3600)", run, ttl)
		}
	}
}
