package repository

import (
	"testing"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// scopeRecorder records the serial consistency DB.scope sets.
type scopeRecorder struct{ got gocql.SerialConsistency }

func (r *scopeRecorder) SerialConsistency(c gocql.SerialConsistency) *gocql.Query {
	r.got = c
	return nil
}

// TestCompareAndSetsAndTheirReadsShareOneScope: a DB runs its
// compare-and-sets at the scope it was made with, whatever the session's
// default, and its SERIAL reads (the ones that settle and check them) at
// the same scope, sent again but never copied (docs/design/regions.md:
// Paxos rounds at SERIAL and at LOCAL_SERIAL on one partition do not see
// each other).
func TestCompareAndSetsAndTheirReadsShareOneScope(t *testing.T) {
	t.Parallel()
	for serial, want := range map[string]gocql.SerialConsistency{"SERIAL": gocql.Serial, "LOCAL_SERIAL": gocql.LocalSerial} {
		db := NewDB(gocqlx.Session{}, serial)
		var r scopeRecorder
		db.scope(&r)
		if r.got != want {
			t.Errorf("%s: compare-and-sets run at %v", serial, r.got)
		}
		if db.Serial != gocql.Consistency(want) {
			t.Errorf("%s: SERIAL reads run at %v", serial, db.Serial)
		}
		if a := readCQL("").at(db.Serial); !a.again || a.twice {
			t.Errorf("%s: a SERIAL read is sent as %+v", serial, a)
		}
	}
}

// TestTheLocalDataCentreComesFirst: without a local data centre every
// host is as near as any other (round robin); with one, a host of another
// data centre (here one that names none) is remote, so the token-aware
// policy skips it among a partition's replicas and gocql's DC-aware
// policy plans it after the local ones.
func TestTheLocalDataCentreComesFirst(t *testing.T) {
	t.Parallel()
	elsewhere := &gocql.HostInfo{}
	if !hostSelection("").IsLocal(elsewhere) {
		t.Error("without SHELF_LOCAL_DC a host is not local")
	}
	if hostSelection("dc1").IsLocal(elsewhere) {
		t.Error("with SHELF_LOCAL_DC=dc1, a host of no data centre is local")
	}
	c, err := clusterConfig(ConnConfig{Hosts: []string{"127.0.0.1"}, Consistency: "LOCAL_QUORUM", LocalDC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.PoolConfig.HostSelectionPolicy.IsLocal(elsewhere) {
		t.Error("the session's policy (the health policy over it) takes a host of no data centre for dc1's")
	}
}
