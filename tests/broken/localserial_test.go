package broken

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// twoDCs is a keyspace in two data centres, as system_schema holds it.
var twoDCs = map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "3"}

// TestTheBrokenBuildRunsLocalSerial: the localserial build's rule runs
// LOCAL_SERIAL on two data centres, even when SERIAL is asked for, and
// still refuses the other settings.
func TestTheBrokenBuildRunsLocalSerial(t *testing.T) {
	t.Parallel()
	for _, serial := range []string{"SERIAL", "LOCAL_SERIAL"} {
		c := config.Cassandra{SerialConsistency: serial, LocalDC: "dc1"}
		if got, err := LocalSerial(c, "shelf", twoDCs, []string{"dc1", "dc2"}, zerolog.Nop()); err != nil || got != "LOCAL_SERIAL" {
			t.Errorf("%s asked: %q, %v; want LOCAL_SERIAL", serial, got, err)
		}
	}
	c := config.Cassandra{SerialConsistency: "SERIAL"}
	if _, err := LocalSerial(c, "shelf", twoDCs, []string{"dc1", "dc2"}, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "SHELF_LOCAL_DC") {
		t.Fatalf("no local data centre: %v", err)
	}
}
