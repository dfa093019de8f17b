//go:build integration

package repository_test

import (
	"context"
	"errors"
	"fmt"
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

// TestASignOutEverywhereLeavesNothingInTheListsWay: 2 000 sessions of an
// epoch, all revoked (the sweep of a sign-out everywhere, a password
// change or a reset deletes their entries), leave their tombstones in the
// partition of that epoch; the next login's session is in the next
// epoch's, and a page of the list meets none of them (Cassandra's own
// trace of the read). The same page read of the old epoch meets them all:
// what one index for every epoch cost a page (65 ms for 20 000 on this
// machine, a failed read past 100 000).
func TestASignOutEverywhereLeavesNothingInTheListsWay(t *testing.T) {
	t.Parallel()
	const n = 2000
	db := testkit.NewDB(t)
	tr := &traces{}
	sessions := repository.NewSessions(repository.NewDB(db.Session, "LOCAL_SERIAL"))
	traced := sessions.WithTracer(tr)
	ctx := context.Background()
	user := domain.NewID(domain.UserIDPrefix)
	now := time.Now().UTC()
	writeAll(t, n, func(i int) error {
		at := now.Add(time.Duration(i) * time.Millisecond)
		return sessions.Create(ctx, domain.Session{TokenHash: fmt.Sprintf("hash-%d", i), UserID: user, CreatedAt: at, ExpiresAt: at.Add(time.Hour), PasswordEpoch: 1})
	})
	if err := sessions.DeleteAll(ctx, user, ""); err != nil {
		t.Fatal(err)
	}
	next := domain.Session{TokenHash: "hash-next", UserID: user, CreatedAt: time.Now().UTC(), ExpiresAt: time.Now().Add(time.Hour), PasswordEpoch: 2}
	if err := sessions.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
	page, err := traced.Newest(ctx, user, 2, nil, 21)
	if err != nil || len(page) != 1 || page[0].TokenHash != next.TokenHash {
		t.Fatalf("the next epoch's page: %+v %v, want its one session", page, err)
	}
	if met := tombstonesRead(t, db.Session.Session, tr.take()); met != 0 {
		t.Errorf("the next epoch's page met %d tombstones, want none", met)
	}
	old, err := traced.Newest(ctx, user, 1, nil, 21)
	if err != nil || len(old) != 0 {
		t.Fatalf("the revoked epoch's page: %+v %v, want none", old, err)
	}
	met := tombstonesRead(t, db.Session.Session, tr.take())
	t.Logf("a page of the revoked epoch met %d tombstones", met)
	if met < n {
		t.Errorf("a page of the revoked epoch met %d tombstones, want the %d revoked entries' at least (else this test shows nothing)", met, n)
	}
}

// TestEverySessionIndexKeepsItsTombstonesAnHour (037, 048): each of the
// three session indexes keeps a tombstone an hour, not the default ten
// days. A thief holding the password opens a session a login, tens of
// thousands a day, each entry a tombstone once it expires or is revoked;
// sessions_by_user is read whole by the sweeps and a deletion's job, and
// past 100 000 tombstones met Cassandra refuses the read: with ten days'
// worth kept, the owner's deletion failed at it, every pass.
func TestEverySessionIndexKeepsItsTombstonesAnHour(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	for _, table := range []string{"sessions_by_user", "sessions_by_epoch", "sessions_by_user_id"} {
		var grace int
		if err := db.Session.Query(`SELECT gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?`, nil).
			Bind(db.Keyspace(), table).Scan(&grace); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if grace != 3600 {
			t.Errorf("%s keeps its tombstones %d s, want 3600", table, grace)
		}
	}
}
