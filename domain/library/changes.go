package library

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"shelf/domain"
)

// maxContentAttempts bounds the rounds of a change that keeps losing the
// item's compare-and-set to concurrent changes: contention is retried here,
// and answered (409 concurrent_change, errItemBusy) only once every
// round was lost.
const maxContentAttempts = 64

var (
	// ErrLastManager: the change would leave the item without a manager
	// (exported: a deletion tells it apart with errors.Is).
	ErrLastManager = &domain.Error{Kind: domain.ErrConflict, Code: "last_manager",
		Message: "The item would be left without a manager: make another member a manager first " +
			"(PUT /v1/content/{id}/members/{principalId} with role manager), or delete the item."}
	errPrincipalNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such user or group."}
)

// Create makes an item; its creator is its first manager and finds it in
// their library.
func (s *Service) Create(ctx context.Context, p domain.Principal, in Input) (Content, error) {
	if p.Anonymous() {
		return Content{}, domain.ErrNoSession
	}
	now := s.now()
	c := Content{ID: domain.NewID(domain.ContentIDPrefix), CreatedBy: p.UserID, CreatedAt: now, LastModified: now,
		Members: 1, Managers: 1, Version: 1, Lean: true}
	if err := in.applyTo(&c, true); err != nil {
		return Content{}, err
	}
	// The insert needs no second mark (see markAgainIfTaken): a worker
	// that took the mark found no item and fenced the id, and the insert
	// fails, or found it and fenced it after the insert, and its fan-out
	// writes what this creation writes, at a later version.
	mark, err := s.mark(ctx, c.ID)
	if err != nil {
		return Content{}, err
	}
	marker := mark.Marker
	applied, err := s.content.Create(ctx, c)
	if err != nil {
		return Content{}, err
	}
	if !applied {
		// The insert came after the outbox worker found no item and
		// fenced the id: this creation never happens (see fence).
		return Content{}, errCreationFenced
	}
	creator := Member{PrincipalID: p.UserID, Role: RoleManager}
	if err := s.members.Put(ctx, c.ID, creator, c.Version); err != nil {
		return c, nil // durable with its outbox mark: the worker finishes (see complete)
	}
	if err := s.library.Apply(ctx, entryOf(c, p.UserID, RoleManager), nil); err != nil {
		return c, nil
	}
	// The creator's account again, now that the item is in its library: a
	// deletion that began meanwhile may have read that library before.
	left, err := s.leaveForDepartedCreator(ctx, c)
	if err == nil {
		_ = s.outbox.Done(ctx, c.ID, marker) // else it stays: the worker checks again (see complete)
	}
	if left {
		return Content{}, domain.ErrNoSession // the caller's account is gone
	}
	return c, nil
}

// Update changes an item's fields (managers only); it gets a new
// lastModified and every member library follows.
func (s *Service) Update(ctx context.Context, p domain.Principal, id string, in Input) (Content, error) {
	by, err := s.requireManager(ctx, p, id)
	if err != nil {
		return Content{}, err
	}
	if err := in.apply(&Content{}); err != nil {
		return Content{}, err // refused before anything is marked
	}
	ch, err := s.change(ctx, id, by.decide(ctx, func(c Content) (*Content, error) {
		if err := in.apply(&c); err != nil {
			return nil, err
		}
		c.LastModified = s.movedOn(c) // taken again once its rows are gone (change)
		return &c, nil
	}))
	if err != nil {
		return Content{}, err
	}
	s.publish(ctx, ch.next, &ch.prev, ch.marker)
	return ch.next, nil
}

// Delete removes an item from every library (managers only).
func (s *Service) Delete(ctx context.Context, p domain.Principal, id string) error {
	by, err := s.requireManager(ctx, p, id)
	if err != nil {
		return err
	}
	return s.deleteItem(ctx, id, by)
}

// deleteItem deletes an item, for by (nil: whoever asks, whose checks are
// its own).
func (s *Service) deleteItem(ctx context.Context, id string, by *caller) error {
	ch, err := s.change(ctx, id, by.decide(ctx, func(c Content) (*Content, error) {
		c.Deleted = true
		return &c, nil
	}))
	if err != nil {
		return err
	}
	s.publish(ctx, ch.next, &ch.prev, ch.marker)
	return nil
}

