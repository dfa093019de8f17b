package domain

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"time"
)

// maxGroupAttempts bounds how often one membership change re-reads its
// group after losing a compare-and-set. Each lost round means another
// change was recorded or finished, so a busy group keeps making progress;
// with fifty joins racing for one group a change may lose a few dozen
// rounds before it is decided, hence a bound well above maxChangeAttempts.
const maxGroupAttempts = 100

// SetMember adds a user to a group with a role, or changes a member's role
// (managers only). added reports a new member; a role that is already the
// member's changes nothing.
//
// Capacity (L7) and the last manager hold because the decision and the
// counts it changes are one compare-and-set of the group row: the counts
// there are exact (every earlier change has been finished before a new one
// is recorded), a new member is recorded only while member_count is below
// max_members, and a demotion only while another manager remains. Two
// concurrent adds of the same user both decide on the same version; one
// compare-and-set wins, and the other, re-reading, finds the user a member.
func (g *Groups) SetMember(ctx context.Context, p Principal, groupID, userID, role string) (m GroupMember, added bool, err error) {
	if p.Anonymous() {
		return GroupMember{}, false, errNoSession
	}
	if role != GroupRoleMember && role != GroupRoleManager {
		return GroupMember{}, false, Invalid("The role is not valid.",
			FieldError{Field: "role", Code: "oneof", Message: "must be one of: member manager"})
	}
	validUser := ValidID(userID, UserIDPrefix)
	userChecked := false // the account exists and is visible (accounts are never deleted)
	err = g.change(ctx, "set", groupID, func(ctx context.Context, gr Group) (*Group, error) {
		var callerRole, targetRole string
		var callerErr, targetErr, userErr error
		parallel(3, func(i int) {
			switch {
			case i == 0:
				callerRole, callerErr = g.role(ctx, gr.ID, p.UserID)
			case i == 1 && validUser:
				targetRole, targetErr = g.role(ctx, gr.ID, userID)
			case i == 2 && validUser && !userChecked:
				userErr = g.visibleUser(ctx, userID)
			}
		})
		switch {
		case callerErr != nil:
			return nil, callerErr
		case callerRole != GroupRoleManager:
			return nil, errForbidden
		case !validUser:
			return nil, errUserNotFound
		case targetErr != nil:
			return nil, targetErr
		}
		next := gr
		next.Pending = &GroupMemberChange{UserID: userID, Role: role}
		if targetRole != "" { // a member already: a role change
			added = false
			switch {
			case targetRole == role:
				return nil, nil
			case role == GroupRoleManager:
				next.ManagerCount++
			case gr.ManagerCount <= 1:
				return nil, errLastManager
			default:
				next.ManagerCount--
			}
			return &next, nil
		}
		if !userChecked {
			if userErr != nil {
				return nil, userErr
			}
			userChecked = true
		}
		if gr.MaxMembers > 0 && gr.MemberCount >= gr.MaxMembers {
			return nil, errGroupFull
		}
		added = true
		next.MemberCount++
		if role == GroupRoleManager {
			next.ManagerCount++
		}
		return &next, nil
	})
	if err != nil {
		return GroupMember{}, false, err
	}
	return GroupMember{UserID: userID, Role: role}, added, nil
}

// RemoveMember takes a user out of a group: a manager may remove anyone,
// a member only themself. The last manager cannot leave (last_manager), so
// a group always has a manager, and so at least one member.
func (g *Groups) RemoveMember(ctx context.Context, p Principal, groupID, userID string) error {
	if p.Anonymous() {
		return errNoSession
	}
	self := p.UserID == userID
	return g.change(ctx, "remove", groupID, func(ctx context.Context, gr Group) (*Group, error) {
		var callerRole, targetRole string
		var callerErr, targetErr error
		parallel(2, func(i int) {
			switch {
			case i == 0 && !self:
				callerRole, callerErr = g.role(ctx, gr.ID, p.UserID)
			case i == 1 && ValidID(userID, UserIDPrefix):
				targetRole, targetErr = g.role(ctx, gr.ID, userID)
			}
		})
		switch {
		case callerErr != nil:
			return nil, callerErr
		case !self && callerRole != GroupRoleManager:
			return nil, errForbidden
		case targetErr != nil:
			return nil, targetErr
		case targetRole == "":
			return nil, errNotGroupMember
		}
		next := gr
		next.Pending = &GroupMemberChange{UserID: userID}
		next.MemberCount--
		if targetRole == GroupRoleManager {
			if gr.ManagerCount <= 1 {
				return nil, errLastManager
			}
			next.ManagerCount--
		}
		return &next, nil
	})
}

