package library

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"shelf/domain"
)

// access is what a caller may do with an item.
type access struct {
	see    bool
	manage bool
	admin  bool
	// refused is why an active admin is not marked admin where managing
	// was needed (RequireAdmin's refusal: a session without a second
	// factor where one is required); nil otherwise.
	refused error
	// own is the role of the caller's own membership, as its pending
	// change leaves it ("": none, or not read: accessTo's shortcuts for an
	// anonymous caller and for seeing an item that is not private skip it).
	own string
	// through is a group of the caller's that manages the item, when the
	// caller's groups were read ("": none found).
	through string
}

// need is what a caller of load wants to know of its access.
type need int

const (
	// seeing: only whether the caller may see the item (a read of it).
	seeing need = iota
	// managing: also whether the caller manages it, or is an admin.
	managing
)

// accessTo works out the caller's access to c: public items are seen by
// everyone, loggedin ones by any session, private ones by members (directly
// or through a group) and active admins; managers manage, directly or
// through a group the caller is in that is the item's manager; an active
// admin is marked admin (managed treats that as managing). When only
// seeing is needed and the item's visibility answers it (public, or
// loggedin with a session), the caller's groups and memberships are not
// read: a read of a shared item costs the session and the item.
func (s *Service) accessTo(ctx context.Context, p domain.Principal, c Content, n need) (access, error) {
	var a access
	if p.Anonymous() {
		a.see = c.Visibility == VisibilityPublic
		return a, nil
	}
	if n == seeing && c.Visibility != VisibilityPrivate {
		a.see = true
		return a, nil
	}
	// The item's groups and the caller's own membership are read at
	// once; the caller's membership of those groups only when the
	// caller's own does not decide (no membership of its own, or a
	// viewer's where a change needs a manager). The owner's change and a
	// direct member's read are then one round trip after the item, not
	// two. The cost follows the groups the item is shared with (its
	// managers' choice), never the caller's groups: anyone who manages a
	// group may add anyone to it.
	var itemGroups, direct []Member
	var groupsErr, directErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			itemGroups, groupsErr = s.members.Groups(ctx, c.ID)
		} else {
			direct, directErr = s.members.Find(ctx, c.ID, []string{p.UserID})
		}
	})
	if err := cmp.Or(groupsErr, directErr); err != nil {
		return a, err
	}
	principals := []string{p.UserID}
	mine := withPending(direct, c.Pending, principals)
	a = grants(mine)
	own := ownRole(mine)
	if candidates := groupCandidates(itemGroups, c.Pending); len(candidates) > 0 && (!a.see || (n == managing && !a.manage)) {
		in, err := s.groups.GroupsAmong(ctx, p.UserID, candidates)
		if err != nil {
			return a, err
		}
		principals = append(principals, in...)
		viaGroups := slices.DeleteFunc(itemGroups, func(m Member) bool { return !slices.Contains(in, m.PrincipalID) })
		found := withPending(append(direct, viaGroups...), c.Pending, principals)
		a = grants(found)
		a.through = managingGroup(found)
	}
	if !a.see || !a.manage {
		caller, err := s.callers.Caller(ctx, p)
		if err != nil {
			return a, err
		}
		if caller != nil && caller.IsAdmin() && caller.Status == domain.StatusActive {
			saw := a.see
			a.admin, a.see = true, true
			if n == managing {
				// Managing acts: an admin's power to, behind RequireAdmin's
				// gate (SHELF_REQUIRE_ADMIN_FACTOR: none for a session
				// made without a second factor). Seeing is not gated.
				_, err := s.callers.RequireAdmin(ctx, p)
				var refusal *domain.Error
				switch {
				case err != nil && !errors.As(err, &refusal):
					return a, err
				case errors.Is(err, domain.ErrDenied):
					// No admin by now (the role removed since the read
					// above): answered as anyone else, in the item's words.
					a.admin, a.see = false, saw
				default:
					a.admin, a.refused = err == nil, err
				}
			}
		}
	}
	if c.Visibility != VisibilityPrivate {
		a.see = true
	}
	a.own = own
	return a, nil
}

