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

// TestPasswordEpochRoundTrips: an account's password epoch and the session
// that set its password, and a session's epoch, are written and read back
// by every statement that maps them (migration 015); rows from before it
// (no such cells) read epoch 0 and no session, so accounts and their
// sessions from before match until the password first changes.
func TestPasswordEpochRoundTrips(t *testing.T) {
	t.Parallel()
	pkg := testkit.PackageDB(t)
	db := repository.NewDB(pkg.Session, "LOCAL_SERIAL")
	users, sessions := repository.NewUsers(db), repository.NewSessions(db)
	ctx := context.Background()
	u := activeUser(t, users, key("u_epoch"))
	id, now := u.ID, u.CreatedAt
	if got, err := users.Get(ctx, id); err != nil || got.PasswordEpoch != 0 || got.PasswordSession != "" {
		t.Fatalf("a new account: epoch %d, session %q, %v", got.PasswordEpoch, got.PasswordSession, err)
	}
	u.Version, u.PasswordHash, u.PasswordEpoch, u.PasswordSession = 2, "h1", 1, "hash-of-the-changing-session"
	if ok, err := users.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	got, err := users.GetSerial(ctx, id)
	if err != nil || got.PasswordEpoch != 1 || got.PasswordSession != "hash-of-the-changing-session" {
		t.Fatalf("after a change: epoch %d, session %q, %v", got.PasswordEpoch, got.PasswordSession, err)
	}
	// A reset clears the session that set the password (a null cell).
	u.Version, u.PasswordEpoch, u.PasswordSession = 3, 2, ""
	if ok, err := users.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if got, err := users.Get(ctx, id); err != nil || got.PasswordEpoch != 2 || got.PasswordSession != "" {
		t.Fatalf("after a reset: epoch %d, session %q, %v", got.PasswordEpoch, got.PasswordSession, err)
	}

	s := domain.Session{TokenHash: key("epoch-session"), UserID: id, CreatedAt: now, ExpiresAt: now.Add(time.Hour), PasswordEpoch: 2}
	if err := sessions.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, err := sessions.Get(ctx, s.TokenHash); err != nil || got.PasswordEpoch != 2 {
		t.Fatalf("a session: epoch %d, %v", got.PasswordEpoch, err)
	}
	many, err := sessions.GetMany(ctx, []string{s.TokenHash})
	if err != nil || many[s.TokenHash].PasswordEpoch != 2 {
		t.Fatalf("a session read with others: %+v, %v", many, err)
	}

	// Rows as a binary from before 015 wrote them.
	old, oldSession := key("u_before"), key("before-session")
	for _, stmt := range []struct {
		cql  string
		args []any
	}{
		{`INSERT INTO users (id, username, status, version, password_hash) VALUES (?, ?, 'active', 1, 'h') IF NOT EXISTS`, []any{old, old}},
		{`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) USING TTL 3600`, []any{oldSession, old, now, now.Add(time.Hour)}},
	} {
		if err := pkg.Session.ContextQuery(ctx, stmt.cql, nil).Bind(stmt.args...).ExecRelease(); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := users.GetSerial(ctx, old); err != nil || got.PasswordEpoch != 0 || got.PasswordSession != "" {
		t.Fatalf("an account from before: epoch %d, session %q, %v", got.PasswordEpoch, got.PasswordSession, err)
	}
	if got, err := sessions.Get(ctx, oldSession); err != nil || got.PasswordEpoch != 0 {
		t.Fatalf("a session from before: epoch %d, %v", got.PasswordEpoch, err)
	}
}
