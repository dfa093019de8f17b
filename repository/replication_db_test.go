//go:build integration

package repository_test

import (
	"context"
	"testing"

	"shelf/repository"
	"shelf/tests/testkit"
)

// TestTheOneNodeIsOneDataCentre: start-up's read of the cluster's data
// centres (it refuses LOCAL_SERIAL on a SimpleStrategy keyspace spread
// over several) finds the test node's one, by its name; the regions lane
// checks it finds both of two.
func TestTheOneNodeIsOneDataCentre(t *testing.T) {
	t.Parallel()
	db := testkit.PackageDB(t)
	ctx := context.Background()
	var local string
	if err := db.Session.Query(`SELECT data_center FROM system.local`, nil).WithContext(ctx).Scan(&local); err != nil {
		t.Fatal(err)
	}
	dcs, err := repository.ClusterDataCentres(ctx, db.Session)
	if err != nil || len(dcs) != 1 || dcs[0] != local || local == "" {
		t.Fatalf("the cluster's data centres: %v, %v; want the node's own %q", dcs, err, local)
	}
}
