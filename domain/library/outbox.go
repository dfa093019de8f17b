package library

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// DrainOutbox finishes fan-outs whose mark is older than grace (their
// change either crashed or is still running in the background): it brings
// every member library to the item's current state and purges principals
// it was removed from. It returns how many items it completed.
func (s *Service) DrainOutbox(ctx context.Context, grace time.Duration, limit int) (int, error) {
	pending, err := s.outbox.Pending(ctx, s.cfg.Now().Add(-grace), limit)
	if err != nil {
		return 0, err
	}
	done := 0
	var errs []error
	for _, p := range pending {
		if err := s.complete(ctx, p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.outbox.Done(ctx, p.ContentID, p.Marker); err != nil {
			errs = append(errs, err)
			continue
		}
		done++
	}
	return done, errors.Join(errs...)
}

// complete redoes one item's fan-out from its current state.
func (s *Service) complete(ctx context.Context, p OutboxEntry) error {
	c, err := s.content.GetSerial(ctx, p.ContentID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil // the creation never happened
	}
	if err != nil {
		return err
	}
	if c.Version == 1 {
		// A creation that stopped before its creator became a member.
		if err := s.members.Put(ctx, c.ID, Member{PrincipalID: c.CreatedBy, Role: RoleManager}, 1); err != nil {
			return err
		}
	}
	for _, principal := range p.Purge {
		found, err := s.members.Find(ctx, c.ID, []string{principal})
		if err != nil {
			return err
		}
		if len(found) > 0 && !c.Deleted {
			continue // shared again since
		}
		idx, err := s.library.Index(ctx, principal, []string{c.ID})
		if err != nil {
			return err
		}
		var old *Entry
		if e, ok := idx[c.ID]; ok {
			old = &e
		}
		if err := s.library.Remove(ctx, principal, c.ID, old, c.Version); err != nil {
			return err
		}
		if err := s.members.Delete(ctx, c.ID, principal, c.Version); err != nil {
			return err
		}
	}
	return s.fanout(ctx, c, nil)
}

// OutboxBacklog reports how many fan-outs are unfinished and how old the
// oldest mark is (for metrics).
func (s *Service) OutboxBacklog(ctx context.Context) (items int, oldest time.Duration, err error) {
	now := s.cfg.Now()
	pending, err := s.outbox.Pending(ctx, now.Add(time.Hour), 100000)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range pending {
		if age := now.Sub(p.MarkedAt); age > oldest {
			oldest = age
		}
	}
	return len(pending), oldest, nil
}