// Share gives a principal (user or group) a role on an item (managers
// only): created is true for a new member. The share is recorded in the
// item's row with the counts it leads to, then carried out (see carryOut).
func (s *Service) Share(ctx context.Context, p domain.Principal, id, principalID, role string) (created bool, err error) {
	if p.Anonymous() {
		return false, domain.ErrNoSession
	}
	if role != RoleViewer && role != RoleManager {
		return false, domain.Invalid("Some fields are not valid.", domain.FieldError{Field: "role", Code: "oneof", Message: "must be viewer or manager"})
	}
	by, err := s.requireManager(ctx, p, id)
	if err != nil {
		return false, err
	}
	if err := s.principalExists(ctx, principalID); err != nil {
		return false, err
	}
	var prior *Member // the principal's membership the share replaced
	ch, err := s.change(ctx, id, by.decide(ctx, func(c Content) (*Content, error) {
		before, err := s.memberOf(ctx, id, principalID)
		if err != nil || (before != nil && before.Role == role) {
			return nil, err // a database error, or nothing to do
		}
		created, prior = before == nil, before
		next, err := shareCounts(c, before, role)
		if err != nil {
			return nil, err
		}
		next.Pending = &MemberChange{PrincipalID: principalID, Role: role}
		if by.throughGroup && by.through != "" {
			// Named for whoever finishes it (outOfTheGroup): the request may
			// lose its answer or stop before its own check below.
			next.Pending.AskedBy, next.Pending.Through = p.UserID, by.through
			if before != nil {
				next.Pending.PriorRole = before.Role
			}
		}
		return &next, nil
	}))
	if err != nil {
		return false, err
	}
	if !ch.changed {
		return false, nil
	}
	back, finishErr := s.carryOut(ctx, ch)
	if back == principalDeparted {
		// The account is being deleted, or the group closed: its deletion
		// or closing may have read the principal's library before this
		// share wrote it, so the share was taken back (sharedWithDeparted,
		// takeBack), and it answers as a share to an unknown principal.
		return false, errPrincipalNotFound
	}
	if back == notTakenBack && finishErr == nil {
		// Finished as recorded: whoever cleared it read the caller in the
		// group it named (outOfTheGroup) after it was recorded, so any
		// departure came after it, and the share stands proven; a later
		// check would undo it on a departure that came after it, even once
		// another request answered success for it
		// (TestAShareItsFinishSawThroughIsNotRevertedByALaterCheck).
		return created, nil
	}
	if back == askerSeen {
		// As proven, its clear unanswered: vouched for, so that no later
		// finisher takes it back, unless one did already
		// (TestAShareItsFinishSawThroughIsNotRevertedWhenItsClearWentUnanswered).
		if err := s.vouch(ctx, ch.next); err != nil {
			return false, err
		}
		return created, nil
	}
	// The caller's check again, on the item as the share found it (the
	// principal's membership as it was), now that the share is recorded.
	before := ch.prev
	before.Pending = &MemberChange{PrincipalID: principalID}
	if prior != nil {
		before.Pending.Role = prior.Role
	}
	err = by.heldAfter(ctx, before)
	switch {
	case back == askerLeft && err == nil:
		// A finisher took it back, the caller out of the group it named,
		// and he is in the group again now
		// (TestAShareTakenBackWhileItsRequestWasSlowIsNotAnsweredCreated).
		return false, errShareTakenBack
	case back == askerLeft:
		// Finishing it found the caller out of the group it named, and
		// took it back already.
		return false, err
	case err != nil && !errors.As(err, new(*domain.Error)):
		// The check could not be read: nothing is undone on a guess. The
		// share stands as its finishers leave it: cleared by one that
		// read its caller in the group after it was recorded, or taken
		// back by one that did not (it names him until then)
		// (TestAShareIsNotTakenBackOnACheckThatCouldNotBeRead).
		return false, err
	case err != nil:
		// Refused now: the share stands if a finisher cleared it (it read
		// him in the group after the share was recorded; another request
		// may have answered success for it), and is taken back if it is
		// still to finish, as any finisher takes it back
		// (TestAShareAnotherFinisherSawThroughIsNotRevertedByALaterCheck).
		stood, rerr := s.settleShare(ctx, ch.next)
		switch {
		case rerr != nil:
			return false, rerr
		case stood:
			return created, nil
		}
		return false, err
	case finishErr != nil && ch.next.Pending != nil && ch.next.Pending.AskedBy != "":
		// Left pending, naming him, for a finisher that would read the
		// group later: his check passed once the share was recorded, so
		// any departure comes after it, and the share is vouched for
		// before it answers
		// (TestAShareAnsweredOnceItsAskerWasSeenInTheGroupIsNeverTakenBack).
		if err := s.vouch(ctx, ch.next); err != nil {
			return false, err
		}
	}
	return created, nil
}

// vouch records that the share pending in c (as recorded, naming its
// caller) passed its caller's check after it was recorded: it then names
// nobody, and whoever finishes it clears it as recorded, never taking it
// back for a departure after that check (ContentStore.Vouch, on the
// version that recorded it). A vouch that finds the row moved on reads
// what became of the share (shareStood): taken back, its request answers
// so (for its principal's departure: as a share to an unknown
// principal); cleared, it stands. An unknown outcome answers 503: the share may
// yet be taken back.
func (s *Service) vouch(ctx context.Context, c Content) error {
	vouched, err := s.content.Vouch(ctx, c)
	if err != nil || vouched {
		return err
	}
	back, err := s.shareStood(ctx, c, false)
	switch {
	case err != nil:
		return err
	case back == askerLeft:
		return errShareTakenBack
	case back == principalDeparted:
		// Taken back for its principal's departure, as a finish that read
		// it so answers
		// (TestAShareVouchedForAfterItsPrincipalsTakeBackIsNotAnsweredCreated).
		return errPrincipalNotFound
	}
	return nil
}

