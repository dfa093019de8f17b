package domain

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The roles of a group member. A group always keeps at least one manager.
const (
	GroupRoleMember  = "member"
	GroupRoleManager = "manager"
)

// MaxGroupMembers is the largest maxMembers a group may set.
const MaxGroupMembers = 100000

// Group is a named set of users (L7: never more than MaxMembers of them).
//
// The group row is the one linearizable record of its membership: the
// counts are exact, and every membership change is recorded in it first,
// as Pending, together with the counts it leads to (one compare-and-set on
// Version). The member tables are written after that, and Pending is
// cleared by a second compare-and-set. A change can only be recorded on a
// row with nothing pending, so the member tables never hold more than
// MaxMembers rows, and a change a crash left half-done is finished by
// whoever touches the group next (see Groups.finish).
type Group struct {
	ID          string
	Name        string // as typed
	NameKey     string // unique, see NormalizeGroupName
	DisplayName string
	Description string
	// MaxMembers bounds the members, the creator included; 0: no limit.
	MaxMembers   int
	MemberCount  int
	ManagerCount int
	CreatedBy    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Status is pending while the group is being created, then active.
	Status Status
	// Pending is a membership change recorded but perhaps not yet written
	// to the member tables; nil when there is none.
	Pending *GroupMemberChange
	// Version counts changes; every change is a compare-and-set on it, and
	// the member-table writes of a change carry its version as timestamp.
	Version int
}

// GroupMemberChange is one membership change: UserID gets Role, or leaves the
// group when Role is empty.
type GroupMemberChange struct {
	UserID string
	Role   string
}

// GroupMember is one row of a group's member list.
type GroupMember struct {
	UserID string
	Role   string
}

// GroupStore keeps group rows. Every write is a lightweight transaction,
// ambiguous outcomes resolved by a SERIAL read (like UserStore).
type GroupStore interface {
	// Create inserts a pending group that expires after lease unless
	// activated.
	Create(ctx context.Context, g Group, lease time.Duration) error
	// Activate makes a pending group active and permanent (every column
	// rewritten without TTL). False: it is no longer pending (it expired).
	Activate(ctx context.Context, g Group) (bool, error)
	// Discard deletes a group that is still pending.
	Discard(ctx context.Context, id string) error
	// Get reads a group (ErrNotFound when there is none).
	Get(ctx context.Context, id string) (Group, error)
	// GetSerial reads a group at SERIAL.
	GetSerial(ctx context.Context, id string) (Group, error)
	// Update writes g if the stored version is still g.Version-1.
	Update(ctx context.Context, g Group) (bool, error)
}

// GroupMemberStore keeps the member tables, which are derived from the group
// rows: group -> members, and the reverse index user -> groups.
type GroupMemberStore interface {
	// Apply writes change c of the group to both tables with version as the
	// write timestamp: an older change never overwrites or resurrects over
	// a newer one, and applying a change twice is harmless.
	Apply(ctx context.Context, groupID string, c GroupMemberChange, version int) error
	// Role reads a member's role (ErrNotFound when not a member).
	Role(ctx context.Context, groupID, userID string) (string, error)
	// Page returns up to limit members ordered by user id, after the user
	// id after ("" for the first page).
	Page(ctx context.Context, groupID, after string, limit int) ([]GroupMember, error)
	// GroupsOf returns the ids of the user's groups (one partition read).
	GroupsOf(ctx context.Context, userID string) ([]string, error)
}

// GroupsConfig holds the groups' tunables.
type GroupsConfig struct {
	// ClaimLease bounds how long a dead creation can block its name.
	ClaimLease time.Duration
	// Now is the clock.
	Now func() time.Time
}

// GroupHooks let tests stop an operation after a step, as a crash would:
// the operation returns the hook's error at once, without cleaning up.
type GroupHooks struct {
	// AfterStep is called with op "create" and steps "claims", "commit"
	// and "activate"; with op "set" or "remove" and step "cas" (the change
	// is recorded in the group row); and, for every op that finishes a
	// change, with step "apply" (the member tables are written, the change
	// not yet cleared).
	AfterStep func(op, step string) error
}

// Groups is creating groups and managing their members.
type Groups struct {
	cfg      GroupsConfig
	accounts *Accounts
	claims   ClaimStore
	users    UserStore
	groups   GroupStore
	members  GroupMemberStore
	log      Logger
	// Hooks are nil in production.
	Hooks GroupHooks
}

// NewGroups wires the service; it shares the accounts' claim and user
// stores (group names are claimed through the same ClaimStore).
func NewGroups(cfg GroupsConfig, accounts *Accounts, groups GroupStore, members GroupMemberStore) *Groups {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ClaimLease <= 0 {
		cfg.ClaimLease = accounts.cfg.ClaimLease
	}
	return &Groups{cfg: cfg, accounts: accounts, claims: accounts.claims, users: accounts.users,
		groups: groups, members: members, log: accounts.log}
}

