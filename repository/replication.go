package repository

import (
	"context"
	"fmt"
	"slices"

	"github.com/scylladb/gocqlx/v2"
)

// replicationCQL reads a keyspace's replication map as Cassandra keeps it:
// {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
// "dc1": "3", "dc2": "3"}, or SimpleStrategy's replication_factor.
const replicationCQL readCQL = `SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?`

// KeyspaceReplication reads a keyspace's replication: start-up decides
// from it which serial consistency is safe and whether the local data
// centre must be named (docs/design/regions.md). It is read from the
// cluster, not taken from SHELF_REPLICATION, since an existing keyspace
// keeps the replication it was created or last altered with.
func KeyspaceReplication(ctx context.Context, s gocqlx.Session, keyspace string) (map[string]string, error) {
	var replication map[string]string
	q := newQuery(s.Session, ctx, string(replicationCQL), replicationCQL.attempts(), nil, keyspace)
	err := q.Scan(&replication)
	q.Release()
	if err != nil {
		return nil, fmt.Errorf("replication of keyspace %s: %w", keyspace, err)
	}
	return replication, nil
}

// localDCCQL and peersDCCQL read the data centre of the answering node and
// of every other node it knows: system tables local to that node, so both
// go to one coordinator, whose view of the ring is the cluster's.
const (
	localDCCQL scanCQL = `SELECT data_center FROM system.local`
	peersDCCQL scanCQL = `SELECT data_center FROM system.peers`
)

// ClusterDataCentres reads the data centres of the cluster's nodes,
// sorted, each once: start-up refuses LOCAL_SERIAL on a SimpleStrategy
// keyspace when there are several, since that class places replicas on
// the ring whatever their data centre (docs/design/regions.md).
func ClusterDataCentres(ctx context.Context, s gocqlx.Session) ([]string, error) {
	var dcs []string
	for _, stmt := range []scanCQL{localDCCQL, peersDCCQL} {
		got, err := selectValues[string](newQuery(s.Session, ctx, string(stmt), stmt.attempts(), nil))
		if err != nil {
			return nil, fmt.Errorf("the cluster's data centres: %w", err)
		}
		dcs = append(dcs, got...)
	}
	slices.Sort(dcs)
	return slices.Compact(dcs), nil
}
