// Package library is content items, sharing them with users and groups,
// and the per-principal libraries kept from them: visibility buckets,
// pages (newest or oldest first) whose rows are lean or checked against
// the membership index and the items, the fan-out of every change through
// a durable outbox, and rebuilds (L1-L6 of docs/design/invariants.md).
package library

import (
	"context"
	"time"

	"shelf/domain"
)

// ContentStore keeps the content rows (LWT-managed).
type ContentStore interface {
	// Create inserts c if no row has its id; false when one has (ids are
	// fresh, so that row is the outbox worker's fence: see fence).
	Create(ctx context.Context, c Content) (bool, error)
	Get(ctx context.Context, id string) (Content, error)
	GetSerial(ctx context.Context, id string) (Content, error)
	// Update writes c if the stored version is c.Version-1.
	Update(ctx context.Context, c Content) (bool, error)
	// ClearPending clears the pending membership change, and writes
	// c.Lean (a share that takes the item past its lean rows ends them
	// here), if the stored version is still c.Version (the version that
	// recorded it); false when the row had moved on. It leaves the row's
	// version and write tag as they are: they stay the recording write's.
	ClearPending(ctx context.Context, c Content) (bool, error)
	// TakeBack writes c, the take-back of principalID's change pending at
	// version c.Version-1, if the stored version is still c.Version-1 and
	// that change is still pending there: its clear leaves the version
	// as it was, so the version alone cannot tell a cleared change from
	// one still to finish. With askedBy set, the change must still name
	// askedBy as its caller too: Vouch leaves the version as it was.
	TakeBack(ctx context.Context, c Content, principalID, askedBy string) (bool, error)
	// Vouch records that the share pending in c (as read: at c.Version,
	// naming its caller) passed its caller's check once recorded: it
	// names nobody any more, if the stored version is still c.Version and
	// that share, so named, is still pending there; false otherwise. It
	// leaves the row's version and write tag as they are, as
	// ClearPending does.
	Vouch(ctx context.Context, c Content) (bool, error)
	// States reads how these items stand now, in one read (IN); an item
	// without a row is absent from the answer.
	States(ctx context.Context, ids []string) (map[string]ItemState, error)
}

// ItemState is what a library page checks a row against: the item's own
// row as it stands, not what a fan-out copied.
type ItemState struct {
	ID           string
	Name         string
	Visibility   Visibility
	LastModified time.Time
	Deleted      bool
	// Removing is the principal whose removal (an unshare, or a share
	// taken back) the item records and nobody has finished yet; empty:
	// none. That principal's library may still hold the item's rows.
	Removing string
}

// MemberStore keeps who each item is shared with, written at the item's
// version.
type MemberStore interface {
	Put(ctx context.Context, contentID string, m Member, version int) error
	Delete(ctx context.Context, contentID, principalID string, version int) error
	// Find returns the members among principalIDs.
	Find(ctx context.Context, contentID string, principalIDs []string) ([]Member, error)
	// Groups returns the members that are groups (one slice of the
	// item's partition: its cost follows the groups it is shared with,
	// not its users).
	Groups(ctx context.Context, contentID string) ([]Member, error)
	// Page lists members after principal id `after`, in id order.
	Page(ctx context.Context, contentID, after string, limit int) ([]Member, error)
}

// EntryStore keeps the libraries and their membership index. Every write
// carries the item's version as its timestamp.
type EntryStore interface {
	// Apply writes e into its principal's library: the index entry, then
	// per bucket one single-partition batch (delete prev's row, insert
	// e's; a row whose key is unchanged is only written again). prev is
	// what the library held before, if known.
	Apply(ctx context.Context, e Entry, prev *Entry) error
	// Remove deletes the item from the principal's library at version:
	// the index entry and prev's rows.
	Remove(ctx context.Context, principalID, contentID string, prev *Entry, version int) error
	// Index reads the index entries of these items (one partition, IN).
	Index(ctx context.Context, principalID string, contentIDs []string) (map[string]Entry, error)
	// IndexPage lists a principal's index entries after content id `after`.
	IndexPage(ctx context.Context, principalID, after string, limit int) ([]Entry, error)
	// CountIndex counts a principal's index entries (a job's progress
	// counts what it has to do; never a request's path).
	CountIndex(ctx context.Context, principalID string) (int, error)
	// Slice reads up to limit rows of one bucket in order (newest first:
	// the clustering order; oldest first: reversed), after the cursor's
	// position (nil: from the start).
	Slice(ctx context.Context, principalID, bucket string, order Order, after *Cursor, limit int) ([]Entry, error)
	// DeleteRow deletes one row (a stale duplicate or a ghost) at its version.
	DeleteRow(ctx context.Context, bucket string, e Entry) error
}

