//go:build integration

package repository_test

import (
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/repository"
	"shelf/tests/storecontract"
	"shelf/tests/testkit"
)

// The store-contract suites (tests/storecontract) on a real node: the
// checks share the package's keyspace, each on keys of its own, but for
// the tables read whole (the suspended list, the expiry queue, the
// outbox), which get one empty keyspace between them.

// onReal opens every check's store on db with the wall clock.
func onReal[S any](db *repository.DB, store func(*repository.DB) S) storecontract.Open[S] {
	return func(testing.TB) (S, storecontract.Clock) { return store(db), storecontract.RealClock }
}

func packageStores(t *testing.T) *repository.DB {
	return repository.NewDB(testkit.PackageDB(t).Session, "LOCAL_SERIAL")
}

func TestContractStores(t *testing.T) {
	t.Parallel()
	db := packageStores(t)
	suites := []struct {
		name string
		run  func(*testing.T)
	}{
		{"Claims", func(t *testing.T) {
			storecontract.Claims(t, onReal(db, func(db *repository.DB) domain.ClaimStore { return repository.NewClaims(db) }))
		}},
		{"Users", func(t *testing.T) {
			storecontract.Users(t, onReal(db, func(db *repository.DB) storecontract.UserStore { return repository.NewUsers(db) }))
		}},
		{"Sessions", func(t *testing.T) {
			storecontract.Sessions(t, onReal(db, func(db *repository.DB) accounts.SessionStore { return repository.NewSessions(db) }))
		}},
		{"Attempts", func(t *testing.T) {
			storecontract.Attempts(t, onReal(db, func(db *repository.DB) accounts.AttemptStore { return repository.NewAttempts(db) }))
		}},
		{"Tokens", func(t *testing.T) {
			storecontract.Tokens(t, onReal(db, func(db *repository.DB) accounts.TokenStore { return repository.NewTokens(db) }))
		}},
		{"Audit", func(t *testing.T) {
			storecontract.Audit(t, onReal(db, func(db *repository.DB) accounts.AuditLog { return repository.NewAccountAudit(db) }))
		}},
		{"Factors", func(t *testing.T) {
			storecontract.Factors(t, onReal(db, func(db *repository.DB) accounts.FactorStore { return repository.NewFactors(db) }))
		}},
		{"Suspensions", func(t *testing.T) {
			storecontract.Suspensions(t, onReal(db, func(db *repository.DB) moderation.Store { return repository.NewSuspensions(db) }))
		}},
		{"Groups", func(t *testing.T) {
			storecontract.Groups(t, onReal(db, func(db *repository.DB) groups.Store { return repository.NewGroups(db) }))
		}},
		{"GroupMembers", func(t *testing.T) {
			storecontract.GroupMembers(t, onReal(db, func(db *repository.DB) groups.MemberStore { return repository.NewGroupMembers(db) }))
		}},
		{"Content", func(t *testing.T) {
			storecontract.Contents(t, onReal(db, func(db *repository.DB) library.ContentStore { return repository.NewContents(db) }))
		}},
		{"ContentMembers", func(t *testing.T) {
			storecontract.ContentMembers(t, onReal(db, func(db *repository.DB) library.MemberStore { return repository.NewContentMembers(db) }))
		}},
		{"Libraries", func(t *testing.T) {
			storecontract.Libraries(t, onReal(db, func(db *repository.DB) library.EntryStore { return repository.NewLibraries(db) }))
		}},
		{"Deletions", func(t *testing.T) {
			storecontract.Deletions(t, onReal(db, func(db *repository.DB) lifecycle.DeletionStore { return repository.NewDeletions(db) }))
		}},
		{"Closings", func(t *testing.T) {
			storecontract.Closings(t, onReal(db, func(db *repository.DB) lifecycle.ClosingStore { return repository.NewClosings(db) }))
		}},
		{"GroupChanges", func(t *testing.T) {
			storecontract.GroupChanges(t, onReal(db, func(db *repository.DB) groups.ChangeIndex { return repository.NewGroupChanges(db) }))
		}},
		{"ModerationAttempts", func(t *testing.T) {
			storecontract.ModerationAttempts(t, onReal(db, func(db *repository.DB) moderation.AttemptIndex { return repository.NewModerationAttempts(db) }))
		}},
		{"JobQueue", func(t *testing.T) {
			storecontract.JobQueue(t, onReal(db, func(db *repository.DB) jobs.Queue { return repository.NewJobQueue(db) }))
		}},
		{"Jobs", func(t *testing.T) {
			storecontract.Jobs(t, onReal(db, func(db *repository.DB) jobs.Store { return repository.NewJobs(db) }))
		}},
	}
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t)
		})
	}
}

// TestContractTablesReadWhole runs the suites of the tables read whole on
// an empty keyspace of their own (the two suites write different tables).
func TestContractTablesReadWhole(t *testing.T) {
	t.Parallel()
	db := repository.NewDB(testkit.NewDB(t).Session, "LOCAL_SERIAL")
	t.Run("SuspendedList", func(t *testing.T) {
		t.Parallel()
		storecontract.SuspendedList(t, onReal(db, func(db *repository.DB) moderation.Store { return repository.NewSuspensions(db) }))
		storecontract.ExpiryStart(t, onReal(db, func(db *repository.DB) storecontract.SkewedSuspensions {
			return storecontract.SkewedSuspensions{Store: repository.NewSuspensions(db), Skewed: func(d time.Duration) moderation.Store {
				return repository.NewSuspensions(db).WithClock(func() time.Time { return db.Now().Add(d) })
			}}
		}))
		// After the list's checks: both read the list whole.
		storecontract.BucketIndex(t, onReal(db, func(db *repository.DB) storecontract.ListStores {
			return storecontract.ListStores{Store: repository.NewSuspensions(db), Audit: repository.NewAudit(db)}
		}))
	})
	t.Run("Outbox", func(t *testing.T) {
		t.Parallel()
		storecontract.Outbox(t, onReal(db, func(db *repository.DB) library.Outbox { return repository.NewOutbox(db) }))
		// Last: it moves the outbox's start ahead of the clock.
		storecontract.OutboxStart(t, onReal(db, func(db *repository.DB) storecontract.SkewedOutbox {
			return storecontract.SkewedOutbox{Outbox: repository.NewOutbox(db), Skewed: func(d time.Duration) library.Outbox {
				return repository.NewOutbox(db).WithClock(func() time.Time { return db.Now().Add(d) })
			}}
		}))
	})
}
