// Package groups is groups with unique names, their members and roles, and
// their capacity (L7 of docs/design/invariants.md): the group row is the one record of
// membership, and every change is recorded there before the member tables
// follow.
package groups

import (
	"context"
	"time"

	"shelf/domain"
)

// The roles of a group member. A group always keeps at least one manager.
const (
	RoleMember  = "member"
	RoleManager = "manager"
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
// whoever touches the group next (see Service.finish).
type Group struct {
	ID          string
	Name        string // as typed
	NameKey     string // unique, see NormalizeName
	DisplayName string
	Description string
	// MaxMembers bounds the members, the creator included; 0: no limit.
	MaxMembers   int
	MemberCount  int
	ManagerCount int
	CreatedBy    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Status is pending while the group is being created, then active;
	// closing, then closed, once someone closes it (BeginClosing, or
	// closeDeparted for a creator being deleted).
	Status domain.Status
	// ClosedAt and ClosedBy say when a closing began and who asked; zero
	// while the group is open. ClosingAttempt tags the attempt whose
	// compare-and-set began it: its index entry is that attempt's own
	// (ClosingEntry), and only the finish of this closing ends it.
	ClosedAt       time.Time
	ClosedBy       string
	ClosingAttempt string
	// Pending is a membership change recorded but perhaps not yet written
	// to the member tables; nil when there is none.
	Pending *MemberChange
	// Version counts changes; every change is a compare-and-set on it, and
	// the member-table writes of a change carry its version as timestamp.
	Version int
}

// MemberChange is one membership change: UserID gets Role, or leaves the
// group when Role is empty.
type MemberChange struct {
	UserID string
	Role   string
}

// Member is one row of a group's member list.
type Member struct {
	UserID string
	Role   string
}

// Store keeps group rows. Every write is a lightweight transaction,
// ambiguous outcomes resolved by a SERIAL read (like accounts.UserStore).
type Store interface {
	// Create inserts a pending group that expires after lease unless
	// activated, and answers the tag of the attempt whose row it is. Each
	// attempt of the insert carries a tag of its own: one sent again after
	// a lost answer leaves the first able to land later, after the row
	// expired, writing a pending row of its own tag.
	Create(ctx context.Context, g Group, lease time.Duration) (tag string, err error)
	// Activate makes the pending group that the attempt tagged tag wrote
	// active and permanent (every column rewritten without TTL). False: no
	// such row is pending (it expired, or a late attempt wrote it again).
	Activate(ctx context.Context, g Group, tag string) (bool, error)
	// Discard deletes a group that is still pending.
	Discard(ctx context.Context, id string) error
	// Get reads a group (ErrNotFound when there is none).
	Get(ctx context.Context, id string) (Group, error)
	// GetSerial reads a group at SERIAL.
	GetSerial(ctx context.Context, id string) (Group, error)
	// Update writes g if the stored version is still g.Version-1.
	Update(ctx context.Context, g Group) (bool, error)
}

// MemberStore keeps the member tables, which are derived from the group
// rows: group -> members, and the reverse index user -> groups.
type MemberStore interface {
	// Apply writes change c of the group to both tables with version as the
	// write timestamp: an older change never overwrites or resurrects over
	// a newer one, and applying a change twice is harmless. A removal
	// deletes the reverse index row first and the member row only once
	// that delete landed: a member row gone means both are (a closing
	// pages the member rows to remove, and its retry must find every row
	// a failed removal left).
	Apply(ctx context.Context, groupID string, c MemberChange, version int) error
	// Role reads a member's role (ErrNotFound when not a member).
	Role(ctx context.Context, groupID, userID string) (string, error)
	// Page returns up to limit members ordered by user id, after the user
	// id after ("" for the first page).
	Page(ctx context.Context, groupID, after string, limit int) ([]Member, error)
	// GroupsOf returns the ids of the user's groups (one partition read).
	GroupsOf(ctx context.Context, userID string) ([]string, error)
	// GroupsAmong returns which of groupIDs the user is a member of (one
	// read by key; nothing is read for none).
	GroupsAmong(ctx context.Context, userID string, groupIDs []string) ([]string, error)
	// GroupsPage returns up to limit of the user's groups with their role,
	// ordered by group id, after the group id after ("" for the first
	// page): one slice of the user's reverse index.
	GroupsPage(ctx context.Context, userID, after string, limit int) ([]MemberOf, error)
}

// Config holds the groups' tunables.
type Config struct {
	// ClaimLease bounds how long a dead creation can block its name.
	ClaimLease time.Duration
	// Now is the clock.
	Now func() time.Time
	// TurnWait is how long a membership change waiting for its turn at
	// the group behind this process's other changes of it
	// (Service.changes) waits for the turn to pass on before it goes ahead
	// without one; 0: changes never wait.
	TurnWait time.Duration
	// Closings is the index of closings in progress (kept and repaired by
	// domain/lifecycle): a group whose creator's account turns out to be
	// deleted as its creation finishes is closed through it
	// (closeDeparted).
	Closings ClosingIndex
	// Changes is the index of membership changes in progress
	// (FinishInterruptedChanges).
	Changes ChangeIndex
}

// DefaultTurnWait is the TurnWait of the api: a change takes a few round
// trips, far under a second, while one stuck on a node that stopped
// answering delays those behind it by no more.
const DefaultTurnWait = time.Second

// Hooks let tests stop an operation after a step, as a crash would:
// the operation returns the hook's error at once, without cleaning up.
type Hooks struct {
	// AfterStep is called with op "create" and steps "claims", "commit"
	// and "activate"; with op "set" or "remove" and step "cas" (the change
	// is recorded in the group row); and, for every op that finishes a
	// change, with step "apply" (the member tables are written, the change
	// not yet cleared); with op "close" and steps "entry", "cas",
	// "members", "closed" and "claim" (BeginClosing, EndClosing; the
	// closing's content steps between them are domain/lifecycle's); and
	// with the finishing op and step "entry" when a finish closes the
	// group of a departed creator (closeDeparted).
	AfterStep func(op, step string) error
}

// Service is creating groups and managing their members.
type Service struct {
	cfg     Config
	admins  Admins
	users   Users
	claimer *domain.Claimer
	groups  Store
	members MemberStore
	log     domain.Logger
	// changes queues this process's membership changes of one group
	// (keyed by its id), so they take turns at its row's compare-and-set
	// instead of racing each other in Paxos (domain.Gate).
	changes domain.Gate
	// Hooks are nil in production.
	Hooks Hooks
}

// Users reads accounts: a member must be one that exists for everyone.
// Its status is all a group checks: the access columns (users.Access).
type Users interface {
	Access(ctx context.Context, id string) (domain.Access, error)
}

// Admins says whether the caller is an admin (admins may list any group's
// members).
type Admins interface {
	// RequireAdmin answers ErrNoSession for no session and ErrDenied for
	// a caller who is not an active admin.
	RequireAdmin(ctx context.Context, p domain.Principal) (domain.Access, error)
}

// New wires the service. Group names are claimed in claims by the same
// protocol as usernames, under cfg.ClaimLease.
func New(cfg Config, admins Admins, users Users, claims domain.ClaimStore, groups Store, members MemberStore, log domain.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg, admins: admins, users: users, claimer: domain.NewClaimer(claims, cfg.ClaimLease, log),
		groups: groups, members: members, log: log}
}

