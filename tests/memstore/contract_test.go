package memstore_test

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
	"shelf/tests/memstore"
	"shelf/tests/storecontract"
)

// The store-contract suites on the fake: each check on a store of its
// own, whose clock Pass moves.

var contractStart = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

// onFake opens each check's store on a fresh in-memory Store, on the
// Store's own clock (repository/contract_test.go's onReal is its twin).
func onFake[S any](store func(*memstore.Store) S) storecontract.Open[S] {
	return func(testing.TB) (S, storecontract.Clock) {
		s := memstore.New(contractStart)
		return store(s), storecontract.Clock{Now: s.Now, Pass: s.Advance}
	}
}

func TestContractClaims(t *testing.T) {
	storecontract.Claims(t, onFake(func(s *memstore.Store) domain.ClaimStore { return s.Claims() }))
}

func TestContractUsers(t *testing.T) {
	storecontract.Users(t, onFake(func(s *memstore.Store) storecontract.UserStore { return s.Users() }))
}

func TestContractGroups(t *testing.T) {
	storecontract.Groups(t, onFake(func(s *memstore.Store) groups.Store { return s.Groups() }))
}

func TestContractAttempts(t *testing.T) {
	storecontract.Attempts(t, onFake(func(s *memstore.Store) accounts.AttemptStore { return s.Attempts() }))
}

func TestContractTokens(t *testing.T) {
	storecontract.Tokens(t, onFake(func(s *memstore.Store) accounts.TokenStore { return s.Tokens() }))
}

func TestContractAudit(t *testing.T) {
	storecontract.Audit(t, onFake(func(s *memstore.Store) accounts.AuditLog { return s.AccountAudit() }))
}

func TestContractFactors(t *testing.T) {
	storecontract.Factors(t, onFake(func(s *memstore.Store) accounts.FactorStore { return s.Factors() }))
}

func TestContractSessions(t *testing.T) {
	storecontract.Sessions(t, onFake(func(s *memstore.Store) accounts.SessionStore { return s.Sessions() }))
}

func TestContractSuspensions(t *testing.T) {
	open := onFake(func(s *memstore.Store) moderation.Store { return s.Suspensions() })
	storecontract.Suspensions(t, open)
	storecontract.SuspendedList(t, open)
	storecontract.ExpiryStart(t, onFake(func(s *memstore.Store) storecontract.SkewedSuspensions {
		return storecontract.SkewedSuspensions{Store: s.Suspensions(), Skewed: func(d time.Duration) moderation.Store { return s.SkewedSuspensions(d) }}
	}))
	storecontract.BucketIndex(t, onFake(func(s *memstore.Store) storecontract.ListStores {
		return storecontract.ListStores{Store: s.Suspensions(), Audit: s.Audit()}
	}))
}

func TestContractGroupMembers(t *testing.T) {
	storecontract.GroupMembers(t, onFake(func(s *memstore.Store) groups.MemberStore { return s.GroupMembers() }))
}

func TestContractContent(t *testing.T) {
	storecontract.Contents(t, onFake(func(s *memstore.Store) library.ContentStore { return s.Contents().Content }))
	storecontract.ContentMembers(t, onFake(func(s *memstore.Store) library.MemberStore { return s.Contents().Members }))
}

func TestContractLibraries(t *testing.T) {
	storecontract.Libraries(t, onFake(func(s *memstore.Store) library.EntryStore { return s.Contents().Library }))
}

func TestContractOutbox(t *testing.T) {
	storecontract.Outbox(t, onFake(func(s *memstore.Store) library.Outbox { return s.Contents().Outbox }))
	storecontract.OutboxStart(t, onFake(func(s *memstore.Store) storecontract.SkewedOutbox {
		return storecontract.SkewedOutbox{Outbox: s.Contents().Outbox, Skewed: s.SkewedOutbox}
	}))
}

func TestContractIndexEntries(t *testing.T) {
	storecontract.Deletions(t, onFake(func(s *memstore.Store) lifecycle.DeletionStore { return s.Deletions() }))
	storecontract.Closings(t, onFake(func(s *memstore.Store) lifecycle.ClosingStore { return s.Closings() }))
	storecontract.GroupChanges(t, onFake(func(s *memstore.Store) groups.ChangeIndex { return s.GroupChanges() }))
}

func TestContractModerationAttempts(t *testing.T) {
	storecontract.ModerationAttempts(t, onFake(func(s *memstore.Store) moderation.AttemptIndex { return s.ModerationAttempts() }))
}

func TestContractJobQueue(t *testing.T) {
	storecontract.JobQueue(t, onFake(func(s *memstore.Store) jobs.Queue { return s.JobQueue() }))
}

func TestContractJobs(t *testing.T) {
	storecontract.Jobs(t, onFake(func(s *memstore.Store) jobs.Store { return s.Jobs() }))
}
