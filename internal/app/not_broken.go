//go:build !brokenclaims && !brokenlwt

package app

import (
	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/repository"
)

// deliberatelyBroken returns the stores as they are: only the API built
// with a tag of a deliberately broken build (deliberately_broken.go)
// replaces them.
func deliberatelyBroken(_ *repository.DB, users accounts.UserStore, rows groups.Store, claims domain.ClaimStore) (accounts.UserStore, groups.Store, domain.ClaimStore) {
	return users, rows, claims
}
