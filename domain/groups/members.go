package groups

import (
	"context"
	"errors"

	"shelf/domain"
)

// maxGroupAttempts bounds how often one membership change re-reads its
// group after losing a compare-and-set. Each lost round means another
// change was recorded or finished, so a busy group keeps making progress;
// with fifty joins racing for one group a change may lose a few dozen
// rounds before it is decided, hence a bound well above the accounts'
// (maxChangeAttempts, 8).
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
//
// A decision that makes someone a manager (an add as manager, or a
// promotion) asks grant first, once, its verdict kept for the change's
// later rounds (docs/design/groups.md, "Who may make a manager"): a
// manager may remove every other member and close the group, so a stolen
// session alone must not make one. A repeat of a grant that landed (the
// member a manager already) decides nothing and asks nothing. The proof
// (a password's hash behind the hasher's line) is asked with no turn at
// the group held: the first decision that grants stops the change, which
// leaves its turn, and the change runs again once the proof answered, so
// the group's other changes never wait in line for it
// (TestAGrantsProofHoldsNoTurnFromTheGroupsOtherChanges).
func (g *Service) SetMember(ctx context.Context, p domain.Principal, groupID, userID, role string, grant GrantCheck) (m Member, added bool, err error) {
	if p.Anonymous() {
		return Member{}, false, domain.ErrNoSession
	}
	if role != RoleMember && role != RoleManager {
		return Member{}, false, domain.Invalid("The role is not valid.",
			domain.FieldError{Field: "role", Code: "oneof", Message: "must be one of: member manager"})
	}
	set := setMember{caller: p.UserID, userID: userID, role: role, validUser: domain.ValidID(userID, domain.UserIDPrefix), grant: grant}
	decide := func(ctx context.Context, gr Group) (*Group, error) { return g.decideSet(ctx, gr, &set) }
	err = g.change(ctx, "set", groupID, mayWrite(p.UserID, false), decide)
	if errors.Is(err, errProveFirst) {
		set.prove(ctx)
		err = g.change(ctx, "set", groupID, mayWrite(p.UserID, false), decide)
	}
	if err != nil {
		return Member{}, false, err
	}
	return Member{UserID: userID, Role: role}, set.added, nil
}

// Promote makes a member of the group its manager, as SetMember would,
// but never adds anyone: a user who is not a member (one who left since
// the caller listed the members) is refused with ErrNotMember. What a
// deletion's hand-over uses (domain/lifecycle): it chooses among the
// members it read, and one who left meanwhile must not be put back. It
// asks no proof: the job acts for an account whose owner proved it when
// asking for its deletion.
func (g *Service) Promote(ctx context.Context, p domain.Principal, groupID, userID string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	set := setMember{caller: p.UserID, userID: userID, role: RoleManager, validUser: domain.ValidID(userID, domain.UserIDPrefix), roleOnly: true, asked: true}
	return g.change(ctx, "set", groupID, mayWrite(p.UserID, false), func(ctx context.Context, gr Group) (*Group, error) {
		return g.decideSet(ctx, gr, &set)
	})
}

// setMember is one SetMember (or Promote) across the rounds of its change.
type setMember struct {
	caller, userID, role string
	validUser            bool
	roleOnly             bool // Promote: a role change only, never an add
	grant                GrantCheck
	asked                bool  // grant was asked (or there is none to ask)
	verdict              error // grant's answer, for every later round
	userChecked          bool  // the account was found visible (checked once: an add of an account deleted since is taken back as it finishes)
	added                bool  // the decision made the user a new member
}

// errProveFirst stops a change whose decision grants the manager role
// before its proof was asked: SetMember asks it with no turn held
// (prove), then runs the change again. Not a refusal (*domain.Error), so
// the change returns it at once, writing nothing.
var errProveFirst = errors.New("groups: the grant's proof is asked first")

// granted answers a decision that makes someone a manager: the proof's
// verdict once asked, errProveFirst before.
func (set *setMember) granted() error {
	if !set.asked {
		return errProveFirst
	}
	return set.verdict
}

// prove asks the grant's proof, at most once a request: its verdict
// answers every later round of the change, so one request counts one
// proof (a code used once, one try against the password's throttle).
func (set *setMember) prove(ctx context.Context) {
	if set.asked {
		return
	}
	set.asked = true
	if set.grant != nil {
		set.verdict = set.grant(ctx)
	}
}