// errShareTakenBack answers a share taken back by whoever finished it,
// its caller found out of the group that let him share, who manages the
// item through it again by the time the request answers.
var errShareTakenBack = &domain.Error{Kind: domain.ErrConflict, Code: "share_taken_back",
	Message: "The share was taken back: while it was being made you were out of the group that lets you manage this item. Share it again if you still manage it and still mean to."}

// settleShare finishes the share recorded in c (at the version that
// recorded it, naming its caller) if it is still pending there, as any
// finisher does (finishPending: taken back if its caller is out of the
// group it names), and reports whether it stood: cleared by this finish
// or an earlier one, whose read of the group after it was recorded
// proves it, or not taken back since (shareStood).
func (s *Service) settleShare(ctx context.Context, c Content) (stood bool, err error) {
	now, err := s.content.GetSerial(ctx, c.ID)
	if err != nil {
		return false, err
	}
	var back takenBack
	if now.Version == c.Version && now.Pending != nil {
		back, err = s.finishPending(ctx, now)
	} else {
		back, err = s.shareStood(ctx, c, false)
	}
	return err == nil && back == notTakenBack, err
}

// memberOf reads one principal's membership of an item; nil when it is
// not a member.
func (s *Service) memberOf(ctx context.Context, id, principalID string) (*Member, error) {
	found, err := s.members.Find(ctx, id, []string{principalID})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return &found[0], nil
}

// shareCounts returns c with its counts once a principal that held before
// (nil: not a member) holds role. An item always keeps a manager.
func shareCounts(c Content, before *Member, role string) (Content, error) {
	if before == nil {
		c.Members++
	}
	if (before == nil || before.Role != RoleManager) && role == RoleManager {
		c.Managers++
	}
	if before != nil && before.Role == RoleManager && role != RoleManager {
		if c.Managers <= 1 {
			return c, ErrLastManager
		}
		c.Managers--
	}
	return c, nil
}

// Unshare removes a principal from an item: its managers and active admins
// may remove anyone, a user may remove the item from their own library, and
// a group's manager from the group's library. An item always keeps a
// manager. The removal is recorded in the item's row, then carried out
// (see carryOut).
func (s *Service) Unshare(ctx context.Context, p domain.Principal, id, principalID string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	if !ValidPrincipal(principalID) {
		// No item is shared with such an id; and a key that is not text
		// could not even be asked of the store.
		return errNotShared
	}
	by, err := s.mayUnshare(ctx, p, id, principalID)
	if err != nil {
		return err
	}
	return s.unshare(ctx, id, principalID, by)
}

// errNotManager refuses a change of an item to a caller who may see it but
// not manage it; errNotManagerToUnshare its unshare from someone else.
var (
	errNotManager = domain.Denied("Only a manager of this item, or an admin, may change, share or delete it; " +
		"ask one of its managers to.")
	errNotManagerToUnshare = domain.Denied("Only a manager of this item (or of the group it is shared with) may take it " +
		"from another; anyone may take it from themself.")
)

// errNotShared answers the removal of a principal the item is not shared
// with.
var errNotShared = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "The item is not shared with this principal."}

// errNotAMember answers a user leaving an item she is no member of
// herself, whether or not it exists (a leave tells nobody a private item
// exists): it says where an item she sees may come from.
var errNotAMember = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found",
	Message: "You are not a member of this item, or there is no such item. An item you see through a group leaves your library when you leave the group, or when one of the group's managers removes it from the group's library."}

// Drop takes a principal off an item for the system (a group's closing,
// whose caller was checked there; an account's deletion): content's own
// unshare, so the counts stay exact; an item the principal is the last
// manager of is deleted, as an account deletion does with the items it
// is the last manager of.
//
// Both are decided in one change, on the row its compare-and-set writes
// on: a share recorded between a refused removal and a deletion (an
// admin making someone else a manager) would otherwise have the item
// deleted on the count read before it
// (TestADropThatFoundTheLastManagerDeletesNothingAManagerWasAddedTo).
func (s *Service) Drop(ctx context.Context, id, principalID string) error {
	return s.drop(ctx, id, principalID, false)
}

