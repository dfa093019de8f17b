package config

import (
	"slices"
	"strings"
	"testing"
)

// Replication maps as system_schema.keyspaces holds them.
var (
	simple = map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "3"}
	oneDC  = map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3"}
	twoDCs = map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc2": "3", "dc1": "3"}
	// dc2 is listed without replicas: one data centre.
	emptyDC2 = map[string]string{"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "dc1": "3", "dc2": "0"}
	local    = map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}
)

func TestDataCentresOfAReplication(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		replication map[string]string
		want        []string
		known       bool
	}{
		{"SimpleStrategy", simple, nil, false},
		{"one data centre", oneDC, []string{"dc1"}, true},
		{"two, sorted", twoDCs, []string{"dc1", "dc2"}, true},
		{"one with replicas, one without", emptyDC2, []string{"dc1"}, true},
		{"another class", local, nil, false},
	} {
		got, known := DataCentres(tc.replication)
		if !slices.Equal(got, tc.want) || known != tc.known {
			t.Errorf("%s: %v, known %v; want %v, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
}

// TestTheSerialScopeIsCheckedAgainstTheKeyspace: the decision of start-up
// (docs/design/regions.md) on each shape of keyspace and each setting.
// SERIAL is right everywhere; LOCAL_SERIAL only where one data centre
// holds every replica; a keyspace in several data centres needs the local
// one named, and a named one must hold replicas. Each refusal names the
// setting to change and the keyspace's data centres.
func TestTheSerialScopeIsCheckedAgainstTheKeyspace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		serial, dc   string
		replication  map[string]string
		want         string
		refusalNames []string
	}{
		{"default on SimpleStrategy", "SERIAL", "", simple, "SERIAL", nil},
		{"LOCAL_SERIAL on SimpleStrategy", "LOCAL_SERIAL", "", simple, "LOCAL_SERIAL", nil},
		{"a local DC on SimpleStrategy (placement ignores it)", "SERIAL", "dc1", simple, "SERIAL", nil},
		{"default on one DC", "SERIAL", "", oneDC, "SERIAL", nil},
		{"LOCAL_SERIAL on one DC", "LOCAL_SERIAL", "dc1", oneDC, "LOCAL_SERIAL", nil},
		{"LOCAL_SERIAL on one DC listed beside an empty one", "LOCAL_SERIAL", "", emptyDC2, "LOCAL_SERIAL", nil},
		{"default on two DCs, local DC named", "SERIAL", "dc2", twoDCs, "SERIAL", nil},
		{"LOCAL_SERIAL on two DCs", "LOCAL_SERIAL", "dc1", twoDCs, "", []string{"SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL", "dc1, dc2", "shelf_ks"}},
		{"LOCAL_SERIAL and no local DC on two DCs: the scope first", "LOCAL_SERIAL", "", twoDCs, "", []string{"SHELF_SERIAL_CONSISTENCY"}},
		{"no local DC on two DCs", "SERIAL", "", twoDCs, "", []string{"SHELF_LOCAL_DC is not set", "dc1, dc2", "shelf_ks"}},
		{"a local DC without replicas", "SERIAL", "dc3", twoDCs, "", []string{"SHELF_LOCAL_DC=dc3", "dc1, dc2"}},
		{"a local DC listed with none", "SERIAL", "dc2", emptyDC2, "", []string{"SHELF_LOCAL_DC=dc2", "dc1"}},
		{"LOCAL_SERIAL on a class that does not say", "LOCAL_SERIAL", "", local, "", []string{"SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL", "LocalStrategy"}},
		{"SERIAL on a class that does not say", "SERIAL", "", local, "SERIAL", nil},
	} {
		c := Cassandra{SerialConsistency: tc.serial, LocalDC: tc.dc}
		got, err := c.CheckReplication("shelf_ks", tc.replication, []string{"dc1"})
		switch {
		case tc.refusalNames == nil && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		case tc.refusalNames != nil && err == nil:
			t.Errorf("%s: accepted (%q); want a refusal", tc.name, got)
		case err != nil:
			for _, s := range tc.refusalNames {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: refusal %q does not name %q", tc.name, err, s)
				}
			}
		}
	}
}

// TestLocalSerialIsRefusedOnASimpleStrategySpreadOverDataCentres:
// SimpleStrategy places replicas on the ring whatever their data centre,
// so in a cluster of two data centres LOCAL_SERIAL would run each
// region's Paxos among the replicas it happens to hold, and two signups
// of one username could both win (U1). Before, SimpleStrategy was taken
// as one data centre whatever the cluster held, and LOCAL_SERIAL
// accepted. SERIAL stays right; in a cluster of one data centre
// LOCAL_SERIAL too.
func TestLocalSerialIsRefusedOnASimpleStrategySpreadOverDataCentres(t *testing.T) {
	t.Parallel()
	c := Cassandra{SerialConsistency: "LOCAL_SERIAL"}
	_, err := c.CheckReplication("shelf_ks", simple, []string{"dc1", "dc2"})
	if err == nil {
		t.Fatal("LOCAL_SERIAL on SimpleStrategy in a cluster of dc1 and dc2: accepted; want a refusal")
	}
	for _, s := range []string{"SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL", "SimpleStrategy", "dc1, dc2", "shelf_ks"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not name %q", err, s)
		}
	}
	if got, err := c.CheckReplication("shelf_ks", simple, []string{"dc1"}); err != nil || got != "LOCAL_SERIAL" {
		t.Errorf("LOCAL_SERIAL on SimpleStrategy in a cluster of one data centre: %q, %v", got, err)
	}
	c.SerialConsistency = "SERIAL"
	if got, err := c.CheckReplication("shelf_ks", simple, []string{"dc1", "dc2"}); err != nil || got != "SERIAL" {
		t.Errorf("SERIAL on SimpleStrategy in a cluster of two data centres: %q, %v", got, err)
	}
}
