package repository

import (
	"context"
	"fmt"

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