// drop is Drop; withManaged also deletes an item the principal manages
// at all (a departed creator's, see leaveForDepartedCreator), on the
// membership read for the change that records it.
func (s *Service) drop(ctx context.Context, id, principalID string, withManaged bool) error {
	ch, err := s.change(ctx, id, func(c Content) (*Content, error) {
		before, err := s.memberOf(ctx, c.ID, principalID)
		if err != nil {
			return nil, err
		}
		next, err := without(c, principalID, before)
		if errors.Is(err, ErrLastManager) || err == nil && withManaged && before.Role == RoleManager {
			c.Deleted = true
			return &c, nil
		}
		return next, err
	})
	switch {
	case err != nil:
		return err
	case ch.next.Deleted:
		s.publish(ctx, ch.next, &ch.prev, ch.marker)
	default:
		s.carryOut(ctx, ch)
	}
	return nil
}

// unshare records and carries out the removal of a principal from an
// item, for by (nil: whoever asks, whose checks are its own).
func (s *Service) unshare(ctx context.Context, id, principalID string, by *caller) error {
	ch, err := s.change(ctx, id, by.decide(ctx, func(c Content) (*Content, error) {
		return s.removal(ctx, c, principalID)
	}))
	if err != nil {
		return err
	}
	s.carryOut(ctx, ch)
	return nil
}

// removal is c with the removal of principalID recorded (and the counts
// it leads to), as a change decides it on the row it read.
func (s *Service) removal(ctx context.Context, c Content, principalID string) (*Content, error) {
	before, err := s.memberOf(ctx, c.ID, principalID)
	if err != nil {
		return nil, err
	}
	return without(c, principalID, before)
}

// without is c with principalID's removal recorded, principalID's
// membership as read for it being before (nil: none).
func without(c Content, principalID string, before *Member) (*Content, error) {
	if before == nil {
		return nil, errNotShared
	}
	c.Members--
	if before.Role == RoleManager {
		if c.Managers <= 1 {
			return nil, ErrLastManager
		}
		c.Managers--
	}
	c.Pending = &MemberChange{PrincipalID: principalID}
	return &c, nil
}

// carryOut finishes the share or unshare a change recorded and clears the
// change's outbox mark. If that fails, the change still stands (it is
// recorded, and access follows the record at once); whoever changes the
// item next, or the outbox worker, finishes it. back: a share taken back
// (or left to be), and why; err: the finish failed, and it is left so.
func (s *Service) carryOut(ctx context.Context, ch changed) (back takenBack, err error) {
	back, err = s.finishPending(ctx, ch.next)
	if err != nil {
		s.log.Warn(ctx, "membership change recorded but not finished; the outbox worker will finish it", "content", ch.next.ID, "error", err.Error())
		return back, err
	}
	_ = s.outbox.Done(ctx, ch.next.ID, ch.marker)
	return back, nil
}

// mayUnshare answers whether the caller may take principalID off the item:
// its managers and admins may remove anyone, a user the item from their own
// library, and a group's manager from the group's library.
// It returns the caller's check, for the change to ask again (caller).
func (s *Service) mayUnshare(ctx context.Context, p domain.Principal, id, principalID string) (*caller, error) {
	if principalID == p.UserID {
		return s.mayLeave(ctx, p, id)
	}
	c, a, err := s.load(ctx, p, id, managing)
	if err != nil {
		return nil, err
	}
	by := &caller{checked: c, may: func(ctx context.Context, c Content) error {
		a, err := s.accessTo(ctx, p, c, managing)
		if err != nil {
			return err
		}
		if !a.see {
			return errContentNotFound
		}
		return s.mayUnshareWith(ctx, p, a, principalID)
	}}
	err = s.mayUnshareWith(ctx, p, a, principalID)
	switch {
	case errors.Is(err, domain.ErrForbidden):
		return nil, s.denied(ctx, id, err)
	case err != nil:
		return nil, err
	}
	return by, nil
}

// mayLeave answers a caller's removal of themselves from an item: anyone
// may leave what is shared with them, so no access is worked out, whose
// cost follows the groups the item's managers shared it with (a stranger
// could share his item with the caller and a hundred groups of his she is
// in). The item and the caller's own membership are read at once; an item
// the caller is no member of answers as one that does not exist
// (errNotAMember), so a leave tells nobody an item exists.
func (s *Service) mayLeave(ctx context.Context, p domain.Principal, id string) (*caller, error) {
	if !domain.ValidID(id, domain.ContentIDPrefix) {
		return nil, errNotAMember
	}
	var c Content
	var own []Member
	var cErr, ownErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			c, cErr = s.content.Get(ctx, id)
		} else {
			own, ownErr = s.members.Find(ctx, id, []string{p.UserID})
		}
	})
	switch {
	case errors.Is(cErr, domain.ErrNotFound) || (cErr == nil && c.Deleted):
		return nil, errNotAMember
	case cErr != nil:
		return nil, cErr
	case ownErr != nil:
		return nil, ownErr
	}
	if len(withPending(own, c.Pending, []string{p.UserID})) == 0 {
		return nil, errNotAMember
	}
	// Leaving needs no right: a change of the item meanwhile decides
	// again on the membership alone (the change's own read of it).
	return &caller{checked: c, may: func(context.Context, Content) error { return nil }}, nil
}

