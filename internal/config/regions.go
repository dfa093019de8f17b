package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DataCentres returns the data centres a keyspace's replication map (as
// system_schema.keyspaces holds it: "class" and, for
// NetworkTopologyStrategy, a replica count per data centre) keeps
// replicas in, sorted; known is false for a class that does not say
// (SimpleStrategy places replicas on the ring whatever their data
// centre; any other class is not one shelf creates).
func DataCentres(replication map[string]string) (dcs []string, known bool) {
	class := replication["class"]
	if !strings.HasSuffix(class, "NetworkTopologyStrategy") {
		return nil, false
	}
	for dc, rf := range replication {
		if dc == "class" {
			continue
		}
		// A data centre listed with no replicas (dc2: 0) holds none.
		if n, err := strconv.Atoi(rf); err == nil && n > 0 {
			dcs = append(dcs, dc)
		}
	}
	slices.Sort(dcs)
	return dcs, true
}

// CheckReplication checks the serial scope and the local data centre
// against the replication the keyspace has in the cluster (which may not
// be SHELF_REPLICATION's: an existing keyspace keeps its own) and returns
// the serial consistency every compare-and-set and SERIAL read runs at
// (docs/design/regions.md). Refused, each naming the setting:
//   - LOCAL_SERIAL on a keyspace replicated to several data centres: each
//     would run Paxos among its own replicas, so two signups of one
//     username in two regions could both win (U1), and two changes of one
//     account both apply; likewise on a replication that does not say
//     where its replicas are, and on SimpleStrategy in a cluster of
//     several data centres (clusterDCs, the nodes' own), whose replicas
//     lie on the ring wherever it puts them.
//   - no SHELF_LOCAL_DC on a keyspace in several data centres: statements
//     would go to either region's nodes, each waiting on the link
//     between them, and LOCAL_QUORUM would be the quorum of whichever
//     region coordinates, so a process would not read its own writes.
//   - a SHELF_LOCAL_DC that holds no replica of the keyspace: LOCAL_QUORUM
//     there finds none.
//
// SimpleStrategy is otherwise taken as one data centre, which it is
// meant for.
func (c Cassandra) CheckReplication(keyspace string, replication map[string]string, clusterDCs []string) (string, error) {
	dcs, known := DataCentres(replication)
	class := replication["class"]
	switch {
	case c.SerialConsistency == "LOCAL_SERIAL" && strings.HasSuffix(class, "SimpleStrategy") && len(clusterDCs) > 1:
		return "", fmt.Errorf("SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL, and keyspace %s is replicated by SimpleStrategy in a cluster of data centres %s: "+
			"its replicas lie in either, each would run its own compare-and-sets, and two signups of one username could both win; "+
			"set SHELF_SERIAL_CONSISTENCY=SERIAL (the default)", keyspace, strings.Join(clusterDCs, ", "))
	case c.SerialConsistency == "LOCAL_SERIAL" && known && len(dcs) > 1:
		return "", fmt.Errorf("SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL, and keyspace %s is replicated to data centres %s: "+
			"each would run its own compare-and-sets, and two signups of one username in two of them could both win; "+
			"set SHELF_SERIAL_CONSISTENCY=SERIAL (the default)", keyspace, strings.Join(dcs, ", "))
	case c.SerialConsistency == "LOCAL_SERIAL" && !known && !strings.HasSuffix(class, "SimpleStrategy"):
		return "", fmt.Errorf("SHELF_SERIAL_CONSISTENCY=LOCAL_SERIAL, and keyspace %s is replicated by %s, which does not say which data centres hold its replicas: "+
			"set SHELF_SERIAL_CONSISTENCY=SERIAL (the default)", keyspace, class)
	case c.LocalDC == "" && len(dcs) > 1:
		return "", fmt.Errorf("SHELF_LOCAL_DC is not set, and keyspace %s is replicated to data centres %s: "+
			"set it to the data centre this process runs in, so that its statements stay there (LOCAL_QUORUM)", keyspace, strings.Join(dcs, ", "))
	case c.LocalDC != "" && known && !slices.Contains(dcs, c.LocalDC):
		return "", fmt.Errorf("SHELF_LOCAL_DC=%s, and keyspace %s has no replica there (its data centres: %s): "+
			"LOCAL_QUORUM would find none; set it to the data centre this process runs in", c.LocalDC, keyspace, strings.Join(dcs, ", "))
	}
	return c.SerialConsistency, nil
}
