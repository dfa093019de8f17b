package library

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shelf/domain"
)

// DrainOutbox finishes fan-outs whose mark is older than grace (their
// change either crashed or is still running in the background): it
// finishes a share or unshare left pending and brings every member library
// to the item's current state, then deletes the marks it read (a mark made
// since is a row of its own and stays). It returns how many items it
// completed.
func (s *Service) DrainOutbox(ctx context.Context, grace time.Duration, limit int) (int, error) {
	now := s.cfg.Now()
	pending, err := s.outbox.Pending(ctx, now.Add(-grace), limit)
	if err != nil {
		return 0, err
	}
	var order []string
	marks := map[string][]string{}
	oldest := map[string]time.Time{}
	for _, p := range pending {
		if _, seen := marks[p.ContentID]; !seen {
			order = append(order, p.ContentID)
			oldest[p.ContentID] = p.MarkedAt
		}
		marks[p.ContentID] = append(marks[p.ContentID], p.Marker)
		if p.MarkedAt.Before(oldest[p.ContentID]) {
			oldest[p.ContentID] = p.MarkedAt
		}
	}
	done := 0
	var errs []error
	for _, id := range order {
		if err := s.complete(ctx, id); err != nil {
			errs = append(errs, err)
			if now.Sub(oldest[id]) > RequeueAfter {
				if err := s.requeue(ctx, id, marks[id]); err != nil {
					errs = append(errs, err)
				} else {
					errs = append(errs, fmt.Errorf("%s: the fan-out failed for over %s: its marks were moved forward", id, RequeueAfter))
				}
			}
			continue
		}
		for _, m := range marks[id] {
			if err := s.outbox.Done(ctx, id, m); err != nil {
				errs = append(errs, err)
			}
		}
		done++
	}
	return done, errors.Join(errs...)
}

// RequeueAfter is how long an item's fan-out may keep failing before its
// marks are moved forward: the outbox's reader starts at the oldest
// window holding a live mark, so an old mark left in place would make
// every read longer (docs/design.md#queues).
const RequeueAfter = time.Minute

// requeue makes a fresh mark for the item, then deletes its old ones. A
// failure after the new mark leaves both: the fan-out is redone twice,
// which changes nothing.
func (s *Service) requeue(ctx context.Context, id string, old []string) error {
	if _, err := s.outbox.Mark(ctx, id); err != nil {
		return err
	}
	var errs []error
	for _, m := range old {
		errs = append(errs, s.outbox.Done(ctx, id, m))
	}
	return errors.Join(errs...)
}

// complete redoes one item's fan-out from its current state.
func (s *Service) complete(ctx context.Context, id string) error {
	c, err := s.content.GetSerial(ctx, id)
	if errors.Is(err, domain.ErrNotFound) {
		return nil // the creation never happened
	}
	if err != nil {
		return err
	}
	if c.Pending != nil {
		if err := s.finish(ctx, c); err != nil {
			return err
		}
		c.Pending = nil
	}
	if c.Version == 1 {
		// A creation that stopped before its creator became a member.
		if err := s.members.Put(ctx, c.ID, Member{PrincipalID: c.CreatedBy, Role: RoleManager}, 1); err != nil {
			return err
		}
	}
	if err := s.fanout(ctx, c, nil); err != nil {
		return err
	}
	_, err = s.leaveForDepartedCreator(ctx, c)
	return err
}

// OutboxBacklog reports how many fan-outs are unfinished and how old the
// oldest mark is (for metrics).
func (s *Service) OutboxBacklog(ctx context.Context) (items int, oldest time.Duration, err error) {
	now := s.cfg.Now()
	pending, err := s.outbox.Pending(ctx, now.Add(time.Hour), 100000)
	if err != nil {
		return 0, 0, err
	}
	ids := map[string]bool{}
	for _, p := range pending {
		ids[p.ContentID] = true
		if age := now.Sub(p.MarkedAt); age > oldest {
			oldest = age
		}
	}
	return len(ids), oldest, nil
}