// mayUnshareWith decides mayUnshare on the caller's access a to an item it
// may see: ErrDenied if it may not.
func (s *Service) mayUnshareWith(ctx context.Context, p domain.Principal, a access, principalID string) error {
	if a.manage || a.admin || principalID == p.UserID {
		return nil
	}
	if domain.ValidID(principalID, domain.GroupIDPrefix) {
		role, err := s.groups.MemberRole(ctx, principalID, p.UserID)
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		if role == "manager" {
			return nil
		}
	}
	return cmp.Or(a.refused, error(errNotManagerToUnshare))
}

// principalExists checks a user or group id.
func (s *Service) principalExists(ctx context.Context, id string) error {
	switch {
	case domain.ValidID(id, domain.UserIDPrefix):
		u, err := s.users.Profile(ctx, id)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
			return errPrincipalNotFound
		}
		return err
	case domain.ValidID(id, domain.GroupIDPrefix):
		ok, err := s.groups.Exists(ctx, id)
		if err == nil && !ok {
			return errPrincipalNotFound
		}
		return err
	default:
		return errPrincipalNotFound
	}
}

// changed is the outcome of change: the item before and after, and the
// change's outbox mark; changed is false when there was nothing to do.
type changed struct {
	next, prev Content
	marker     string
	changed    bool
}

// change runs one change of an item. The outbox mark is written beside
// the first read and is durable before any compare-and-set (so a crash
// after the change still fans out). Then, round after round: read the
// item; if a share or unshare is pending there, finish it first (a crash
// left it, or it is in flight), or if an update is still placing, place
// it (see place), and read again. On an item with nothing pending, the
// members table agrees with the row, and decide returns the item as the
// change leaves it, nil when there is nothing to do, or the refusal to
// answer. A lean item's rows that the change makes wrong are removed
// (narrow), the item is marked again if a fence recorded in the row may
// have taken the mark (markAgainIfTaken), and the result is written by compare-and-set on the version read; a
// refusal or "nothing to do" is answered only once the item reads again at
// that version with nothing pending, so it never rests on member rows of a
// change recorded in between. A lost compare-and-set starts over, up to
// maxContentAttempts rounds. A change surely not recorded deletes its
// mark, unless it removed rows.
func (s *Service) change(ctx context.Context, id string, decide func(Content) (*Content, error)) (changed, error) {
	// The mark must be durable before the compare-and-set; the first read
	// of the item need not wait for it.
	var ch changed
	var c Content
	var mark OutboxEntry
	var markErr, readErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			mark, markErr = s.mark(ctx, id)
			ch.marker = mark.Marker
		} else {
			c, readErr = s.content.GetSerial(ctx, id)
		}
	})
	if markErr != nil {
		return ch, markErr
	}
	decided := false  // the change is recorded, or its outcome unknown: the mark stays
	narrowed := false // lean rows were removed: only a fan-out brings them back, so the mark stays
	err := domain.Retry(ctx, maxContentAttempts, errItemBusy, func(attempt int) (bool, error) {
		if attempt > 0 {
			c, readErr = s.content.GetSerial(ctx, id)
		}
		if err := live(c, readErr); err != nil {
			return false, err
		}
		if c.Pending != nil {
			return false, s.finish(ctx, c)
		}
		if c.Placing {
			// An update recorded without its place (its process stopped,
			// or it is taking it now): taken first, so nothing is recorded
			// on a provisional place.
			_, err := s.place(ctx, c)
			return false, err
		}
		if c.Version == 1 {
			// The item's first change: its creation may have stopped
			// before its creator became a member, and the outbox worker's
			// fence writes that membership only at version 1, which this
			// change moves past (TestACreationWhoseMembershipFailedKeepsItsCreatorPastALaterChange).
			if err := s.creatorJoins(ctx, c); err != nil {
				return false, err
			}
		}
		next, err := decide(c)
		var refusal *domain.Error
		if err != nil && !errors.As(err, &refusal) {
			return false, err // the database failed: there is no decision to check
		}
		if next == nil {
			again, err2 := s.content.GetSerial(ctx, id)
			if err2 != nil {
				return false, err2
			}
			if again.Version != c.Version || again.Pending != nil {
				return false, nil // moved: decide again
			}
			return true, err
		}
		next.Version = c.Version + 1
		// Marked again first, if a fence may have taken the mark: the rows
		// narrow removes must have a live mark behind them, whatever fails
		// after (TestAChangeThatNarrowedPastAFenceKeepsAMark).
		if mark, err = s.markAgainIfTaken(ctx, c, mark); err != nil {
			return false, err
		}
		ch.marker = mark.Marker
		removed, err := s.narrow(ctx, c, *next)
		narrowed = narrowed || removed
		if err != nil {
			return false, err
		}
		if removed && !next.LastModified.Equal(c.LastModified) {
			// An oldest-first run that read the item's old row before it
			// was removed began before now: the item's new place is past
			// that run's end, so the run does not list it again
			// (docs/design/libraries.md, oldest first).
			next.LastModified = s.movedOn(c)
		}
		// An item that is not lean removes nothing first: its new place is
		// taken once this compare-and-set has answered (see place).
		next.Placing = !c.Lean && !next.Deleted && !next.LastModified.Equal(c.LastModified)
		if s.Hooks.BeforeRecord != nil {
			s.Hooks.BeforeRecord(id)
		}
		decided = true
		applied, err := s.content.Update(ctx, *next)
		if err != nil || !applied {
			decided = err != nil
			return false, err
		}
		ch.next, ch.prev, ch.changed = *next, c, true
		if next.Placing {
			// Answered and fanned out as it stands once placed (by this
			// write, the outbox worker's fence, or a change that came
			// next). Else (a database error, or a change recorded on top
			// and not finished) it stays as recorded, which no fan-out
			// writes: the worker's fence places it and fans it out.
			if placed, err := s.place(ctx, *next); err == nil && !placed.Placing && placed.Pending == nil && !placed.Deleted {
				ch.next = placed
			}
		}
		return true, nil
	})
	if !narrowed && ((err != nil && !decided) || (err == nil && !ch.changed)) {
		_ = s.outbox.Done(ctx, id, ch.marker)
	}
	return ch, err
}

