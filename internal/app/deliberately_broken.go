//go:build brokenclaims || brokenlwt

package app

import (
	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/internal/broken"
	"shelf/repository"
)

// deliberatelyBroken breaks db and the stores as the build's tags say
// (internal/broken): the API the nemesis builds for its self-check (make
// test-nemesis-broken). Only this file, excluded from every build without
// one of the tags, imports internal/broken.
func deliberatelyBroken(db *repository.DB, users accounts.UserStore, rows groups.Store, claims domain.ClaimStore) (accounts.UserStore, groups.Store, domain.ClaimStore) {
	s := broken.Build(db, broken.Stores{Users: users, Groups: rows, Claims: claims})
	return s.Users, s.Groups, s.Claims
}
