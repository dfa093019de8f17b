package repository_test

import (
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/moderation"
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

func TestContractUsers(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	storecontract.Users(t, func(testing.TB) (accounts.UserStore, storecontract.Clock) {
		return repository.NewUsers(db), storecontract.RealClock
	})
}

func TestContractGroups(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	storecontract.Groups(t, func(testing.TB) (groups.Store, storecontract.Clock) {
		return repository.NewGroups(db), storecontract.RealClock
	})
}

func TestContractTokens(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	storecontract.Tokens(t, func(testing.TB) (accounts.TokenStore, storecontract.Clock) {
		return repository.NewTokens(db), storecontract.RealClock
	})
}

func TestContractSessions(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	storecontract.Sessions(t, func(testing.TB) (accounts.SessionStore, storecontract.Clock) {
		return repository.NewSessions(db), storecontract.RealClock
	})
}

func TestContractSuspensions(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
	storecontract.Suspensions(t, func(testing.TB) (moderation.Store, storecontract.Clock) {
		return repository.NewSuspensions(db), storecontract.RealClock
	})
}

// TestContractTablesReadWhole runs the suites of the tables read whole on
// an empty keyspace of their own.
func TestContractTablesReadWhole(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.NewDB(t).Session, "LOCAL_SERIAL")
	t.Run("SuspendedList", func(t *testing.T) {
		t.Parallel()
		storecontract.SuspendedList(t, func(testing.TB) (moderation.Store, storecontract.Clock) {
			return repository.NewSuspensions(db), storecontract.RealClock
		})
	})
}
