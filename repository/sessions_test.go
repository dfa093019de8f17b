//go:build integration

package repository_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestRevocationShadowsSessionsFromClocksAhead: a session written by an
// instance whose clock runs ahead (here 5 s) must still be revoked: the
// deletes carry the session's own write timestamp + 1. Before, they carried
// the revoking instance's clock and lost to the session's later timestamp,
// so the session outlived a password change (S3; docs/design/sessions.md). Many
// sessions are revoked at once, bounded, not one after another.
func TestRevocationShadowsSessionsFromClocksAhead(t *testing.T) {
	t.Parallel()
	pkg := testkit.PackageDB(t)
	sessions := repository.NewSessions(repository.NewDB(pkg.Session, "LOCAL_SERIAL"))
	ctx := context.Background()
	user := key("u_skew")
	ahead := time.Now().Add(5 * time.Second).UnixMicro()
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	var hashes []string
	for i := 0; i < 40; i++ {
		h := fmt.Sprintf("%s-%d", user, i)
		hashes = append(hashes, h)
		for _, stmt := range []string{
			`INSERT INTO sessions_by_user (user_id, token_hash, expires_at) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL 3600`,
			`INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?) USING TIMESTAMP ? AND TTL 3600`,
		} {
			args := []any{user, h, expires, ahead}
			if strings.HasPrefix(stmt, "INSERT INTO sessions (") {
				args = []any{h, user, expires, expires, ahead}
			}
			if err := pkg.Session.ContextQuery(ctx, stmt, nil).Bind(args...).ExecRelease(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := sessions.Get(ctx, hashes[0]); err != nil {
		t.Fatalf("the session before revocation: %v", err)
	}
	if err := sessions.DeleteAll(ctx, user, hashes[1]); err != nil {
		t.Fatal(err)
	}
	for i, h := range hashes {
		_, err := sessions.Get(ctx, h)
		switch {
		case i == 1 && err != nil:
			t.Fatalf("the kept session is gone: %v", err)
		case i != 1 && !errors.Is(err, domain.ErrNotFound):
			t.Fatalf("session %d written with a clock 5 s ahead outlived its revocation: %v", i, err)
		}
	}
}
