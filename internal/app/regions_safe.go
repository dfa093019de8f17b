//go:build !brokenregions

package app

import (
	"github.com/rs/zerolog"

	"shelf/internal/config"
)

// serialInForce is the serial consistency the settings give on a keyspace
// of this replication, or why they are refused. Only the deliberately
// broken build (regions_broken.go) decides otherwise.
func serialInForce(c config.Cassandra, keyspace string, replication map[string]string, _ zerolog.Logger) (string, error) {
	return c.CheckReplication(keyspace, replication)
}
