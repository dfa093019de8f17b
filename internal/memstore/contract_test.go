package memstore_test

import (
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
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