// The answers of the groups.
var (
	errGroupNotFound  = &Error{Kind: ErrNotFound, Code: "not_found", Message: "No such group."}
	errNotGroupMember = &Error{Kind: ErrNotFound, Code: "not_member", Message: "The user is not a member of this group."}
	errGroupFull      = &Error{Kind: ErrConflict, Code: "group_full", Message: "The group has as many members as its maxMembers allows."}
	errLastManager    = &Error{Kind: ErrConflict, Code: "last_manager",
		Message: "A group keeps at least one manager: make another member a manager first."}
	errGroupBusy = &Error{Kind: ErrConflict, Code: "concurrent_change",
		Message: "Too many changes of this group at once; try again."}
	errGroupNameTaken = &Error{Kind: ErrConflict, Code: "conflict", Message: "The name is already taken.",
		Fields: []FieldError{{Field: "name", Code: "taken", Message: "is already taken"}}}
	// ErrGroupCreateExpired: the creation took longer than the claim lease,
	// so its name may have passed to someone else. Nothing was kept.
	ErrGroupCreateExpired = &Error{Kind: ErrUnavailable, Code: "create_expired",
		Message: "Creating the group took too long and was undone; try again."}
)

func (g *Groups) now() time.Time { return g.cfg.Now().UTC().Truncate(time.Millisecond) }

func (g *Groups) hook(op, step string) error {
	if g.Hooks.AfterStep == nil {
		return nil
	}
	return g.Hooks.AfterStep(op, step)
}

// NormalizeGroupName checks a group name by the username rules (3-32
// ASCII letters, digits, '.', '_', '-') and returns it as typed and the key
// it is unique by (lower case). Errors name the field "name".
func NormalizeGroupName(s string) (display, key string, fe *FieldError) {
	display, key, fe = NormalizeUsername(s)
	if fe != nil {
		fe.Field = "name"
	}
	return display, key, fe
}

// normalizeGroupDescription checks a description: at most 1000 characters once
// trimmed, line breaks and tabs allowed, other control characters not.
func normalizeGroupDescription(s string) (string, *FieldError) {
	s = norm.NFC.String(strings.TrimSpace(s))
	if hasControl(s) {
		return "", &FieldError{Field: "description", Code: "invalid_characters", Message: "must not contain control characters"}
	}
	if utf8.RuneCountInString(s) > 1000 {
		return "", &FieldError{Field: "description", Code: "too_long", Message: "must be at most 1000 characters"}
	}
	return s, nil
}

// NewGroupInput is what a group creation asks for.
type NewGroupInput struct {
	Name        string
	DisplayName *string // the name when nil
	Description *string
	MaxMembers  *int // nil: no limit
}

// CreateGroup creates a group with a unique name, its creator its first
// manager. It follows the signup: [claim the name ∥ create the group
// pending, with the creator's membership recorded as its pending change],
// then commit the claim, then activate the group, then finish the
// creator's membership. A creation that dies before activation leaves a
// pending group that expires with the lease: a pending claim expires with
// it, and a committed one is taken over by the next creator, who finds
// its owner's group row gone (claimName). One that dies after activation
// leaves an active group whose creator's membership is finished by the next
// operation on the group.
func (g *Groups) CreateGroup(ctx context.Context, p Principal, in NewGroupInput) (Group, error) {
	if p.Anonymous() {
		return Group{}, errNoSession
	}
	name, nameKey, fe1 := NormalizeGroupName(in.Name)
	display := name
	var fe2, fe3, fe4 *FieldError
	if in.DisplayName != nil {
		display, fe2 = NormalizeDisplayName(*in.DisplayName)
	}
	description := ""
	if in.Description != nil {
		description, fe3 = normalizeGroupDescription(*in.Description)
	}
	maxMembers := 0
	if in.MaxMembers != nil {
		maxMembers = *in.MaxMembers
		if maxMembers < 1 || maxMembers > MaxGroupMembers {
			fe4 = &FieldError{Field: "maxMembers", Code: "range", Message: "must be from 1 to 100000"}
		}
	}
	if err := invalidFields(fe1, fe2, fe3, fe4); err != nil {
		return Group{}, err
	}
	now := g.now()
	gr := Group{
		ID: NewID(GroupIDPrefix), Name: name, NameKey: nameKey, DisplayName: display, Description: description,
		MaxMembers: maxMembers, MemberCount: 1, ManagerCount: 1, CreatedBy: p.UserID,
		CreatedAt: now, UpdatedAt: now, Status: StatusPending, Version: 1,
		Pending: &GroupMemberChange{UserID: p.UserID, Role: GroupRoleManager},
	}

	// Phase 1: claim the name and create the pending group, in parallel.
	var held bool
	var claimErr, createErr error
	parallel(2, func(i int) {
		if i == 0 {
			held, claimErr = g.claimName(ctx, nameKey, gr.ID)
		} else {
			createErr = g.groups.Create(ctx, gr, g.cfg.ClaimLease)
		}
	})
	if err := errors.Join(claimErr, createErr); err != nil || !held {
		g.undoCreate(ctx, held, gr)
		if err != nil {
			return Group{}, err
		}
		return Group{}, errGroupNameTaken
	}
	if err := g.hook("create", "claims"); err != nil {
		return Group{}, err
	}

	// Phase 2: commit the claim.
	ok, err := g.claims.Commit(ctx, KindGroupName, nameKey, gr.ID, gr.ID)
	if err != nil || !ok {
		g.undoCreate(ctx, true, gr)
		if err != nil {
			return Group{}, err
		}
		return Group{}, ErrGroupCreateExpired
	}
	if err := g.hook("create", "commit"); err != nil {
		return Group{}, err
	}

	// Phase 3: activate. From here on the name is the group's.
	gr.Status = StatusActive
	activated, err := g.groups.Activate(ctx, gr)
	if errors.Is(err, ErrNotApplied) {
		g.undoCreate(ctx, true, gr) // read back: definitely not active
		return Group{}, err
	}
	if err != nil {
		// Unknown even after the SERIAL read: keep everything (the group may
		// be active). If it is not, it expires with the lease and its
		// committed claim is then taken over by the next creator.
		return Group{}, err
	}
	if !activated {
		g.undoCreate(ctx, true, gr)
		return Group{}, ErrGroupCreateExpired
	}
	if err := g.hook("create", "activate"); err != nil {
		return Group{}, err
	}

	// Phase 4: write the creator's membership to the member tables.
	if _, err := g.finish(ctx, "create", gr); err != nil {
		return Group{}, err
	}
	gr.Pending = nil
	return gr, nil
}