// groupCandidates are the groups whose members the item's access may
// come through: its member groups, and a group its pending change names
// (a share not yet written to the member rows).
func groupCandidates(itemGroups []Member, pc *MemberChange) []string {
	out := make([]string, 0, len(itemGroups)+1)
	for _, m := range itemGroups {
		out = append(out, m.PrincipalID)
	}
	if pc != nil && strings.HasPrefix(pc.PrincipalID, domain.GroupIDPrefix) && !slices.Contains(out, pc.PrincipalID) {
		out = append(out, pc.PrincipalID)
	}
	return out
}

// ownRole is the role of the caller's own membership, found alone ("":
// none).
func ownRole(found []Member) string {
	if len(found) == 0 {
		return ""
	}
	return found[0].Role
}

// grants is the access the caller's memberships give: any membership
// sees, a manager's manages.
func grants(found []Member) access {
	var a access
	for _, m := range found {
		a.see = true
		if m.Role == RoleManager {
			a.manage = true
		}
	}
	return a
}

// managingGroup is a group among the caller's memberships found that
// makes the caller a manager ("": none).
func managingGroup(found []Member) string {
	for _, m := range found {
		if m.Role == RoleManager && strings.HasPrefix(m.PrincipalID, domain.GroupIDPrefix) {
			return m.PrincipalID
		}
	}
	return ""
}

// load reads a live item and the caller's access (as much of it as n
// needs); 404 when the caller may not see it.
func (s *Service) load(ctx context.Context, p domain.Principal, id string, n need) (Content, access, error) {
	if !domain.ValidID(id, domain.ContentIDPrefix) {
		return Content{}, access{}, errContentNotFound
	}
	c, err := s.content.Get(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && c.Deleted) {
		return Content{}, access{}, errContentNotFound
	}
	if err != nil {
		return Content{}, access{}, err
	}
	a, err := s.accessTo(ctx, p, c, n)
	if err != nil {
		return Content{}, access{}, err
	}
	if !a.see {
		return Content{}, access{}, errContentNotFound
	}
	return c, a, nil
}

// Get returns an item the caller may see.
func (s *Service) Get(ctx context.Context, p domain.Principal, id string) (Content, error) {
	c, _, err := s.load(ctx, p, id, seeing)
	return c, err
}

// requireManager answers unless the caller may manage the item (its
// managers, directly or through a group, and active admins), and returns
// the caller's check of it, for the change to ask again (caller).
func (s *Service) requireManager(ctx context.Context, p domain.Principal, id string) (*caller, error) {
	c, a, err := s.managed(ctx, p, id)
	if err != nil {
		return nil, err
	}
	cl := &caller{checked: c, throughGroup: throughGroup(a), through: a.through}
	cl.may = func(ctx context.Context, c Content) error {
		a, err := s.manages(ctx, p, c)
		cl.throughGroup, cl.through = throughGroup(a), a.through
		return err
	}
	cl.listed = func(ctx context.Context, group string) (bool, error) {
		in, err := s.groups.Listed(ctx, p.UserID, []string{group})
		return len(in) > 0, err
	}
	return cl, nil
}

// throughGroup reports a right to manage that only a group gives: the
// caller manages the item neither of its own nor as an admin.
func throughGroup(a access) bool { return a.manage && a.own != RoleManager && !a.admin }

// manages is requireManager's check on an item as a change read it (live,
// nothing pending): 404 if the caller may not see it, 403 if it may see
// but not manage it.
func (s *Service) manages(ctx context.Context, p domain.Principal, c Content) (access, error) {
	a, err := s.accessTo(ctx, p, c, managing)
	switch {
	case err != nil:
		return a, err
	case !a.see:
		return a, errContentNotFound
	case !a.manage && !a.admin:
		return a, cmp.Or(a.refused, error(errNotManager))
	}
	return a, nil
}

