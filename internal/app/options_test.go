package app

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// twoDCs is a keyspace in two data centres, as system_schema holds it.
var twoDCs = map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "3"}

// TestTheRealBuildRefusesLocalSerialAcrossRegions: the server's rule
// refuses LOCAL_SERIAL on two data centres (only an Option replaces it:
// tests/broken's local-serial build).
func TestTheRealBuildRefusesLocalSerialAcrossRegions(t *testing.T) {
	t.Parallel()
	c := config.Cassandra{SerialConsistency: "LOCAL_SERIAL", LocalDC: "dc1"}
	if _, err := checkedSerial(c, "shelf", twoDCs, []string{"dc1", "dc2"}, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "SHELF_SERIAL_CONSISTENCY") {
		t.Fatalf("LOCAL_SERIAL on two data centres: %v", err)
	}
	c.SerialConsistency = "SERIAL"
	if got, err := checkedSerial(c, "shelf", twoDCs, []string{"dc1", "dc2"}, zerolog.Nop()); err != nil || got != "SERIAL" {
		t.Fatalf("SERIAL on two data centres: %q, %v", got, err)
	}
}
