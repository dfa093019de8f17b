package library

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shelf/domain"
)

// DrainOutbox finishes fan-outs whose mark is older than grace (their
// change crashed, is still running, or lost an answer and may still land),
// up to limit marks a call: per item it fences the item (see fence: a
// share or unshare left pending is finished first), recording in the row
// that the marks it takes were made before its cut-off, brings every
// member library to the item as of the fence, takes a departed creator
// off it (leaveForDepartedCreator), then deletes the marks it read (a
// mark made since is a row of its own and stays). An item whose fence or
// fan-out has failed for over RequeueAfter has its marks moved forward
// (requeue), so the items it would keep at the head of the queue are
// read. grace must be no shorter than the service's OutboxGrace. It
// returns how many items it completed.
func (s *Service) DrainOutbox(ctx context.Context, grace time.Duration, limit int) (int, error) {
	now := s.cfg.Now()
	before := now.Add(-grace).Truncate(time.Millisecond)
	pending, err := s.outbox.Pending(ctx, before, limit)
	if err != nil {
		return 0, err
	}
	// Every mark read was made before this: the repository's read takes
	// the whole millisecond of before (a time UUID's bound is by the
	// millisecond).
	taken := before.Add(time.Millisecond)
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
		if err := s.complete(ctx, id, taken); err != nil {
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

// RequeueAfter is how long an item's fence or fan-out may keep failing
// before its marks are moved forward: the outbox's reader starts at the
// oldest window holding a live mark, so an old mark left in place would
// make every read longer, and reads the oldest marks first, so a pass's
// worth of items whose fences keep failing (their replicas short of a
// quorum) would hold every other item's fan-out back
// (docs/design/libraries.md#queues).
const RequeueAfter = time.Minute

// requeue makes a fresh mark for the item, then deletes its old ones. A
// failure after the new mark leaves both: the fan-out is redone twice,
// which changes nothing. It needs no fence of its own: a change whose mark
// it deletes finds no fence's record for it (markAgainIfTaken) and goes
// on, but its compare-and-set either lands before the fence the fresh
// mark brings, which carries it out, or fails against it (the fence moves
// the version on), and the change's next read sees that fence's record.
func (s *Service) requeue(ctx context.Context, id string, old []string) error {
	if _, err := s.mark(ctx, id); err != nil {
		return err
	}
	var errs []error
	for _, m := range old {
		errs = append(errs, s.outbox.Done(ctx, id, m))
	}
	return errors.Join(errs...)
}

// complete redoes one item's fan-out: it fences the item (taken: every
// mark the caller will delete was made before it), brings every member
// library to the item as of the fence, then takes the creator off the
// item if their account is being deleted (leaveForDepartedCreator).
func (s *Service) complete(ctx context.Context, id string, taken time.Time) error {
	c, err := s.fence(ctx, id, taken)
	if err != nil {
		return err
	}
	if err := s.fanout(ctx, c, nil); err != nil {
		return err
	}
	_, err = s.leaveForDepartedCreator(ctx, c)
	return err
}

// fence makes sure no attempt of a change behind the item's marks can
// still apply, and returns the item as it then stands. A mark says a
// change may be under way, and any attempt of its compare-and-set may
// still land, later than any grace; the state read now is no proof of
// what the change did. So:
//   - a live item is fenced: a compare-and-set on the version read that
//     moves it on, records taken in FencedBefore (if later than the time
//     there: every mark taken by this fence or an earlier one was made
//     before it), and changes nothing else. A pending share or unshare is
//     finished first (cleared by its own compare-and-set on its version,
//     which leaves the version as it is; one taken back moves it on, and
//     the fence starts over); at version 1 the creator's membership is
//     written again (a creation may have stopped before it); an update
//     recorded without its place is placed by the same write (see place).
//     Every attempt still in flight is conditioned on an older version and
//     fails wherever it lands; a change that reads after the fence with a
//     mark made before taken marks again before its compare-and-set
//     (markAgainIfTaken), so its own mark carries its fan-out. The
//     fan-out then writes at the fenced version, which shadows every
//     library write of the versions before.
//   - a deleted item needs no fence: no change applies to a deleted item
//     (every change refuses it before its compare-and-set, and a deletion
//     left nothing pending), so the row read is final.
//   - a missing item is a creation that never happened or whose insert is
//     still in flight: a deleted row of version 1 is inserted IF NOT
//     EXISTS in its place, so a late insert fails and its creation answers
//     503; if the insert won, the item is read again and fenced as above.
//
// Lost answers and contention start over from a read, as a change does.
func (s *Service) fence(ctx context.Context, id string, taken time.Time) (Content, error) {
	var out Content
	err := domain.Retry(ctx, maxContentAttempts, errItemBusy, func(int) (bool, error) {
		c, err := s.content.GetSerial(ctx, id)
		if errors.Is(err, domain.ErrNotFound) {
			now := s.now()
			out = Content{ID: id, CreatedAt: now, LastModified: now, Deleted: true, Version: 1}
			applied, err := s.content.Create(ctx, out)
			return applied, err // not applied: the insert won; read it
		}
		if err != nil || c.Deleted {
			out = c
			return err == nil, err
		}
		if c.Pending != nil {
			if err := s.finish(ctx, c); err != nil {
				return false, err
			}
			// As finished: a share that took the item past its lean rows
			// recorded it not lean, and the fence must not write it back.
			c.Pending, c.Lean = nil, c.Lean && !s.crossesLean(c)
		}
		if c.Version == 1 {
			// A creation that may have stopped before its creator became a
			// member (or whose membership is still in flight: the same row).
			if err := s.members.Put(ctx, c.ID, Member{PrincipalID: c.CreatedBy, Role: RoleManager}, 1); err != nil {
				return false, err
			}
		}
		if c.Placing {
			c = s.placedNow(c)
		}
		if taken.After(c.FencedBefore) {
			c.FencedBefore = taken
		}
		c.Version++
		applied, err := s.content.Update(ctx, c)
		if err != nil || !applied {
			return false, err
		}
		out = c
		return true, nil
	})
	return out, err
}

// BacklogMarks is how many marks OutboxBacklog reads at most.
const BacklogMarks = 10000

// OutboxBacklog reports how many items have unfinished fan-outs and how
// old the oldest mark is, from the first BacklogMarks marks (for
// metrics: past them, at least that many).
func (s *Service) OutboxBacklog(ctx context.Context) (items int, oldest time.Duration, err error) {
	now := s.cfg.Now()
	pending, err := s.outbox.Pending(ctx, now.Add(time.Hour), BacklogMarks)
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
