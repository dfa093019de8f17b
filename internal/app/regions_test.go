//go:build integration

package app

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"shelf/internal/config"
	"shelf/tests/testkit"
)

// TestStartupSaysWhichScopeIsInForce: on a keyspace of the local node (one
// data centre) the check reads the replication, keeps each setting (SERIAL
// by default, LOCAL_SERIAL where asked: one data centre), and the start
// log says which one every compare-and-set and SERIAL read runs at.
func TestStartupSaysWhichScopeIsInForce(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	for _, serial := range []string{"", "LOCAL_SERIAL"} {
		cfg, err := config.Load(func(k string) string {
			if k == "SHELF_SERIAL_CONSISTENCY" {
				return serial
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Cassandra.Keyspace = db.Keyspace()
		var log bytes.Buffer
		checked, err := checkRegions(context.Background(), cfg, db.Session, zerolog.New(&log), checkedSerial)
		if err != nil {
			t.Fatalf("%q: %v", serial, err)
		}
		want := cfg.Cassandra.SerialConsistency
		if checked.Cassandra.SerialConsistency != want {
			t.Errorf("%q: in force %q, want %q", serial, checked.Cassandra.SerialConsistency, want)
		}
		for _, field := range []string{`"serial_consistency":"` + want + `"`, `"keyspace":"` + db.Keyspace() + `"`, `SimpleStrategy`} {
			if !strings.Contains(log.String(), field) {
				t.Errorf("%q: the start log %s has no %s", serial, log.String(), field)
			}
		}
	}
}