// change runs one membership change of a group. It reads the group; if a
// change is pending there, it finishes that first (a crash left it, or it
// is in flight) and reads again. On a group with nothing pending, decide
// looks at the group and the member tables (which then agree with it) and
// returns the group as the change leaves it, with the change as Pending,
// or nil when there is nothing to do, or the error to answer. The result
// is written by compare-and-set on the version read, so a change is never
// made on a state that has since moved, and a refusal is answered only
// once the group is read again at the same version; either way a moved
// group starts the decision over. Then the change is finished: the member
// tables are written and Pending is cleared.
func (g *Groups) change(ctx context.Context, op, groupID string, decide func(ctx context.Context, gr Group) (*Group, error)) error {
	for attempt := 0; attempt < maxGroupAttempts; attempt++ {
		gr, err := g.activeGroup(ctx, groupID)
		if err != nil {
			return err
		}
		if gr.Pending != nil {
			if _, err := g.finish(ctx, op, gr); err != nil {
				return err
			}
			continue
		}
		next, err := decide(ctx, gr)
		var refusal *Error
		if err != nil && !errors.As(err, &refusal) {
			return err // the database failed: there is no decision to check
		}
		if next == nil {
			// A refusal, or nothing to do. decide read the member tables
			// after the group, so they may already show a change recorded
			// since (its rows are written once its compare-and-set is
			// done): answer only if the group has not moved meanwhile, so
			// the answer rests on one state of the group, not two.
			now, rerr := g.activeGroup(ctx, groupID)
			if rerr != nil {
				return rerr
			}
			if now.Version == gr.Version && now.Pending == nil {
				return err
			}
			continue
		}
		next.Version, next.UpdatedAt = gr.Version+1, g.now()
		applied, err := g.groups.Update(ctx, *next)
		if err != nil {
			// Unknown even after the SERIAL read: if the change was
			// recorded, whoever touches the group next finishes it.
			return err
		}
		if !applied {
			if err := sleepCtx(ctx, groupJitter(attempt)); err != nil {
				return err
			}
			continue
		}
		if err := g.hook(op, "cas"); err != nil {
			return err
		}
		_, err = g.finish(ctx, op, *next)
		return err
	}
	return errGroupBusy
}

// finish completes the change pending in gr (as read: at the version that
// recorded it): it writes the member tables, then clears Pending by
// compare-and-set on that version. Anyone may finish anyone's change, as
// often as it likes: the member writes carry the change's version as their
// timestamp, so repeating them is harmless and a late one never overwrites
// a newer change. It reports whether this call cleared the change (false:
// someone else had, after writing the same rows).
func (g *Groups) finish(ctx context.Context, op string, gr Group) (bool, error) {
	if gr.Pending == nil {
		return false, nil
	}
	if err := g.members.Apply(ctx, gr.ID, *gr.Pending, gr.Version); err != nil {
		return false, err
	}
	if err := g.hook(op, "apply"); err != nil {
		return false, err
	}
	next := gr
	next.Pending = nil
	next.Version, next.UpdatedAt = gr.Version+1, g.now()
	return g.groups.Update(ctx, next)
}

// groupJitter is the pause after a lost compare-and-set: random, so racing
// changes spread out, and growing a little with each loss.
func groupJitter(attempt int) time.Duration {
	return time.Duration(1+rand.IntN(5*min(attempt+1, 10))) * time.Millisecond
}

// role reads a member's role, "" when the user is not a member.
func (g *Groups) role(ctx context.Context, groupID, userID string) (string, error) {
	r, err := g.members.Role(ctx, groupID, userID)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return r, err
}

// visibleUser answers errUserNotFound unless the account exists for
// everyone (active or suspended).
func (g *Groups) visibleUser(ctx context.Context, id string) error {
	u, err := g.users.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
		return errUserNotFound
	}
	return err
}

// GroupMemberPage is one page of a group's members.
type GroupMemberPage struct {
	Items []GroupMember
	// Next is the cursor of the next page; empty on the last.
	Next string
}

// ListMembers pages through a group's members, ordered by user id, for
// its members and admins. The group, the caller's membership and the page
// are read at once; a change found pending is finished first, so the page
// agrees with the group's counts.
func (g *Groups) ListMembers(ctx context.Context, p Principal, groupID, cursor string, limit int) (GroupMemberPage, error) {
	if p.Anonymous() {
		return GroupMemberPage{}, errNoSession
	}
	if !ValidID(groupID, GroupIDPrefix) {
		return GroupMemberPage{}, errGroupNotFound
	}
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !ValidID(string(raw), UserIDPrefix) {
			return GroupMemberPage{}, errBadCursor
		}
		after = string(raw)
	}
	var gr Group
	var callerRole string
	var items []GroupMember
	var grErr, roleErr, pageErr error
	read := func(i int) {
		switch i {
		case 0:
			gr, grErr = g.activeGroup(ctx, groupID)
		case 1:
			callerRole, roleErr = g.role(ctx, groupID, p.UserID)
		case 2:
			items, pageErr = g.members.Page(ctx, groupID, after, limit+1)
		}
	}
	parallel(3, read)
	if grErr != nil {
		return GroupMemberPage{}, grErr
	}
	if gr.Pending != nil {
		if _, err := g.finish(ctx, "list", gr); err != nil {
			return GroupMemberPage{}, err
		}
		parallel(2, func(i int) { read(i + 1) })
	}
	if err := errors.Join(roleErr, pageErr); err != nil {
		return GroupMemberPage{}, err
	}
	if callerRole == "" {
		if _, err := g.accounts.RequireAdmin(ctx, p); err != nil {
			return GroupMemberPage{}, err
		}
	}
	page := GroupMemberPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		page.Next = base64.RawURLEncoding.EncodeToString([]byte(page.Items[limit-1].UserID))
	}
	return page, nil
}