// The answers of the groups. ErrNotMember and ErrLastManager are
// exported: the workflows above the groups (domain/lifecycle) tell them
// apart with errors.Is.
var (
	errGroupNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such group."}
	// ErrNotMember: the user is not a member of the group.
	ErrNotMember = &domain.Error{Kind: domain.ErrNotFound, Code: "not_member", Message: "The user is not a member of this group."}
	errGroupFull = &domain.Error{Kind: domain.ErrConflict, Code: "group_full", Message: "The group has as many members as its maxMembers allows, " +
		"which is set when it is made: a manager must remove a member before another can join."}
	// ErrLastManager: the change would leave the group without a manager.
	ErrLastManager = &domain.Error{Kind: domain.ErrConflict, Code: "last_manager",
		Message: "A group keeps at least one manager: make another member a manager first."}
	errNotManagerToSet    = domain.Denied("Only a manager of this group may add members or change their roles.")
	errNotManagerToRemove = domain.Denied("Only a manager of this group may remove another member; a member may leave it by removing themself.")
	errNotManagerToClose  = domain.Denied("Only a manager of this group or an admin may close it.")
	errGroupBusy          = &domain.Error{Kind: domain.ErrConflict, Code: "concurrent_change",
		Message: "Too many changes of this group at once; try again."}
	errGroupNameTaken = &domain.Error{Kind: domain.ErrConflict, Code: "conflict", Message: "The name is already taken.",
		Fields: []domain.FieldError{{Field: "name", Code: "taken", Message: "is already taken"}}}
	// ErrGroupCreateExpired: the creation took longer than the claim lease,
	// so its name may have passed to someone else. Nothing was kept.
	ErrGroupCreateExpired = &domain.Error{Kind: domain.ErrUnavailable, Code: "create_expired",
		Message: "Creating the group took too long and was undone; try again."}
)

func (g *Service) now() time.Time { return g.cfg.Now().UTC().Truncate(time.Millisecond) }

func (g *Service) hook(op, step string) error {
	if g.Hooks.AfterStep == nil {
		return nil
	}
	return g.Hooks.AfterStep(op, step)
}
