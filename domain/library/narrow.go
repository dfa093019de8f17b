package library

import (
	"context"
	"errors"

	"shelf/domain"
)

// narrow removes, before the compare-and-set that records next, every
// lean library row of c that next would make wrong: for a deletion or an
// update (a new last_modified, maybe a new name or visibility), the item's
// rows in every member's library; for an unshare (a share taken back
// included), the departing principal's. So a lean row a page shows
// without reading the item is never wrong once the change is recorded: a
// stale row can only be missing, never wider than the truth
// (docs/design/libraries.md#lean-rows).
//
// The deletes carry c's version as their timestamp, and a delete wins a
// tie: every row written at c's version or before (a late attempt of an
// old fan-out included) stays deleted, and whatever a fan-out writes at a
// later version lands. removed reports whether removals were begun (even
// if one failed); then the change keeps its outbox mark unless it is
// recorded, because the rows come back only with a fan-out at a later
// version (the change's own, or the outbox worker's after its fence).
//
// The work is bounded: a lean item has at most Config.LeanMembers members
// plus the one share that takes it past them (see finishPending).
func (s *Service) narrow(ctx context.Context, c, next Content) (removed bool, err error) {
	if !c.Lean {
		return false, nil // its rows are checked by every page
	}
	switch {
	case next.Deleted || !next.LastModified.Equal(c.LastModified) || next.Name != c.Name || next.Visibility != c.Visibility:
		_, err := s.eachMember(ctx, c.ID, func(m Member) error { return s.removeRows(ctx, c, m.PrincipalID) })
		return true, err
	case next.Pending != nil && next.Pending.Role == "":
		return true, s.removeRows(ctx, c, next.Pending.PrincipalID)
	}
	return false, nil // a share adds, and changes no member's row
}

// removeRows deletes the rows c has in one principal's library, one
// delete per bucket of c's visibility, all at once, at c's version. The
// index entry stays: the change's fan-out (or removal) writes it next.
func (s *Service) removeRows(ctx context.Context, c Content, principalID string) error {
	if s.Hooks.BeforeRemove != nil {
		s.Hooks.BeforeRemove(c.ID, principalID)
	}
	e := entryOf(c, principalID, "")
	buckets := BucketsFor(c.Visibility)
	errs := make([]error, len(buckets))
	domain.Parallel(ctx, len(buckets), func(ctx context.Context, i int) { errs[i] = s.library.DeleteRow(ctx, buckets[i], e) })
	return errors.Join(errs...)
}
