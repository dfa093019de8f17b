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

// TestPendingEmailRoundTrips: the email an account asks for and the one
// it holds for a revert link (migration 018) are written and read back by
// every statement that maps them, and a write without them clears them
// (null cells): a new account has neither.
func TestPendingEmailRoundTrips(t *testing.T) {
	t.Parallel()
	pkg := testkit.PackageDB(t)
	users := repository.NewUsers(repository.NewDB(pkg.Session, "LOCAL_SERIAL"))
	ctx := context.Background()
	u := activeUser(t, users, key("u_pending"))
	id, now := u.ID, u.CreatedAt
	if got, err := users.Get(ctx, id); err != nil || got.PendingEmail != "" || got.RecoveryEmail != "" || !got.PendingEmailAt.IsZero() || !got.RecoveryUntil.IsZero() {
		t.Fatalf("a new account: %+v %v", got, err)
	}
	u.Version = 2
	u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt = "New@Example.net", "new@example.net", now
	u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "Old@Example.org", "old@example.org", now.Add(time.Hour)
	if ok, err := users.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	got, err := users.GetSerial(ctx, id)
	if err != nil || got.PendingEmail != u.PendingEmail || got.PendingEmailKey != u.PendingEmailKey || !got.PendingEmailAt.Equal(now) ||
		got.RecoveryEmail != u.RecoveryEmail || got.RecoveryEmailKey != u.RecoveryEmailKey || !got.RecoveryUntil.Equal(now.Add(time.Hour)) {
		t.Fatalf("after asking: %+v %v", got, err)
	}
	u.Version = 3
	u.PendingEmail, u.PendingEmailKey, u.PendingEmailAt = "", "", time.Time{}
	u.RecoveryEmail, u.RecoveryEmailKey, u.RecoveryUntil = "", "", time.Time{}
	if ok, err := users.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if got, err := users.Get(ctx, id); err != nil || got.PendingEmailKey != "" || got.RecoveryEmailKey != "" || !got.PendingEmailAt.IsZero() || !got.RecoveryUntil.IsZero() {
		t.Fatalf("after clearing: %+v %v", got, err)
	}
}

// TestRecoveryMarksRoundTrip: the mark a revert sets (the password needs a
// reset) and the session that asked for a change pending (migration 021)
// are written and read back, and a write without them clears them.
func TestRecoveryMarksRoundTrip(t *testing.T) {
	t.Parallel()
	pkg := testkit.PackageDB(t)
	users := repository.NewUsers(repository.NewDB(pkg.Session, "LOCAL_SERIAL"))
	ctx := context.Background()
	u := activeUser(t, users, key("u_marks"))
	if got, err := users.Get(ctx, u.ID); err != nil || got.PasswordResetRequired || got.PendingEmailSession != "" {
		t.Fatalf("a new account: %+v %v", got, err)
	}
	u.Version = 2
	u.PasswordResetRequired, u.PendingEmailSession = true, "s_abc"
	if ok, err := users.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if got, err := users.GetSerial(ctx, u.ID); err != nil || !got.PasswordResetRequired || got.PendingEmailSession != "s_abc" {
		t.Fatalf("after marking: %+v %v", got, err)
	}
	u.Version = 3
	u.PasswordResetRequired, u.PendingEmailSession = false, ""
	if ok, err := users.Update(ctx, u); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if got, err := users.Get(ctx, u.ID); err != nil || got.PasswordResetRequired || got.PendingEmailSession != "" {
		t.Fatalf("after clearing: %+v %v", got, err)
	}
}

// activeUser signs up an account with id, as the signup does: created
// pending, then activated, at version 1.
func activeUser(t *testing.T, users *repository.Users, id string) domain.User {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	u := domain.User{ID: id, Username: id, UsernameKey: id, Email: id + "@example.org", EmailKey: id + "@example.org",
		DisplayName: "U", PasswordHash: "h0", Status: domain.StatusPending, CreatedAt: now, UpdatedAt: now, Version: 1}
	tag, err := users.Create(ctx, u, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	u.Status = domain.StatusActive
	if ok, err := users.Activate(ctx, u, tag); err != nil || !ok {
		t.Fatalf("activate: %v %v", ok, err)
	}
	return u
}
