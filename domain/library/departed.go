package library

import (
	"context"
	"errors"

	"shelf/domain"
)

// Memberships of accounts being deleted (docs/design/deletion.md,
// "Memberships the deletion cannot see"). A deletion finds the user's
// items through the user's library index, written after the item's row
// records the membership. A share whose library write failed, or whose
// compare-and-set landed after the deletion read that index, and a
// creation whose creator's library write failed, are not there. So
// whoever carries such a membership out (the request, the next change,
// the outbox worker) reads the account after writing the member row and
// the library: if it is being deleted or deleted, the membership is taken
// back, as the deletion would have. If the read finds the account still
// visible, its deletion's compare-and-set comes after the read, so its read
// of the index, later still, finds what was written before.

// departed reports an account being deleted or deleted (or never made).
func (s *Service) departed(ctx context.Context, userID string) (bool, error) {
	u, err := s.users.Profile(ctx, userID)
	if errors.Is(err, domain.ErrNotFound) {
		return true, nil
	}
	return err == nil && u.Departed(), err
}

// sharedWithDeparted reports a share (not an unshare) to a principal on
// its way out: a user whose account is being deleted or deleted, or a
// group being closed or closed. A closing takes its shares off the items
// its group's library index lists, read after the compare-and-set that
// began it; so, as for a deletion, a share read here with its group still
// active is in the index that closing reads, and one read with its group
// gone is taken back (docs/design/closing.md, "Shares").
func (s *Service) sharedWithDeparted(ctx context.Context, pc MemberChange) (bool, error) {
	switch {
	case pc.Role == "":
		return false, nil
	case domain.ValidID(pc.PrincipalID, domain.UserIDPrefix):
		return s.departed(ctx, pc.PrincipalID)
	case domain.ValidID(pc.PrincipalID, domain.GroupIDPrefix):
		active, err := s.groups.Exists(ctx, pc.PrincipalID)
		return err == nil && !active, err
	}
	return false, nil
}

// outOfTheGroup reports a share whose caller managed the item only
// through a group (pc.AskedBy, pc.Through) and is no member of it now, as
// the group row records it (a removal recorded, the group closing or
// closed: Groups.GroupsAmong, as the access check reads it). Read after
// the share's compare-and-set, by whoever finishes it: if the caller is
// in the group then, any removal comes after the share; if not, nothing
// tells the removal came after, and the share is taken back as the
// request's own check takes it back (caller.heldAfter, settleShare), so
// a request whose answer was lost, or whose process stopped, leaves no
// share its caller's right did not see through
// (TestAShareWhoseAskerLeftTheGroupIsTakenBackByWhoeverFinishesIt).
//
// Out of that group, he may still manage the item through another of its
// managing groups (as the item stood before the share: the principal at
// pc.PriorRole), and the request's own check would then pass: the share
// stands (TestAShareWhoseAskerStillManagesThroughAnotherGroupStands).
func (s *Service) outOfTheGroup(ctx context.Context, id string, pc MemberChange) (bool, error) {
	if pc.Role == "" || pc.AskedBy == "" || pc.Through == "" {
		return false, nil
	}
	in, err := s.inGroups(ctx, pc.AskedBy, []string{pc.Through})
	if err != nil || len(in) > 0 {
		return false, err
	}
	itemGroups, err := s.members.Groups(ctx, id)
	if err != nil {
		return false, err
	}
	var others []string
	for _, m := range itemGroups {
		role := m.Role
		if m.PrincipalID == pc.PrincipalID {
			role = pc.PriorRole
		}
		if role == RoleManager && m.PrincipalID != pc.Through {
			others = append(others, m.PrincipalID)
		}
	}
	if len(others) == 0 {
		return true, nil
	}
	in, err = s.inGroups(ctx, pc.AskedBy, others)
	return err == nil && len(in) == 0, err
}

// inGroups is which of groupIDs the user is a member of, read after a
// share's compare-and-set, so that a member found was one at some moment
// after it. Groups.GroupsAmong reads the reverse index, then the rows of
// the groups found there: a removal recorded before that read and
// finished between the two leaves an index row read and a row that
// records no removal, a member at no moment of either. Found in some, the
// index is read again, after those rows: such a removal's rows are gone
// by then (TestAShareRecordedAfterItsAskersRemovalIsTakenBack). The rows
// are not read again: a removal they did not record was recorded after
// them, after the share
// (TestAShareItsFinishSawThroughReadsItsAskersGroupRowOnce).
func (s *Service) inGroups(ctx context.Context, userID string, groupIDs []string) ([]string, error) {
	in, err := s.groups.GroupsAmong(ctx, userID, groupIDs)
	if err != nil || len(in) == 0 {
		return in, err
	}
	return s.groups.Listed(ctx, userID, in)
}

