package faults

import (
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/tests/broken"
	"shelf/tests/memstore"
)

// accountRows and groupRows are the account and group stores the
// explorer's services write through: st's own, or in the deliberately
// broken build (go test -tags brokenclaims ./tests/faults, which must fail
// with U1 and U3 violations) tests/broken's, which take a write of
// unknown outcome for "not applied", so that its claims are released.
func accountRows(st *memstore.Store) accounts.UserStore {
	if brokenClaims {
		return broken.Users{UserStore: st.Users()}
	}
	return st.Users()
}

func groupRows(st *memstore.Store) groups.Store {
	if brokenClaims {
		return broken.Groups{Store: st.Groups()}
	}
	return st.Groups()
}