// Outbox records items whose libraries may be behind
// (docs/design/libraries.md#queues).
type Outbox interface {
	// Mark records, before a change, that the item's libraries may fall
	// behind; each mark is a record of its own, named by its marker, and
	// made at its own time (MarkedAt: the time Pending compares).
	Mark(ctx context.Context, contentID string) (OutboxEntry, error)
	// Done deletes that one mark (never another mark of the item).
	Done(ctx context.Context, contentID, marker string) error
	// Pending lists up to limit marks made before `before`, oldest window
	// first.
	Pending(ctx context.Context, before time.Time, limit int) ([]OutboxEntry, error)
}

// OutboxEntry is one mark: an item waiting for its fan-out.
type OutboxEntry struct {
	ContentID string
	Marker    string
	MarkedAt  time.Time
}

// GroupDirectory is what content needs to know of groups.
type GroupDirectory interface {
	// MemberRole returns the user's role in the group; ErrNotFound when
	// the user is not a member or the group is not active.
	MemberRole(ctx context.Context, groupID, userID string) (string, error)
	// Standing reads at once whether the group is active and the user's
	// role there ("": none, or userID ""), the group row being the record
	// of membership.
	Standing(ctx context.Context, groupID, userID string) (active bool, role string, err error)
	// GroupsAmong returns which of groupIDs the user is a member of: its
	// cost follows groupIDs, never the user's groups, which anyone who
	// manages a group can add to.
	GroupsAmong(ctx context.Context, userID string, groupIDs []string) ([]string, error)
	// Listed returns which of groupIDs the groups' reverse index lists the
	// user in: one read by key, no group row, so no membership alone (see
	// inGroups, which asks it after GroupsAmong).
	Listed(ctx context.Context, userID string, groupIDs []string) ([]string, error)
	// Exists reports whether an active group has this id: false for one
	// being closed or closed (sharedWithDeparted relies on it).
	Exists(ctx context.Context, id string) (bool, error)
}

// Config holds the content tunables.
type Config struct {
	// SyncFanoutLimit: items with at most this many members are fanned out
	// before a change answers; larger ones finish in the background.
	SyncFanoutLimit int
	// FanoutConcurrency bounds the member libraries written at once.
	FanoutConcurrency int
	// Now is the clock.
	Now func() time.Time
	// ObserveFanout, when set, is told of every finished fan-out: the
	// member libraries it wrote and the time it took (metrics).
	ObserveFanout func(members int, took time.Duration)
	// FanoutWorkers is how many items are fanned out in the background at
	// once (default 4); FanoutQueue how many may wait (default 1000: more
	// are left to the outbox worker).
	FanoutWorkers, FanoutQueue int
	// ObservePool, when set, is told of every change of the background
	// fan-out queue (metrics).
	ObservePool func(PoolEvent)
	// OutboxGrace is how old a mark must be before the outbox worker may
	// take it (default 5 s; DrainOutbox's grace must be no shorter), and
	// how late after its own time a mark may answer before it is made
	// again (see mark). Whether a fence took a change's mark is the
	// fence's record's to say, not a clock's (see markAgainIfTaken).
	OutboxGrace time.Duration
	// LeanMembers: an item keeps lean library rows (shown without reading
	// the item; its changes remove them first, a bounded amount of work)
	// while it has at most this many members (default 100; at most
	// SyncFanoutLimit is sensible, never required).
	LeanMembers int
	// Background runs the work a change leaves for after its answer: the
	// background pool's fan-outs, deleting a mark, deleting stale rows.
	// The server runs each in a goroutine (domain.InGoroutine, the
	// default); tests run it at once, or when they choose.
	Background func(func())
}