// creatorJoins writes the creator's membership again at version 1, as
// the outbox worker's fence does (see fence): a creation that answered
// 201 with that write failed left it to the worker, whose fence writes it
// only while the item is at version 1, which the item's first change
// moves past. Her library needs nothing here: the creation's mark stays
// until the worker's fan-out, which writes every member's, has run.
// Written at version 1, it changes nothing a later change wrote.
func (s *Service) creatorJoins(ctx context.Context, c Content) error {
	return s.members.Put(ctx, c.ID, Member{PrincipalID: c.CreatedBy, Role: RoleManager}, 1)
}

// movedOn is the lastModified of a change of c: now, and strictly later
// than c's, since the library row's key changes with every update, so the
// old row's delete never hits the new row.
func (s *Service) movedOn(c Content) time.Time {
	lm := s.now()
	if !lm.After(c.LastModified) {
		lm = c.LastModified.Add(time.Millisecond)
	}
	return lm
}

// place takes the place in the libraries of an update recorded with a
// provisional lastModified (c, Placing): a compare-and-set on c's version
// that moves lastModified on to now, which is after the first one
// answered, and so after every read that found the item as it was before
// it. An oldest-first run that listed the item from its old row read it
// before then, so it began before the new place, which is past its end:
// the run does not list the item again. A lastModified taken before the
// first compare-and-set could be before such a run's end, and the
// fan-out's rows there would be listed a second time
// (docs/design/libraries.md, oldest first). The rows cost nothing to
// keep right meanwhile: the old ones no longer agree with the item, and
// none is written at a provisional place (see fanout).
//
// It returns the item as it then stands: placed by this write, or, when
// that does not apply, as read again (placed by the outbox worker's fence
// or by a change that came next, or recorded again on top).
func (s *Service) place(ctx context.Context, c Content) (Content, error) {
	p := s.placedNow(c)
	p.Version++
	applied, err := s.content.Update(ctx, p)
	switch {
	case err != nil:
		return c, err
	case applied:
		return p, nil
	}
	return s.content.GetSerial(ctx, c.ID)
}

// placedNow is c with its place taken now: its lastModified moved on,
// no longer provisional (see place; the fence writes it too).
func (s *Service) placedNow(c Content) Content {
	c.LastModified, c.Placing = s.movedOn(c), false
	return c
}

// markAgainIfTaken marks the item again when a fence may have taken the
// change's mark, and returns the mark to keep; c is the read the change's
// next compare-and-set rests on. The outbox worker may take a mark at any
// time, fence the item and discard the mark; a compare-and-set resting on
// a read from before that fence fails, but one resting on a read after it
// would apply with no mark left for its fan-out. Every fence records in
// the row a time every mark it took was made before (FencedBefore, the
// latest of all fences'), so a mark made at or after it was taken by no
// fence c's read saw: a mark's time is compared with a time the marks'
// own reader compared it with, not with a clock. An earlier mark is
// replaced: the fresh one is made after c was read, so a fence that takes
// it comes after that read and fails the compare-and-set; the old one,
// whose work the fresh one carries, is done. The normal path pays a
// comparison; a change reading a row fenced after its mark pays a mark.
func (s *Service) markAgainIfTaken(ctx context.Context, c Content, mark OutboxEntry) (OutboxEntry, error) {
	if !mark.MarkedAt.Before(c.FencedBefore) {
		return mark, nil
	}
	fresh, err := s.mark(ctx, c.ID)
	if err != nil {
		return mark, err
	}
	_ = s.outbox.Done(ctx, c.ID, mark.Marker)
	return fresh, nil
}