// decideSet decides a SetMember on the group as read: the group with the
// change recorded, nil when the role is already the member's, or the
// refusal. The caller's and the target's roles (and, once, the target's
// account) are read together.
func (g *Service) decideSet(ctx context.Context, gr Group, set *setMember) (*Group, error) {
	var callerRole, targetRole string
	var callerErr, targetErr, userErr error
	domain.Parallel(ctx, 3, func(ctx context.Context, i int) {
		switch {
		case i == 0:
			callerRole, callerErr = g.role(ctx, gr.ID, set.caller)
		case i == 1 && set.validUser:
			targetRole, targetErr = g.role(ctx, gr.ID, set.userID)
		case i == 2 && set.validUser && !set.userChecked:
			userErr = g.visibleUser(ctx, set.userID)
		}
	})
	switch {
	case callerErr != nil:
		return nil, callerErr
	case callerRole != RoleManager:
		return nil, errNotManagerToSet
	case !set.validUser:
		return nil, domain.ErrUserNotFound
	case targetErr != nil:
		return nil, targetErr
	case targetRole == "" && set.roleOnly:
		return nil, ErrNotMember
	}
	next := gr
	next.Pending = &MemberChange{UserID: set.userID, Role: set.role}
	if targetRole != "" { // a member already: a role change
		set.added = false
		switch {
		case targetRole == set.role:
			return nil, nil
		case set.role == RoleManager:
			if err := set.granted(); err != nil {
				return nil, err
			}
			next.ManagerCount++
		case gr.ManagerCount <= 1:
			return nil, ErrLastManager
		default:
			next.ManagerCount--
		}
		return &next, nil
	}
	if !set.userChecked {
		if userErr != nil {
			return nil, userErr
		}
		set.userChecked = true
	}
	if gr.MaxMembers > 0 && gr.MemberCount >= gr.MaxMembers {
		return nil, errGroupFull
	}
	if set.role == RoleManager {
		if err := set.granted(); err != nil {
			return nil, err
		}
		next.ManagerCount++
	}
	set.added = true
	next.MemberCount++
	return &next, nil
}

// GrantCheck proves that the caller may make someone a manager (the
// caller's own proof of owning the account: lifecycle.SetMember); nil
// asks nothing.
type GrantCheck func(ctx context.Context) error