// caller is a caller's check of an item (may) and the item as it passed
// it (checked). A change decides on the item as it reads it then, and a
// change recorded in between (the caller's own removal, perhaps) may have
// moved it on: the change's compare-and-set is conditioned on the version
// it read, so the check must hold at that version. decide asks may again
// whenever the version differs, so the caller's change never lands on a
// state its check did not see ("check again at the end";
// TestAManagerRemovedMidShareCannotShareHimselfBack). The normal path,
// the same version, reads nothing more: a share or unshare moves the
// version, and its clear leaves the version as it was (withPending
// counted it in the check already).
type caller struct {
	checked Content
	may     func(ctx context.Context, c Content) error
	// throughGroup: the last check passed only through a group the caller
	// is in. The group's membership is no part of the item's version, so
	// a share asks again once it is recorded (heldAfter), and names the
	// caller and the group (through) for whoever finishes it
	// (outOfTheGroup).
	throughGroup bool
	through      string
	// listed reads whether the caller is in a group, in the groups'
	// reverse index alone (Groups.Listed).
	listed func(ctx context.Context, group string) (bool, error)
}

// heldAfter asks the caller's check again once a share is recorded, on c
// (the item as the share found it, before), when only a group made the
// caller a manager: the caller's removal from the group, or the group's
// closing, moves no version of the item, so one that answered while the
// share was decided would otherwise be followed by the share it no
// longer allows. Read after the share's compare-and-set: if the caller
// is still in the group then, any removal comes after the share
// (TestAMemberRemovedFromTheGroupMidShareCannotShareHimselfIn). Passed
// through a group, it is asked once more: a check reads the groups'
// reverse index, then their rows, and a removal recorded before the
// first read and finished between the two passes it; the second reads
// the index after those rows, that group's alone (as inGroups does:
// TestAShareRecordedAfterItsAskersRemovalIsTakenBack,
// TestAShareWhoseFinishFailedChecksItsAskerOnceMore); gone from it, the
// whole check is asked again (another group may make him a manager). A
// nil caller is the system's.
func (cl *caller) heldAfter(ctx context.Context, c Content) error {
	if cl == nil || !cl.throughGroup {
		return nil
	}
	if err := cl.may(ctx, c); err != nil || !cl.throughGroup {
		return err
	}
	if cl.through != "" {
		in, err := cl.listed(ctx, cl.through)
		if err != nil || in {
			return err
		}
	}
	return cl.may(ctx, c)
}

// decide wraps a change's decide with the check; a nil caller is the
// system's change (a closing's drop, a departed creator's), checked by
// whoever asked.
func (cl *caller) decide(ctx context.Context, decide func(Content) (*Content, error)) func(Content) (*Content, error) {
	if cl == nil {
		return decide
	}
	return func(c Content) (*Content, error) {
		if c.Version != cl.checked.Version {
			if err := cl.may(ctx, c); err != nil {
				return nil, err
			}
			cl.checked = c
		}
		return decide(c)
	}
}

// managed reads an item the caller may manage, and the caller's access.
func (s *Service) managed(ctx context.Context, p domain.Principal, id string) (Content, access, error) {
	if p.Anonymous() {
		return Content{}, access{}, domain.ErrNoSession
	}
	c, a, err := s.load(ctx, p, id, managing)
	if err == nil && !a.manage && !a.admin {
		return Content{}, access{}, s.denied(ctx, id, a.refused)
	}
	return c, a, err
}

// denied answers a caller whose access to a live item fell short. The item
// is read again first: a delete that ran between reading the item and
// reading the caller's member row removed that row, and the answer is then
// that the item is gone (404), not that the caller may not (403: refused,
// when set, else ErrDenied).
func (s *Service) denied(ctx context.Context, id string, refused error) error {
	c, err := s.content.Get(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound) || (err == nil && c.Deleted):
		return errContentNotFound
	case err != nil:
		return err
	}
	return cmp.Or(refused, error(errNotManager))
}

// withPending is the members found as the item's pending share or unshare
// leaves them: a recorded change counts from the moment it is recorded,
// before its member row is written (an unshare answered 204 ends access
// even if writing the member row failed).
func withPending(found []Member, pc *MemberChange, principals []string) []Member {
	if pc == nil || !slices.Contains(principals, pc.PrincipalID) {
		return found
	}
	out := make([]Member, 0, len(found)+1)
	for _, m := range found {
		if m.PrincipalID != pc.PrincipalID {
			out = append(out, m)
		}
	}
	if pc.Role != "" {
		out = append(out, Member{PrincipalID: pc.PrincipalID, Role: pc.Role})
	}
	return out
}