// maxLateMarks bounds how often mark makes a mark again that answered late.
const maxLateMarks = 3

// errMarksLate answers a change whose marks kept answering late.
var errMarksLate = fmt.Errorf("the outbox's marks answered too late: %w", domain.ErrUnavailable)

// mark marks the item (Outbox.Mark). A mark that answers more than the
// outbox grace after its own time (a process paused between stamping it
// and sending it, a write held that long) may have landed in a window the
// outbox's reader had already passed, where no worker lists it
// (docs/design/libraries.md#queues, reading from a moving start): it is
// made again, and the late one done. Both times are this process's clock,
// which stamps the marks; the reader's start rests on the horizon's bound
// on clocks, as it did.
func (s *Service) mark(ctx context.Context, id string) (OutboxEntry, error) {
	for range maxLateMarks {
		m, err := s.outbox.Mark(ctx, id)
		if err != nil || s.cfg.Now().Sub(m.MarkedAt) <= s.cfg.OutboxGrace {
			return m, err
		}
		_ = s.outbox.Done(ctx, id, m.Marker)
	}
	return OutboxEntry{}, errMarksLate
}

// errCreationFenced answers a creation whose insert came too late: the
// outbox worker, finding no item behind its mark, took the id first. The
// item was never made; the client may create it again, and is told so
// (a bare 503 leaves it unsure whether the item exists).
var errCreationFenced = &domain.Error{Kind: domain.ErrUnavailable, Code: "unavailable",
	Message: "The item was not created: its write took longer than the service waits for it, and was set aside. Nothing was kept; create it again."}

// live answers 404 for an item that is gone or was never made.
func live(c Content, err error) error {
	if errors.Is(err, domain.ErrNotFound) || (err == nil && c.Deleted) {
		return errContentNotFound
	}
	return err
}

// finish carries out the share or unshare pending in c (as read: at the
// version that recorded it): the member row and the principal's library,
// at that version, then the pending change is cleared by compare-and-set
// on that version. Anyone may finish anyone's change, as often as it
// likes: the writes carry the change's version as their timestamp, so
// repeating them is harmless and a late one never overwrites a newer
// change (an unshare's removal at v+1 shadows a fan-out of v; a re-share
// at v+2 shadows the removal).
func (s *Service) finish(ctx context.Context, c Content) error {
	_, err := s.finishPending(ctx, c)
	return err
}

// takenBack says why whoever finished a share took it back instead of
// clearing it.
type takenBack int

const (
	notTakenBack takenBack = iota
	// principalDeparted: an account being deleted, or a group closed (see
	// sharedWithDeparted).
	principalDeparted
	// askerLeft: the caller who managed the item only through a group is
	// no longer in it (see outOfTheGroup).
	askerLeft
	// askerSeen: not taken back; its caller was read in the group it
	// names after it was recorded (outOfTheGroup), but the clear's outcome
	// is unknown (the share may still be pending, naming him).
	askerSeen
)

// tookBack reports why a take-back was tried, if it applied; one that
// found the share cleared by another finisher took nothing back, and the
// share stands as recorded
// (TestARefusedShareLeavesNothingAnotherFinisherCleared). One whose
// outcome is unknown (an error) reports its principal departed, which
// stays true whatever became of the share, but no caller out of the
// group: that share may stand, cleared by another finisher, and the
// request answers as its own check says, its take-back finishing what
// is pending first
// (TestARefusedShareLeavesNothingAnotherFinisherCleared).
func tookBack(why takenBack) func(taken bool, err error) (takenBack, error) {
	return func(taken bool, err error) (takenBack, error) {
		if taken || (err != nil && why == principalDeparted) {
			return why, err
		}
		return notTakenBack, err
	}
}

