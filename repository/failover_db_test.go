//go:build integration

package repository_test

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/library"
	"shelf/internal/config"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestOneNodeServesWithTheServingAttempts: a session with the serving
// defaults (SHELF_CASSANDRA_* of internal/config: short attempts, retries,
// one copy), its copies due after a millisecond, on the one test node. No
// copy may go out (a copy with no node of its own fails the statement in
// gocql v1.7.0), and compare-and-sets, reads at the session's consistency
// and a batch of versioned writes all work.
func TestOneNodeServesWithTheServingAttempts(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	conn := testkit.PackageDB(t).Conn
	conn.Timeout, conn.Retries = cfg.Cassandra.Timeout, cfg.Cassandra.Retries
	conn.SpeculativeCopies, conn.SpeculativeDelay = cfg.Cassandra.SpeculativeCopies, time.Millisecond
	ctx := context.Background()
	s, err := repository.Connect(ctx, conn, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := repository.CopiesNow(s); n != 0 {
		t.Fatalf("one node, %d copies allowed", n)
	}
	db := repository.NewDB(s, "LOCAL_SERIAL")
	claims := repository.NewClaims(db)
	k := key("attempts")
	if got, err := claims.Claim(ctx, domain.KindUsername, k, "u_a", "op1", 0, time.Minute); err != nil || got.Owner != "u_a" {
		t.Fatalf("claim (a compare-and-set): %+v %v", got, err)
	}
	if ok, err := claims.Commit(ctx, domain.KindUsername, k, "u_a", "op1", 0); err != nil || !ok {
		t.Fatalf("commit (a compare-and-set): %v %v", ok, err)
	}
	if got, err := claims.Lookup(ctx, domain.KindUsername, k); err != nil || got.State != domain.ClaimCommitted {
		t.Fatalf("lookup (a read): %+v %v", got, err)
	}
	libs := repository.NewLibraries(db)
	e := library.Entry{PrincipalID: key("p"), ContentID: key("c"), Role: "owner", Name: "n",
		Visibility: library.VisibilityPublic, LastModified: time.Now().UTC().Truncate(time.Millisecond), Version: 1}
	if err := libs.Apply(ctx, e, nil); err != nil {
		t.Fatalf("apply (versioned writes, a batch): %v", err)
	}
	got, err := libs.Index(ctx, e.PrincipalID, []string{e.ContentID})
	if err != nil || got[e.ContentID].Version != 1 {
		t.Fatalf("index (a read): %+v %v", got, err)
	}
}
