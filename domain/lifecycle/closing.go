package lifecycle

import (
	"context"
	"errors"

	"shelf/domain"
	"shelf/domain/groups"
)

// Closing a group (DELETE /v1/groups/{id}, docs/design.md#closing).
// groups.BeginClosing moves the group to closing, its attempt recorded in
// the index first; then the content steps, idempotent and safe to repeat
// or to land late: take every item shared with the group off it through
// content's own unshare, purge what is left of its library; then
// groups.EndClosing removes the member rows, marks the group closed,
// releases its name and ends the index entry.

// CloseGroup closes a group, by one of its managers or an active admin
// (groups.MayClose), whatever members it still has: every membership and
// every share with the group ends, and its name is freed. A closing under
// way is finished (by whoever began it, or an admin; to anyone else the
// group is gone), and a repeat of a finished one sweeps the steps again
// and answers nil.
func (s *Service) CloseGroup(ctx context.Context, p domain.Principal, id string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	gr, err := s.groups.BeginClosing(ctx, p, id, s.groups.MayClose, s.st.Closings)
	if err != nil {
		return err
	}
	return s.finishClosing(ctx, gr)
}

// finishClosingOf finishes the closing of a group found closing (a
// deletion meets such a group among a user's groups); any other group is
// left alone.
func (s *Service) finishClosingOf(ctx context.Context, id string) error {
	if !domain.ValidID(id, domain.GroupIDPrefix) {
		return nil
	}
	gr, err := s.groups.GetSerial(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && gr.Status != domain.StatusClosing) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.finishClosing(ctx, gr)
}

// finishClosing carries out the steps of the closing of gr (closing or
// closed), each idempotent: what a crash left, any step may do again. The
// entry it writes again (and EndClosing ends) is the one of the attempt
// that began the closing (the row's).
func (s *Service) finishClosing(ctx context.Context, gr groups.Group) error {
	if gr.Status == domain.StatusClosing {
		// Again, in case the first write of it was lost: the repair finds
		// the closing through it until it is done.
		if err := s.st.Closings.Begin(ctx, groups.EntryOfClosing(gr)); err != nil {
			return err
		}
	}
	if err := s.dropItems(ctx, gr.ID); err != nil {
		return err
	}
	if err := s.closingStep("items"); err != nil {
		return err
	}
	if err := s.library.Purge(ctx, gr.ID); err != nil {
		return err
	}
	if err := s.closingStep("library"); err != nil {
		return err
	}
	return s.groups.EndClosing(ctx, gr, s.st.Closings)
}

// dropItems takes the group off every item of its library index, through
// content's own unshare (library.Drop): each item's counts stay exact, and
// its other members keep it.
func (s *Service) dropItems(ctx context.Context, id string) error {
	after := ""
	for {
		items, err := s.library.IndexPage(ctx, id, after, page)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := s.library.Drop(ctx, it.ContentID, id); err != nil && !errors.Is(err, domain.ErrNotFound) {
				return err
			}
		}
		if len(items) < page {
			return nil
		}
		after = items[len(items)-1].ContentID
	}
}
