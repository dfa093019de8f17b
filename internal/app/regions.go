package app

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/scylladb/gocqlx/v2"

	"shelf/internal/config"
	"shelf/repository"
)

// checkRegions is the start-up check of serve and the operator commands
// (docs/design/regions.md): it reads the replication the keyspace has in
// the cluster and the data centres of the cluster's nodes, refuses
// settings that are unsafe or wrong
// for it (config.Cassandra.CheckReplication names the setting), and
// returns cfg with the serial consistency every compare-and-set and SERIAL
// read of this process runs at, which it logs beside the keyspace's data
// centres. rule decides the serial consistency (checkedSerial, unless an
// Option replaced it).
func checkRegions(ctx context.Context, cfg config.Config, session gocqlx.Session, logger zerolog.Logger, rule SerialRule) (config.Config, error) {
	keyspace := cfg.Cassandra.Keyspace
	replication, err := repository.KeyspaceReplication(ctx, session, keyspace)
	if err != nil {
		return cfg, err
	}
	clusterDCs, err := repository.ClusterDataCentres(ctx, session)
	if err != nil {
		return cfg, err
	}
	serial, err := rule(cfg.Cassandra, keyspace, replication, clusterDCs, logger)
	if err != nil {
		return cfg, fmt.Errorf("start-up check of keyspace %s: %w", keyspace, err)
	}
	cfg.Cassandra.SerialConsistency = serial
	dcs, known := config.DataCentres(replication)
	if !known {
		dcs = []string{}
	}
	logger.Info().Str("keyspace", keyspace).Str("replication", replication["class"]).Strs("data_centres", dcs).
		Str("local_dc", cfg.Cassandra.LocalDC).Str("serial_consistency", serial).
		Msg("compare-and-sets and SERIAL reads run at " + serial)
	return cfg, nil
}