// takeBack undoes the share pending in c (as read: at the version that
// recorded it, its member row and library written) instead of clearing
// it: one compare-and-set on that version turns it into the principal's
// removal (with the counts it leads to), or, when the principal would be
// the last manager, into the item's deletion; toPrior (its caller out of
// the group it named), into the principal's membership from before it
// (pc.PriorRole; none: its removal), the counts as they were before the
// share, which had a manager. Exactly one of clearing and
// taking back applies (the take-back only while the share is still
// pending: ContentStore.TakeBack), and no later change is recorded
// before either (a change finishes what is pending first). The removal is then carried out
// (or the deletion fanned out) under a mark of its own, so a failure
// leaves it to the outbox worker whoever called. taken: its
// compare-and-set applied (false with an error: perhaps); not taken, the
// share was cleared or taken back by another finisher, and stands as they
// left it.
func (s *Service) takeBack(ctx context.Context, c Content, toPrior bool) (taken bool, err error) {
	mark, err := s.mark(ctx, c.ID)
	if err != nil {
		return false, err
	}
	marker := mark.Marker
	pc := *c.Pending
	next := c
	next.Version, next.Pending = c.Version+1, nil
	switch {
	case toPrior:
		next.Pending = &MemberChange{PrincipalID: pc.PrincipalID, Role: pc.PriorRole}
		next.TakenBack = c.Version // for the share's request, whose clear finds the row moved on (shareStood)
		if pc.PriorRole == "" {
			next.Members--
		}
		if pc.Role == RoleManager && pc.PriorRole != RoleManager {
			next.Managers--
		}
		if pc.PriorRole == RoleManager && pc.Role != RoleManager {
			next.Managers++
		}
	case pc.Role == RoleManager && c.Managers <= 1:
		next.Deleted = true
	default:
		next.Members--
		if pc.Role == RoleManager {
			next.Managers--
		}
		next.Pending = &MemberChange{PrincipalID: pc.PrincipalID}
	}
	narrowed, err := s.narrow(ctx, c, next)
	if err != nil {
		return false, err // the mark stays for the worker
	}
	// Conditioned on the share still pending, not on the version alone:
	// a finisher that cleared it (its caller seen in the group then) left
	// the version as it was, and the share stands proven
	// (TestAShareClearedOnceItsAskerWasSeenInTheGroupIsNeverTakenBack).
	// Taken back to the role before only while the share still names its
	// caller: one his request vouched for (its check passed once it was
	// recorded) is cleared, whatever he did after
	// (TestAShareAnsweredOnceItsAskerWasSeenInTheGroupIsNeverTakenBack).
	askedBy := ""
	if toPrior {
		askedBy = pc.AskedBy
	}
	applied, err := s.content.TakeBack(ctx, next, pc.PrincipalID, askedBy)
	switch {
	case err != nil:
		return false, err // unknown: the mark stays for the worker
	case !applied && narrowed:
		// Moved past c, or cleared, but lean rows were removed at c's
		// version: the worker's fence and fan-out bring back what still
		// stands.
		return false, nil
	case !applied:
		// Moved past c, or cleared: another finisher cleared or took it
		// back, and finishes what it recorded.
		return false, s.outbox.Done(ctx, c.ID, marker)
	}
	if next.Deleted {
		err = s.fanout(ctx, next, &c)
	} else {
		err = s.finish(ctx, next)
	}
	if err != nil {
		return true, err
	}
	return true, s.outbox.Done(ctx, c.ID, marker)
}

// leaveForDepartedCreator takes an item's creator off it once the
// creator's account is being deleted, as the deletion would have (an
// item the creator manages is deleted, else the creator leaves it): a
// creation whose creator's library write failed is not in the index the
// deletion reads. Called after the creator's member row and library were
// written (by the creation, or by the outbox worker), so a deletion that
// begins after the account read here finds the item in that index. Which
// of the two is decided on the membership the change writes on: a
// manager who took the creator off meanwhile keeps the item
// (TestADepartedCreatorTakenOffMeanwhileLeavesTheItemStanding).
func (s *Service) leaveForDepartedCreator(ctx context.Context, c Content) (left bool, err error) {
	if c.Deleted {
		return false, nil
	}
	departed, err := s.departed(ctx, c.CreatedBy)
	if err != nil || !departed {
		return false, err
	}
	err = s.drop(ctx, c.ID, c.CreatedBy, true)
	if errors.Is(err, domain.ErrNotFound) {
		err = nil // gone or left meanwhile
	}
	return true, err
}
