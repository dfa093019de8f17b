package memstore_test

import (
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/internal/memstore"
	"shelf/internal/storecontract"
)

// The store-contract suites on the fake: each check on a store of its
// own, whose clock Pass moves.

var contractStart = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

func openFake(t testing.TB) (*memstore.Store, storecontract.Clock) {
	s := memstore.New(contractStart)
	return s, storecontract.Clock{Now: s.Now, Pass: s.Advance}
}

func TestContractClaims(t *testing.T) {
	storecontract.Claims(t, func(t testing.TB) (domain.ClaimStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Claims(), c
	})
}

func TestContractUsers(t *testing.T) {
	storecontract.Users(t, func(t testing.TB) (accounts.UserStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Users(), c
	})
}

func TestContractGroups(t *testing.T) {
	storecontract.Groups(t, func(t testing.TB) (groups.Store, storecontract.Clock) {
		s, c := openFake(t)
		return s.Groups(), c
	})
}

func TestContractTokens(t *testing.T) {
	storecontract.Tokens(t, func(t testing.TB) (accounts.TokenStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Tokens(), c
	})
}

func TestContractSessions(t *testing.T) {
	storecontract.Sessions(t, func(t testing.TB) (accounts.SessionStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Sessions(), c
	})
}

func TestContractSuspensions(t *testing.T) {
	open := func(t testing.TB) (moderation.Store, storecontract.Clock) {
		s, c := openFake(t)
		return s.Suspensions(), c
	}
	storecontract.Suspensions(t, open)
	storecontract.SuspendedList(t, open)
}

func TestContractGroupMembers(t *testing.T) {
	storecontract.GroupMembers(t, func(t testing.TB) (groups.MemberStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.GroupMembers(), c
	})
}

func TestContractContent(t *testing.T) {
	storecontract.Contents(t, func(t testing.TB) (library.ContentStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Contents().Content, c
	})
	storecontract.ContentMembers(t, func(t testing.TB) (library.MemberStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Contents().Members, c
	})
}

func TestContractLibraries(t *testing.T) {
	storecontract.Libraries(t, func(t testing.TB) (library.EntryStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Contents().Library, c
	})
}

func TestContractOutbox(t *testing.T) {
	storecontract.Outbox(t, func(t testing.TB) (library.Outbox, storecontract.Clock) {
		s, c := openFake(t)
		return s.Contents().Outbox, c
	})
}

func TestContractIndexEntries(t *testing.T) {
	storecontract.Deletions(t, func(t testing.TB) (lifecycle.DeletionStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Deletions(), c
	})
	storecontract.Closings(t, func(t testing.TB) (lifecycle.ClosingStore, storecontract.Clock) {
		s, c := openFake(t)
		return s.Closings(), c
	})
}