// claimName takes a group name for a new group (owner and op are both the
// group's id). A committed claim whose group row is gone (a creation that
// died between committing and activating: its pending row expired with the
// lease and can never be activated now) is taken over, the same check
// Accounts.acquire makes against the users table.
func (g *Groups) claimName(ctx context.Context, key, id string) (bool, error) {
	for attempt := 0; attempt < 3; attempt++ {
		c, err := g.claims.Claim(ctx, KindGroupName, key, id, id, g.cfg.ClaimLease)
		if err != nil {
			return false, err
		}
		if c.Owner == id && c.Op == id {
			return true, nil
		}
		if c.State != ClaimCommitted {
			return false, nil // a creation in progress holds it
		}
		_, err = g.groups.GetSerial(ctx, c.Owner)
		switch {
		case errors.Is(err, ErrNotFound):
			ok, err := g.claims.Takeover(ctx, KindGroupName, key, c, id, id, g.cfg.ClaimLease)
			if err != nil {
				return false, err
			}
			if ok {
				return true, nil
			}
			// someone else moved first: look again
		case err != nil:
			return false, err
		default:
			return false, nil // a live group (active, or pending and still creating) has it
		}
	}
	return false, nil
}

// undoCreate releases a failed creation's claim and its pending group, on
// a context of its own: a request that was cancelled still cleans up.
func (g *Groups) undoCreate(ctx context.Context, held bool, gr Group) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.ClaimLease)
	defer cancel()
	if held {
		if err := g.claims.Release(ctx, KindGroupName, gr.NameKey, gr.ID, gr.ID); err != nil {
			g.log.Warn(ctx, "release of a group name failed; its lease will free it", "group", gr.ID, "error", err.Error())
		}
	}
	if err := g.groups.Discard(ctx, gr.ID); err != nil {
		g.log.Warn(ctx, "discarding a pending group failed; it expires with its lease", "group", gr.ID, "error", err.Error())
	}
}

// GetGroup returns an active group; anyone may read it.
func (g *Groups) GetGroup(ctx context.Context, id string) (Group, error) {
	return g.activeGroup(ctx, id)
}

// activeGroup reads an active group, or answers errGroupNotFound.
func (g *Groups) activeGroup(ctx context.Context, id string) (Group, error) {
	if !ValidID(id, GroupIDPrefix) {
		return Group{}, errGroupNotFound
	}
	gr, err := g.groups.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && gr.Status != StatusActive) {
		return Group{}, errGroupNotFound
	}
	return gr, err
}

// MemberRole returns the user's role in the group ("member" or
// "manager"); ErrNotFound when the user is not a member or the group does
// not exist. One read of group_members.
func (g *Groups) MemberRole(ctx context.Context, groupID, userID string) (string, error) {
	if !ValidID(groupID, GroupIDPrefix) || !ValidID(userID, UserIDPrefix) {
		return "", ErrNotFound
	}
	return g.members.Role(ctx, groupID, userID)
}

// GroupIDsOf returns the ids of the groups the user is a member of (one
// read of groups_by_member).
func (g *Groups) GroupIDsOf(ctx context.Context, userID string) ([]string, error) {
	if !ValidID(userID, UserIDPrefix) {
		return []string{}, nil
	}
	return g.members.GroupsOf(ctx, userID)
}

// Exists reports whether an active group with this id exists.
func (g *Groups) Exists(ctx context.Context, id string) (bool, error) {
	_, err := g.activeGroup(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