// finishPending is finish, and reports a share taken back, and why: its
// principal is on its way out (an account being deleted, or a group
// closed: sharedWithDeparted), or its caller left the group that let him
// share (outOfTheGroup); see takeBack.
func (s *Service) finishPending(ctx context.Context, c Content) (back takenBack, err error) {
	if c.Pending == nil {
		return notTakenBack, nil
	}
	pc := *c.Pending
	// A share that takes a lean item past LeanMembers ends its lean rows:
	// they are all written again checked (a page reads the item behind
	// each) before the clear records it, so no later change, which
	// finishes this one first, finds a lean row it would not remove.
	// Every finisher decides the same from the same row, so every write
	// at this version says the same.
	crossing := s.crossesLean(c)
	if crossing {
		c.Lean = false
	}
	var errs [2]error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		switch {
		case i == 0 && pc.Role == "":
			errs[i] = s.members.Delete(ctx, c.ID, pc.PrincipalID, c.Version)
		case i == 0:
			errs[i] = s.members.Put(ctx, c.ID, Member{PrincipalID: pc.PrincipalID, Role: pc.Role}, c.Version)
		case pc.Role == "":
			// Share and unshare leave the item's fields alone: its rows
			// are where c says.
			old := entryOf(c, pc.PrincipalID, "")
			errs[i] = s.library.Remove(ctx, pc.PrincipalID, c.ID, &old, c.Version)
		default:
			errs[i] = s.apply(ctx, entryOf(c, pc.PrincipalID, pc.Role), nil)
		}
	})
	if err := errors.Join(errs[:]...); err != nil {
		return notTakenBack, err
	}
	if crossing {
		if err := s.fanout(ctx, c, &c); err != nil {
			return notTakenBack, err
		}
	}
	departed, err := s.sharedWithDeparted(ctx, pc)
	switch {
	case err != nil:
		return notTakenBack, err
	case departed:
		back, err := tookBack(principalDeparted)(s.takeBack(ctx, c, false))
		if err != nil || back == principalDeparted || pc.AskedBy == "" {
			return back, err
		}
		// Not applied: another finisher cleared the share or took it back,
		// its caller out of the group, which the row says
		// (TestAShareTakenBackBeforeItsPrincipalDepartedIsNotAnsweredCreated),
		// or its principal departed, which no record says: the principal
		// is departing, so the share is gone or going, and it answers as
		// one to an unknown principal
		// (TestAShareTakenBackForItsDepartedPrincipalIsNotAnsweredCreated).
		if back, err = s.shareStood(ctx, c, true); err != nil || back == askerLeft {
			return back, err
		}
		return principalDeparted, nil
	}
	left, err := s.outOfTheGroup(ctx, c.ID, pc)
	switch {
	case err != nil:
		return notTakenBack, err
	case left:
		back, err := tookBack(askerLeft)(s.takeBack(ctx, c, true))
		if err != nil || back == askerLeft {
			return back, err
		}
		// Not applied: another finisher cleared the share, vouched for
		// it, or took it back, and the row says which, as for a clear
		// that finds it moved on
		// (TestAShareWhoseOwnTakeBackFoundItTakenBackIsNotAnsweredCreated).
		return s.shareStood(ctx, c, false)
	}
	cleared, err := s.content.ClearPending(ctx, c)
	if err != nil && pc.Role != "" && pc.AskedBy != "" && pc.Through != "" {
		return askerSeen, err // outOfTheGroup read him in the group
	}
	if err != nil || cleared || pc.AskedBy == "" {
		return notTakenBack, err
	}
	// Moved on: another finisher cleared the share or took it back, and
	// the share's request answers as it says
	// (TestAShareTakenBackWhileItsRequestWasSlowIsNotAnsweredCreated).
	return s.shareStood(ctx, c, false)
}

// shareStood tells, for a share pending in c (at the version that
// recorded it, named by its caller) whose clear or vouch found the row
// moved on,
// whether another finisher cleared it (it stood, whatever changed since)
// or took it back because its caller had left the group. A share is
// recorded only on a row with nothing pending, so a take-back of it is
// the write at the next version, which records the share's version
// (TakenBack): the row's record says so, unless a later share's
// take-back replaced it, and then the principal's role as it stands
// does (the share's role: it stands). A take-back for a departing
// principal records nothing: a row moved on with no record of the share
// taken back is read with its principal (departed: already read so), and
// one departing is answered so, its share gone or going
// (TestAShareTakenBackForItsPrincipalAfterItsRequestReadItIsNotAnsweredCreated).
func (s *Service) shareStood(ctx context.Context, c Content, departed bool) (takenBack, error) {
	pc := *c.Pending
	now, err := s.content.GetSerial(ctx, c.ID)
	switch {
	case err != nil:
		return notTakenBack, err
	case now.Version == c.Version:
		return notTakenBack, nil // cleared
	case now.TakenBack < c.Version:
		// Cleared and moved on since, or taken back for its principal's
		// departure, which stays read once it began.
		if !departed {
			departed, err = s.sharedWithDeparted(ctx, pc)
		}
		if err != nil || !departed {
			return notTakenBack, err
		}
		return principalDeparted, nil
	case now.TakenBack == c.Version:
		return askerLeft, nil
	}
	found, err := s.members.Find(ctx, c.ID, []string{pc.PrincipalID})
	if err != nil {
		return notTakenBack, err
	}
	if ownRole(withPending(found, now.Pending, []string{pc.PrincipalID})) == pc.Role {
		return notTakenBack, nil
	}
	return askerLeft, nil
}

// crossesLean reports whether c, a lean item, holds more members than
// its lean rows allow: its pending share ends them for good, and whoever
// finishes it, or writes the row after finishing it, records it not lean.
func (s *Service) crossesLean(c Content) bool { return c.Lean && c.Members > s.cfg.LeanMembers }

// errItemBusy answers a change of an item that lost every round to other
// changes of it (concurrent_change, as an account's or a group's).
var errItemBusy = &domain.Error{Kind: domain.ErrConflict, Code: "concurrent_change",
	Message: "Too many changes of this item at once; try again."}
