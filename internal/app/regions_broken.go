//go:build brokenregions

package app

import (
	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// serialInForce, in the deliberately broken build (tag brokenregions),
// runs every compare-and-set and SERIAL read at LOCAL_SERIAL whatever the
// keyspace and SHELF_SERIAL_CONSISTENCY say: on a keyspace in two data
// centres each region then runs Paxos among its own replicas, and two
// signups of one username through the two regions can both win. The
// regions test builds it to show that its checker catches that (U1, U3).
// Every other setting is checked as in the real build.
func serialInForce(c config.Cassandra, keyspace string, replication map[string]string, logger zerolog.Logger) (string, error) {
	c.SerialConsistency = "SERIAL"
	if _, err := c.CheckReplication(keyspace, replication); err != nil {
		return "", err
	}
	logger.Warn().Msg("deliberately broken build (brokenregions): compare-and-sets run at LOCAL_SERIAL in every data centre")
	return "LOCAL_SERIAL", nil
}