// RemoveMember takes a user out of a group: a manager may remove anyone,
// a member only themself. The last manager cannot leave (last_manager), so
// a group always has a manager, and so at least one member.
func (g *Service) RemoveMember(ctx context.Context, p domain.Principal, groupID, userID string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	self := p.UserID == userID
	return g.change(ctx, "remove", groupID, mayWrite(p.UserID, self), func(ctx context.Context, gr Group) (*Group, error) {
		var callerRole, targetRole string
		var callerErr, targetErr error
		domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
			switch {
			case i == 0 && !self:
				callerRole, callerErr = g.role(ctx, gr.ID, p.UserID)
			case i == 1 && domain.ValidID(userID, domain.UserIDPrefix):
				targetRole, targetErr = g.role(ctx, gr.ID, userID)
			}
		})
		switch {
		case callerErr != nil:
			return nil, callerErr
		case !self && callerRole != RoleManager:
			return nil, errNotManagerToRemove
		case targetErr != nil:
			return nil, targetErr
		case targetRole == "":
			return nil, ErrNotMember
		}
		next := gr
		next.Pending = &MemberChange{UserID: userID}
		next.MemberCount--
		if targetRole == RoleManager {
			if gr.ManagerCount <= 1 {
				return nil, ErrLastManager
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
//
// The changes of one group made by this process take turns (g.changes):
// fifty joins at once through one process are fifty rounds one after the
// other, not fifty Paxos proposers on one partition. Turns are only this
// process's, in the order the changes came, and a change that sees no
// turn pass for cfg.TurnWait goes ahead without one: the compare-and-set
// is what keeps the counts right.
func (g *Service) change(ctx context.Context, op, groupID string, may writer, decide func(ctx context.Context, gr Group) (*Group, error)) error {
	leave, err := g.turn(ctx, groupID, may)
	if err != nil {
		return err
	}
	defer leave()
	return domain.Retry(ctx, maxGroupAttempts, errGroupBusy, func(int) (bool, error) {
		gr, err := g.activeGroup(ctx, groupID)
		if err != nil {
			return false, err
		}
		if gr.Pending != nil {
			_, err := g.finish(ctx, op, gr)
			return false, err
		}
		next, err := decide(ctx, gr)
		var refusal *domain.Error
		if err != nil && !errors.As(err, &refusal) {
			return false, err // the database failed: there is no decision to check
		}
		if next == nil {
			// A refusal, or nothing to do. decide read the member tables
			// after the group, so they may already show a change recorded
			// since (its rows are written once its compare-and-set is
			// done): answer only if the group has not moved meanwhile, so
			// the answer rests on one state of the group, not two.
			now, rerr := g.activeGroup(ctx, groupID)
			if rerr != nil {
				return false, rerr
			}
			if now.Version != gr.Version || now.Pending != nil {
				return false, nil // moved: decide again
			}
			return true, err
		}
		next.Version, next.UpdatedAt = gr.Version+1, g.now()
		entry, err := g.beginChange(ctx, groupID)
		if err != nil {
			return false, err
		}
		applied, err := g.groups.Update(ctx, *next)
		switch {
		case err != nil:
			// Unknown even after the SERIAL read: if the change was
			// recorded, whoever touches the group next finishes it, or
			// the jobs' worker, from its entry.
			return false, err
		case !applied:
			g.endChange(ctx, entry)
			return false, nil
		}
		if err := g.hook(op, "cas"); err != nil {
			return false, err
		}
		_, departed, err := g.finishChange(ctx, op, *next)
		if err == nil {
			g.endChange(ctx, entry)
		}
		if departed {
			// The target's account is being deleted: its deletion may have
			// read the user's groups before this add wrote them, so the
			// add was taken back, and it answers as an add of an unknown
			// user.
			return true, errors.Join(err, domain.ErrUserNotFound)
		}
		return true, err
	})
}

// writer is who makes a change and whether their own role lets them
// write one (nil: a change nobody refuses for its caller's role).
type writer func(ctx context.Context, g *Service, groupID string) bool

// mayWrite is the writer of a change by callerID: a manager's, or, for a
// user leaving (self), a member's.
func mayWrite(callerID string, self bool) writer {
	return func(ctx context.Context, g *Service, groupID string) bool {
		role, err := g.role(ctx, groupID, callerID)
		return err != nil || role == RoleManager || (self && role != "")
	}
}

// turn takes this process's turn at the group for a change (g.changes),
// but not for one its caller's own role refuses while the turn is held:
// a refusal writes nothing, and in line it would hold every change after
// it for its reads, so a stranger sending refused changes of a group,
// which nothing limits, would keep its managers' changes waiting in a
// queue that moves, past their timeout
// (TestAStrangersRefusedChangesTakeNoTurnFromTheManagers). Only a change
// that would wait pays the read of its caller's role (the decision reads
// it again, after the group, and refuses or writes on what it finds).
func (g *Service) turn(ctx context.Context, groupID string, may writer) (leave func(), err error) {
	if may != nil && g.changes.Busy(groupID) && !may(ctx, g, groupID) {
		return func() {}, nil
	}
	return g.changes.Enter(ctx, groupID, g.cfg.TurnWait)
}

// finish completes the change pending in gr (as read: at the version that
// recorded it): it writes the member tables, then clears Pending by
// compare-and-set on that version. Anyone may finish anyone's change, as
// often as it likes: the member writes carry the change's version as their
// timestamp, so repeating them is harmless and a late one never overwrites
// a newer change. It reports whether this call cleared the change (false:
// someone else had, after writing the same rows).
func (g *Service) finish(ctx context.Context, op string, gr Group) (bool, error) {
	cleared, _, err := g.finishChange(ctx, op, gr)
	return cleared, err
}

// finishChange is finish, and reports an add or role change of an account
// being deleted, which is taken back instead of cleared (takeBack), or,
// when it made that account the group's one manager, closes the group
// (closeDeparted).
func (g *Service) finishChange(ctx context.Context, op string, gr Group) (cleared, departed bool, err error) {
	if gr.Pending == nil {
		return false, false, nil
	}
	if err := g.members.Apply(ctx, gr.ID, *gr.Pending, gr.Version); err != nil {
		return false, false, err
	}
	if err := g.hook(op, "apply"); err != nil {
		return false, false, err
	}
	if departed, err := g.grantedToDeparted(ctx, gr); departed || err != nil {
		switch {
		case err != nil:
		case soleManager(gr):
			err = g.closeDeparted(ctx, op, gr)
		default:
			err = g.takeBack(ctx, op, gr)
		}
		return false, departed, err
	}
	next := gr
	next.Pending = nil
	next.Version, next.UpdatedAt = gr.Version+1, g.now()
	cleared, err = g.groups.Update(ctx, next)
	return cleared, false, err
}

// role reads a member's role, "" when the user is not a member.
func (g *Service) role(ctx context.Context, groupID, userID string) (string, error) {
	r, err := g.members.Role(ctx, groupID, userID)
	if errors.Is(err, domain.ErrNotFound) {
		return "", nil
	}
	return r, err
}

// visibleUser answers ErrUserNotFound unless the account exists for
// everyone (active or suspended).
func (g *Service) visibleUser(ctx context.Context, id string) error {
	u, err := g.users.Access(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
		return domain.ErrUserNotFound
	}
	return err
}
