package repository_test

import (
	"testing"

	"shelf/domain"
	"shelf/internal/storecontract"
	"shelf/internal/testkit"
	"shelf/repository"
)

// The store-contract suites on a real node: the checks share the
// package's keyspace (each uses keys of its own), but for the tables read
// whole (the suspended list, the expiry queue, the outbox), which get one
// empty keyspace between them.

func TestContractClaims(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	storecontract.Claims(t, func(testing.TB) (domain.ClaimStore, storecontract.Clock) {
		return repository.NewClaims(db), storecontract.RealClock
	})
}