// Hooks let tests stop a fan-out part-way, as a crash would.
type Hooks struct {
	// BeforeMember is called before each member library is written (by a
	// fan-out, or by finishing a share); an error stops the write there
	// (the outbox mark stays).
	BeforeMember func(contentID, principalID string) error
	// BeforeRemove is called before a change of a lean item removes its
	// rows from a member's library (narrow): a test holds the change there.
	BeforeRemove func(contentID, principalID string)
	// BeforeRecord is called before a change's compare-and-set is sent:
	// a test holds the change there.
	BeforeRecord func(contentID string)
}

// Service is content, sharing and the libraries kept from it.
type Service struct {
	cfg     Config
	callers Callers
	users   Users
	groups  GroupDirectory
	content ContentStore
	members MemberStore
	library EntryStore
	outbox  Outbox
	log     domain.Logger
	// Hooks are nil in production.
	Hooks Hooks
	// background bounds the cleanups of stale rows running at once (64;
	// a page that finds it full leaves its rows to the next reader).
	background chan struct{}
	// fanouts runs the fan-outs that go on after the answer.
	fanouts *pool
}

// Callers says who is calling.
type Callers interface {
	// Caller is the calling user's account; nil for an anonymous caller,
	// ErrNoSession when the account behind the session is gone.
	Caller(ctx context.Context, p domain.Principal) (*domain.Access, error)
	// RequireAdmin answers ErrNoSession for no session and ErrDenied for
	// a caller who is not an active admin, and is the gate of an admin's
	// power to manage another's item (accessTo).
	RequireAdmin(ctx context.Context, p domain.Principal) (domain.Access, error)
}

// Users reads accounts (a user's library exists while the account is
// visible).
type Users interface {
	// Profile reads an account's public columns (its status among them):
	// all a library needs of it.
	Profile(ctx context.Context, id string) (domain.Profile, error)
}

// Stores are the tables content and libraries are kept in.
type Stores struct {
	Content ContentStore
	Members MemberStore
	Library EntryStore
	Outbox  Outbox
}

// New wires the service.
func New(cfg Config, callers Callers, users Users, groups GroupDirectory, stores Stores, log domain.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FanoutConcurrency <= 0 {
		cfg.FanoutConcurrency = 16
	}
	if cfg.SyncFanoutLimit < 0 {
		cfg.SyncFanoutLimit = 0
	}
	if cfg.FanoutWorkers <= 0 {
		cfg.FanoutWorkers = 4
	}
	if cfg.FanoutQueue <= 0 {
		cfg.FanoutQueue = 1000
	}
	if cfg.OutboxGrace <= 0 {
		cfg.OutboxGrace = DefaultOutboxGrace
	}
	if cfg.LeanMembers <= 0 {
		cfg.LeanMembers = DefaultLeanMembers
	}
	if cfg.Background == nil {
		cfg.Background = domain.InGoroutine
	}
	s := &Service{cfg: cfg, callers: callers, users: users, groups: groups, content: stores.Content,
		members: stores.Members, library: stores.Library, outbox: stores.Outbox, log: log,
		background: make(chan struct{}, 64)}
	s.fanouts = newPool(s, cfg.FanoutWorkers, cfg.FanoutQueue)
	return s
}

// Close stops the background fan-outs: it waits for those under way until
// ctx ends, then stops them. Those that did not finish, and those still
// waiting, keep their outbox marks, so the outbox worker of another
// instance, or of the next to start, finishes them (the server stops this
// process's worker as Close begins): a shutdown loses nothing. It returns
// how many items it left so.
func (s *Service) Close(ctx context.Context) int { return s.fanouts.close(ctx) }

// DefaultLeanMembers is Config.LeanMembers when none is configured.
const DefaultLeanMembers = 100

// DefaultOutboxGrace is the outbox grace when none is configured.
const DefaultOutboxGrace = 5 * time.Second

var errContentNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such content."}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }
