//go:build integration

package repository_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/repository"
	"shelf/tests/testkit"
)

// TestStatementsCarryTheirScopeOnTheWire (docs/design/regions.md): what
// the node was asked, from its traces. A compare-and-set runs at the DB's
// serial scope, not the session's default (set here to the other one),
// and commits at LOCAL_QUORUM; a SERIAL read, of the kind that judges it,
// runs at the same scope; a plain read runs at LOCAL_QUORUM, in the
// caller's data centre.
func TestStatementsCarryTheirScopeOnTheWire(t *testing.T) {
	t.Parallel()
	pkg := testkit.PackageDB(t)
	ctx := context.Background()
	for _, scope := range []string{"SERIAL", "LOCAL_SERIAL"} {
		conn := pkg.Conn
		conn.SerialConsistency = map[string]string{"SERIAL": "LOCAL_SERIAL", "LOCAL_SERIAL": "SERIAL"}[scope]
		s, err := repository.Connect(ctx, conn, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		tr := &traces{} // outbox_queue_test.go
		s.SetTrace(tr)
		db := repository.NewDB(s, scope)
		claims, users := repository.NewClaims(db), repository.NewUsers(db)
		k := key("scope")
		if _, err := claims.Claim(ctx, domain.KindUsername, k, "u_scope", "op_scope", 0, time.Minute); err != nil {
			t.Fatal(err)
		}
		claimed := tr.take()
		if _, err := claims.Lookup(ctx, domain.KindUsername, k); err != nil {
			t.Fatal(err)
		}
		looked := tr.take()
		if _, err := users.GetSerial(ctx, "u_scope_missing"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatal(err)
		}
		read := tr.take()
		s.Close()
		for _, tc := range []struct {
			name                string
			ids                 [][]byte
			consistency, serial string
		}{
			{"the claim (a compare-and-set)", claimed, "LOCAL_QUORUM", scope},
			// A plain read carries the session's default serial
			// consistency, which the node ignores.
			{"the claim's lookup", looked, "LOCAL_QUORUM", "any"},
			{"the account read at SERIAL", read, scope, scope},
		} {
			if len(tc.ids) != 1 {
				t.Fatalf("%s at %s: %d statements traced, want 1", tc.name, scope, len(tc.ids))
			}
			params := traceParameters(t, pkg, tc.ids[0])
			if params["consistency_level"] != tc.consistency || (tc.serial != "any" && params["serial_consistency_level"] != tc.serial) {
				t.Errorf("%s, DB at %s: the node was asked %v; want consistency %s, serial %q", tc.name, scope, params, tc.consistency, tc.serial)
			}
		}
	}
}

// traceParameters waits for the node to write a statement's trace (it
// does so in the background) and returns its parameters.
func traceParameters(t *testing.T, pkg *testkit.DB, id []byte) map[string]string {
	t.Helper()
	uuid, err := gocql.UUIDFromBytes(id)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		var params map[string]string
		err := pkg.Session.ContextQuery(context.Background(), "SELECT parameters FROM system_traces.sessions WHERE session_id = ?", nil).
			Consistency(gocql.One).Bind(uuid).GetRelease(&params) // system_traces has two replicas; the node one
		if err == nil && params != nil {
			return params
		}
		if err != nil && !errors.Is(err, gocql.ErrNotFound) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no trace %s after 10 s", uuid)
	return nil
}
