// Package memstore keeps shelf's tables in memory, following the store
// contracts the repository keeps on Cassandra. Its areas, one a file:
//
//	memstore.go       claims and accounts (compare-and-set rows, pending leases)
//	sessions.go       sessions and their by-user index, cell by cell
//	tokens.go         mailed tokens, compare-and-set rows with an expiry
//	attempts.go       throttled attempts: tries and failures per scope, never deleted
//	factors.go        second factors and recovery sets, compare-and-set rows
//	account_audit.go  the accounts' audit log
//	suspensions.go    suspensions (list, lookup, expiry) and moderation history
//	audit.go          the moderation repair's audit: each table's scan
//	groups.go         groups, their members and the by-member index
//	content.go        content, its members, libraries and the outbox marks
//	dayindex.go       the indexes of work in progress, by the day it began
//	deletions.go      the index of account deletions in progress
//	closings.go       the indexes of group closings and membership changes in progress
//	jobs.go           the jobs' rows (compare-and-set on the version)
//	moderation_attempts.go  suspensions and unsuspensions in progress
//	job_queue.go      the queue of jobs no other index finds (rebuilds)
//
// Every write of a claim
// or an account is a compare-and-set of one row, decided when it lands;
// pending rows expire with their lease on a clock the test moves; and a
// fault can hit any call: fail it before it applies, apply it and lose the
// answer, hold it back so it lands later (its condition decided then, as a
// hung node's queued request is), crash the caller there (nothing it
// sends afterwards reaches the store), run out every lease just before it
// (Expire), or stretch it past the leases (Slow). Lost and held answers
// come back as the repository reports them (lostAnswer): a compare-and-
// set's as domain.ErrOutcomeUnknown (with domain.ErrUnavailable), as when
// its read-back could not prove the outcome; a plain write's as
// domain.ErrUnavailable alone. It exists for the fault explorer
// (tests/faults); the database tests run against a real node, and the
// store-contract suites (tests/storecontract, contract_test.go) run on
// both, so a drift from Cassandra that a suite checks fails a test rather
// than an explorer's verdict. Where a store sends several writes at once
// (the repository's all), the fake sends them one after another and stops at
// the first failure: each such place says so.
package memstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/moderation"
)

// Fault is what happens to one store call.
type Fault int

// The faults.
const (
	None Fault = iota
	// FailBefore: the call does not apply and says so (not sent).
	FailBefore
	// LoseAnswer: the call applies; its answer is lost.
	LoseAnswer
	// LandLate: the call answers "unknown" now and applies when Land runs.
	LandLate
	// Crash: the call applies, then the caller's process dies: this and
	// every later call fail without reaching the store.
	Crash
	// Expire: every lease runs out just before the call, which then runs
	// as usual: a replica whose clock is ahead expires a TTL early, or the
	// process stalls (a pause, a hung node) past the lease in mid-protocol.
	// Safety must not rest on clocks: only the lease's liveness may.
	Expire
	// Slow: the call takes longer than the leases and the outbox's grace
	// (expireJump). A read is answered as it stood when the call began; a
	// write applies (its condition decided) only at the call's end. In
	// between the clock moves by expireJump and Meanwhile runs: the background
	// processes (outbox worker, sweeper, repairs) a test lets act while the
	// caller is stuck in the call.
	Slow
)

// expireJump is how far Expire and Slow move the clock: past the leases
// the explorers use (claims and pending rows 30 s, jobs 30 s) and the
// outbox's grace (5 s); not past a token's grace (accounts.TokenGrace, an
// hour), an enrolment's TTL or the repairs' age of a stale entry (ten
// minutes each).
const expireJump = 5 * time.Minute

var faultNames = []string{"none", "fail-before", "lose-answer", "land-late", "crash", "expire", "slow"}

func (f Fault) String() string { return faultNames[f] }

// Faults lists every fault but None.
var Faults = []Fault{FailBefore, LoseAnswer, LandLate, Crash, Expire, Slow}

var (
	errNotSent = fmt.Errorf("memstore: not sent: %w", domain.ErrUnavailable)
	errUnknown = fmt.Errorf("memstore: answer lost: %w: %w", domain.ErrOutcomeUnknown, domain.ErrUnavailable)
	// errLostPlain is a plain write's lost answer (lostAnswer).
	errLostPlain = fmt.Errorf("memstore: answer lost (a plain write): %w", domain.ErrUnavailable)
)

// Store is every store's tables (claims, accounts, sessions, moderation,
// groups, content, the indexes of work in progress, the jobs), one clock
// and the faults of their calls.
type Store struct {
	mu     sync.Mutex
	now    time.Time
	claims map[string]claimRow
	users  map[string]userRow
	// sessions are the sessions and their index (sessions.go).
	sessions sessionTables
	// list, lookup and expiry are moderation's records (Suspensions).
	list, lookup, expiry map[string]cell
	// expiryStart is where the expiry reader starts (nil: no start yet,
	// the whole table), as the repository's queue_progress row: an entry
	// whose end is behind it is never read (Suspensions.Expired).
	expiryStart *time.Time
	// buckets is the suspended list's bucket index, as the repository's:
	// Suspensions.Record writes a bucket's entry once its rows are written,
	// Erase marks it emptied after the list row if the bucket has no row
	// left (two reads, then the mark), Page reads only the buckets it
	// lists, and the repair's audit indexes, prunes and drops too.
	buckets map[string]bucketCell
	// history is the moderation history (Suspensions), by eventKey.
	history map[string]eventCell
	// changes are the accounts' rows each applied Update wrote, in order,
	// for checks.
	changes map[string][]domain.User
	// content is content's tables (Contents).
	content contentTables
	// groups is the groups' tables (Groups, GroupMembers).
	groups groupTables
	// closings is group_closings (Closings, closings.go), made on first use.
	closings map[string]versioned[groups.ClosingEntry]
	// groupChanges is group_changes (GroupChanges, closings.go), made on
	// first use.
	groupChanges map[string]versioned[groups.ChangeEntry]
	// tokens are the mailed tokens (Tokens), by hash.
	tokens map[string]accounts.Token
	// factors are the second factors (Factors), by user; made on first use.
	factors map[string]*factorPartition
	// deletions is the index of account deletions in progress
	// (Deletions), by day, user and attempt.
	deletions map[string]versioned[accounts.DeletionEntry]
	// audit and auditDay are the audit of admin actions (AccountAudit),
	// by account (account_audit) and by day (audit_by_day), each by entry
	// key; made on first use.
	audit, auditDay map[string]domain.AuditEntry
	// auditTags are the tags of account_audit's rows RecordNew wrote, by
	// entry key (its write_id); made on first use.
	auditTags map[string]string
	// auditSeq numbers RecordNew's tags.
	auditSeq int
	// attempts are the throttle's rows (Attempts), made on first use.
	attempts attemptTables
	// jobs are the jobs' rows (Jobs, jobs.go), by id; made on first use.
	jobs map[string]jobs.Job
	// modAttempts is the index of suspensions and unsuspensions in
	// progress (ModerationAttempts); made on first use.
	modAttempts map[string]versioned[moderation.Attempt]
	// jobQueue is the queue of jobs in progress (JobQueue); made on first
	// use.
	jobQueue map[string]versioned[jobs.Entry]
	held     []func()
	calls    int
	// memberRows counts the rows the member tables' reads touched
	// (MemberRows).
	memberRows int
	crashed    bool
	// FaultAt, when set, says what happens to call number n (0 first) of
	// the given name ("claims.claim", "users.update" ...).
	FaultAt func(n int, name string) Fault
	// Meanwhile, when set, runs inside every Slow call, after the clock
	// moved and before the call's end (its store calls are counted as
	// any others, and see no fault but their own).
	Meanwhile func()
	// WatchLean, when set, checks after every call and every held write
	// landing that no lean library row says what its item does not, and
	// records each one that does in LeanWrong (see wrongLeanRows).
	WatchLean bool
	LeanWrong []string
}

type claimRow struct {
	c       domain.Claim
	expires time.Time // zero: never
}

type userRow struct {
	u       domain.User
	expires time.Time
	// tag is the write_id of the create attempt that wrote a pending row
	// (Create answers it, Activate takes only its row); the repository's
	// every other write tags the row anew, "" here.
	tag string
	// hold is the moderation hold's tag and when its cell expires (Hold):
	// no other write touches them.
	hold      string
	holdUntil time.Time
}

// New returns empty tables with the clock at start.
func New(start time.Time) *Store {
	return &Store{now: start, claims: map[string]claimRow{}, users: map[string]userRow{}, sessions: newSessionTables(),
		list: map[string]cell{}, lookup: map[string]cell{}, expiry: map[string]cell{}, content: newContentTables(start), groups: newGroupTables(), buckets: map[string]bucketCell{},
		history: map[string]eventCell{}, changes: map[string][]domain.User{}, tokens: map[string]accounts.Token{},
		deletions: map[string]versioned[accounts.DeletionEntry]{}}
}

// Now is the store's clock (services take it as theirs).
func (s *Store) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the clock: leases run out.
func (s *Store) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// Calls is how many store calls have been made.
func (s *Store) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// MemberRows is how many rows the reads of the member tables
// (content_members, group_members, groups_by_member) have touched: a read
// by key counts its keys, a slice the rows it returned. What a read costs
// the node follows it, where Calls counts round trips alone.
func (s *Store) MemberRows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memberRows
}

// Crashed reports whether a Crash stopped the caller's process: nothing it
// does after that reaches the store, and its client got no answer.
func (s *Store) Crashed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashed
}

// Recover lets calls through again after a Crash (a new process).
func (s *Store) Recover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crashed = false
}

// Land applies every held write, in the order they were sent.
func (s *Store) Land() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, apply := range held {
		s.mu.Lock()
		apply()
		s.watchLean("a held write landing")
		s.mu.Unlock()
	}
}

// call runs one store call under the lock with its fault: apply changes
// the tables and returns the answer.
func (s *Store) call(name string, write bool, apply func() (bool, error)) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if write {
		// A read changes no table: the rows it could make wrong are the
		// writes' (a Slow read's Meanwhile watches its own calls).
		defer s.watchLean(name)
	}
	n := s.calls
	s.calls++
	if s.crashed {
		return false, errNotSent
	}
	f := None
	if s.FaultAt != nil {
		f = s.FaultAt(n, name)
	}
	if !write && (f == LandLate || f == LoseAnswer) {
		f = FailBefore // a read has nothing to land: its answer is just lost
	}
	if f == Slow {
		return s.slow(write, apply)
	}
	switch f {
	case FailBefore:
		return false, errNotSent
	case LoseAnswer:
		_, _ = apply()
		return false, lostAnswer(name)
	case LandLate:
		s.held = append(s.held, func() { _, _ = apply() })
		return false, lostAnswer(name)
	case Crash:
		_, _ = apply()
		s.crashed = true
		return false, errNotSent
	case Expire:
		s.now = s.now.Add(expireJump)
	}
	return apply()
}

// slow runs a Slow call (s.mu held, and held again on return): a read
// answers as it stood at the start, a write applies at the end; between
// them the clock moves by expireJump and Meanwhile runs.
func (s *Store) slow(write bool, apply func() (bool, error)) (bool, error) {
	var found bool
	var err error
	if !write {
		found, err = apply()
	}
	s.now = s.now.Add(expireJump)
	if meanwhile := s.Meanwhile; meanwhile != nil {
		s.mu.Unlock()
		meanwhile()
		s.mu.Lock()
	}
	if s.crashed {
		return false, errNotSent
	}
	if write {
		return apply()
	}
	return found, err
}

func claimID(kind domain.ClaimKind, key string) string { return string(kind) + "/" + key }

// liveClaim returns the claim row unless it expired.
func (s *Store) liveClaim(id string) (claimRow, bool) {
	r, ok := s.claims[id]
	if ok && !r.expires.IsZero() && !s.now.Before(r.expires) {
		delete(s.claims, id)
		return claimRow{}, false
	}
	return r, ok
}

func (s *Store) liveUser(id string) (userRow, bool) {
	r, ok := s.users[id]
	if ok && !r.expires.IsZero() && !s.now.Before(r.expires) {
		delete(s.users, id)
		return userRow{}, false
	}
	return r, ok
}

// Claims is the store as a domain.ClaimStore.
func (s *Store) Claims() domain.ClaimStore { return claims{s} }

type claims struct{ s *Store }

func (c claims) Claim(_ context.Context, kind domain.ClaimKind, key, owner, op string, base int, lease time.Duration) (domain.Claim, error) {
	var out domain.Claim
	_, err := c.s.call("claims.claim", true, func() (bool, error) {
		id := claimID(kind, key)
		if r, ok := c.s.liveClaim(id); ok {
			out = r.c
			return false, nil
		}
		out = domain.Claim{Kind: kind, Key: key, Owner: owner, Op: op, State: domain.ClaimPending, BaseVersion: base, At: c.s.now}
		c.s.claims[id] = claimRow{c: out, expires: c.s.now.Add(lease)}
		return true, nil
	})
	return out, err
}

func (c claims) Commit(_ context.Context, kind domain.ClaimKind, key, owner, op string, base int) (bool, error) {
	return c.s.call("claims.commit", true, func() (bool, error) {
		id := claimID(kind, key)
		r, ok := c.s.liveClaim(id)
		if !ok || r.c.Owner != owner || r.c.Op != op {
			return false, nil
		}
		r.c.State, r.c.BaseVersion, r.c.At, r.expires = domain.ClaimCommitted, base, c.s.now, time.Time{}
		c.s.claims[id] = r
		return true, nil
	})
}

func (c claims) Release(_ context.Context, kind domain.ClaimKind, key, owner, op string) error {
	_, err := c.s.call("claims.release", true, func() (bool, error) {
		id := claimID(kind, key)
		if r, ok := c.s.liveClaim(id); ok && r.c.Owner == owner && r.c.Op == op {
			delete(c.s.claims, id)
			return true, nil
		}
		return false, nil
	})
	return err
}

func (c claims) move(name string, kind domain.ClaimKind, key string, from, to domain.Claim, lease time.Duration) (bool, error) {
	return c.s.call(name, true, func() (bool, error) {
		id := claimID(kind, key)
		r, ok := c.s.liveClaim(id)
		if !ok || r.c.Owner != from.Owner || r.c.Op != from.Op || r.c.State != domain.ClaimCommitted {
			return false, nil
		}
		to.At = c.s.now
		row := claimRow{c: to}
		if lease > 0 {
			row.expires = c.s.now.Add(lease)
		}
		c.s.claims[id] = row
		return true, nil
	})
}

func (c claims) Takeover(_ context.Context, kind domain.ClaimKind, key string, dead domain.Claim, owner, op string, base int, lease time.Duration) (bool, error) {
	to := domain.Claim{Kind: kind, Key: key, Owner: owner, Op: op, State: domain.ClaimPending, BaseVersion: base}
	return c.move("claims.takeover", kind, key, dead, to, lease)
}

func (c claims) Adopt(_ context.Context, kind domain.ClaimKind, key string, old domain.Claim, op string, base int) (bool, error) {
	to := domain.Claim{Kind: kind, Key: key, Owner: old.Owner, Op: op, State: domain.ClaimCommitted, BaseVersion: base}
	return c.move("claims.adopt", kind, key, old, to, 0)
}

func (c claims) Lookup(_ context.Context, kind domain.ClaimKind, key string) (domain.Claim, error) {
	var out domain.Claim
	found, err := c.s.call("claims.lookup", false, func() (bool, error) {
		r, ok := c.s.liveClaim(claimID(kind, key))
		out = r.c
		return ok, nil
	})
	if err == nil && !found {
		return domain.Claim{}, domain.ErrNotFound
	}
	return out, err
}

// Users is the store as the accounts' user store.
func (s *Store) Users() *Users { return &Users{s} }

// Users keeps accounts: every write a compare-and-set of one row.
type Users struct{ s *Store }

// Create inserts a pending account that expires after lease: one attempt
// of the insert, under a tag of its own (a held one lands with its tag,
// as the repository's attempts each carry theirs).
func (u *Users) Create(_ context.Context, user domain.User, lease time.Duration) (string, error) {
	tag := domain.NewAttempt()
	applied, err := u.s.call("users.create", true, func() (bool, error) {
		if _, ok := u.s.liveUser(user.ID); ok {
			return false, nil
		}
		u.s.users[user.ID] = userRow{u: user, expires: u.s.now.Add(lease), tag: tag}
		return true, nil
	})
	if err == nil && !applied {
		return "", errors.New("memstore: users.create: id exists")
	}
	if err != nil {
		return "", err
	}
	return tag, nil
}

// Activate makes the pending account the create attempt tagged tag wrote
// active and permanent.
func (u *Users) Activate(_ context.Context, user domain.User, tag string) (bool, error) {
	return u.s.call("users.activate", true, func() (bool, error) {
		r, ok := u.s.liveUser(user.ID)
		if !ok || r.u.Status != domain.StatusPending || r.tag != tag {
			return false, nil
		}
		u.s.users[user.ID] = userRow{u: user}
		return true, nil
	})
}

// Discard deletes an account that is still pending.
func (u *Users) Discard(_ context.Context, id string) error {
	_, err := u.s.call("users.discard", true, func() (bool, error) {
		if r, ok := u.s.liveUser(id); ok && r.u.Status == domain.StatusPending {
			delete(u.s.users, id)
			return true, nil
		}
		return false, nil
	})
	return err
}

// Get reads an account.
func (u *Users) Get(_ context.Context, id string) (domain.User, error) {
	var out domain.User
	found, err := u.s.call("users.get", false, func() (bool, error) {
		r, ok := u.s.liveUser(id)
		out = r.u
		out.ModerationHeld = r.hold != "" && u.s.now.Before(r.holdUntil)
		out.RecoveryHeld = out.ModerationHeld && domain.IsRecoveryHold(r.hold)
		return ok, nil
	})
	if err == nil && !found {
		return domain.User{}, domain.ErrNotFound
	}
	return out, err
}

// Profile reads the public part of an account.
func (u *Users) Profile(ctx context.Context, id string) (domain.Profile, error) {
	return readView(u, ctx, "users.profile", id, domain.User.Profile)
}

// NodeNow reads the store's clock (the node's).
func (u *Users) NodeNow(_ context.Context) (time.Time, error) {
	var now time.Time
	_, err := u.s.call("system.local.now", false, func() (bool, error) {
		now = u.s.now
		return true, nil
	})
	return now, err
}

// Access reads what an authenticated request checks of an account.
func (u *Users) Access(ctx context.Context, id string) (domain.Access, error) {
	return readView(u, ctx, "users.access", id, domain.User.Access)
}

// Credentials reads what a login checks of an account.
func (u *Users) Credentials(ctx context.Context, id string) (domain.Credentials, error) {
	return readView(u, ctx, "users.credentials", id, domain.User.Credentials)
}

// Shown reads what an account's full view shows.
func (u *Users) Shown(ctx context.Context, id string) (domain.Shown, error) {
	return readView(u, ctx, "users.shown", id, domain.User.Shown)
}

// Claimed reads what a lookup by username or email shows, with the keys.
func (u *Users) Claimed(ctx context.Context, id string) (domain.Claimed, error) {
	return readView(u, ctx, "users.claimed", id, domain.User.Claimed)
}

// SignedIn reads what a login checks once its session is written.
func (u *Users) SignedIn(ctx context.Context, id string) (domain.SignedIn, error) {
	return readView(u, ctx, "users.signed_in", id, domain.User.SignedIn)
}

// Standing reads what moderation shows of an account.
func (u *Users) Standing(ctx context.Context, id string) (domain.Standing, error) {
	return readView(u, ctx, "users.standing", id, domain.User.Standing)
}

// readView reads account id through op and hands back view of it: the
// narrow reads, each the domain's conversion of the whole row.
func readView[V any](u *Users, _ context.Context, op, id string, view func(domain.User) V) (V, error) {
	var out V
	found, err := u.s.call(op, false, func() (bool, error) {
		r, ok := u.s.liveUser(id)
		if ok {
			out = view(r.u)
		}
		return ok, nil
	})
	if err == nil && !found {
		var zero V
		return zero, domain.ErrNotFound
	}
	return out, err
}

// GetSerial is Get: the store is linearizable.
func (u *Users) GetSerial(ctx context.Context, id string) (domain.User, error) { return u.Get(ctx, id) }

// asStored is user as the repository's columns keep it: the last lift's
// suspension without its bucket (the row has no column for it), and a
// suspension written without a username named by the account's (a row
// from before migration 040 reads so).
func asStored(user domain.User) domain.User {
	user.ModerationHeld, user.RecoveryHeld = false, false // read from the hold's cell, never written
	if s := user.Suspension; s != nil && s.Username == "" {
		named := *s
		named.Username = user.Username
		user.Suspension = &named
	}
	if l := user.LastLift; l != nil && l.Suspension.Bucket != "" {
		lift := *l
		lift.Suspension.Bucket = ""
		user.LastLift = &lift
	}
	return user
}

// Update writes user if the stored version is still user.Version-1,
// every column without a TTL: as on Cassandra, a pending account an
// update reaches outlives its lease.
func (u *Users) Update(_ context.Context, user domain.User) (bool, error) {
	return u.s.call("users.update", true, func() (bool, error) {
		r, ok := u.s.liveUser(user.ID)
		if !ok || r.u.Version != user.Version-1 {
			return false, nil
		}
		user = asStored(user)
		u.s.users[user.ID] = userRow{u: user, hold: r.hold, holdUntil: r.holdUntil}
		u.s.changes[user.ID] = append(u.s.changes[user.ID], user)
		return true, nil
	})
}

// Hold holds a visible account's other changes back for d under tag
// (the repository's moderation_hold cell, with its TTL in whole seconds).
func (u *Users) Hold(_ context.Context, id, tag string, d time.Duration) (bool, error) {
	return u.hold("users.hold", id, tag, d, false)
}

// HoldFree is Hold only where no hold lives.
func (u *Users) HoldFree(_ context.Context, id, tag string, d time.Duration) (bool, error) {
	return u.hold("users.hold_free", id, tag, d, true)
}

// hold is Hold, and HoldFree when free.
func (u *Users) hold(name, id, tag string, d time.Duration, free bool) (bool, error) {
	return u.s.call(name, true, func() (bool, error) {
		r, ok := u.s.liveUser(id)
		if !ok || !r.u.Visible() || (free && r.hold != "" && u.s.now.Before(r.holdUntil)) {
			return false, nil
		}
		r.hold, r.holdUntil = tag, u.s.now.Add(max(d.Truncate(time.Second), time.Second))
		u.s.users[id] = r
		return true, nil
	})
}

// Snapshot returns every live claim and account, for invariant checks.
func (s *Store) Snapshot() (claims []domain.Claim, users []domain.User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.claims {
		if r, ok := s.liveClaim(id); ok {
			claims = append(claims, r.c)
		}
	}
	for id := range s.users {
		if r, ok := s.liveUser(id); ok {
			users = append(users, r.u)
		}
	}
	return claims, users
}

// bucketCell is a bucket's entry in the suspended list's index, as the
// repository's row: its emptied cell (a live entry holds false) and that
// cell's timestamp, or the delete that took the row and its timestamp.
type bucketCell struct {
	ts      int64
	emptied bool
	deleted bool
}

// markBucket writes bucket's emptied cell at ts (s.mu held): a later
// write wins; at one time a delete wins, then the greater value (true),
// as the node decides.
func (s *Store) markBucket(bucket string, emptied bool, ts int64) {
	c, ok := s.buckets[bucket]
	if !ok || ts > c.ts || (ts == c.ts && !c.deleted && emptied && !c.emptied) {
		s.buckets[bucket] = bucketCell{ts: ts, emptied: emptied}
	}
}

// dropBucket deletes bucket's entry at ts (s.mu held).
func (s *Store) dropBucket(bucket string, ts int64) {
	if c, ok := s.buckets[bucket]; !ok || ts >= c.ts {
		s.buckets[bucket] = bucketCell{ts: ts, deleted: true}
	}
}

// bucketEntry reads bucket's entry (s.mu held): found, marked emptied,
// and its cell's timestamp.
func (s *Store) bucketEntry(bucket string) (found, emptied bool, marked int64) {
	c, ok := s.buckets[bucket]
	if !ok || c.deleted {
		return false, false, 0
	}
	return true, c.emptied, c.ts
}

// indexed reports whether bucket is listed by the index (s.mu held).
func (s *Store) indexed(bucket string) bool {
	found, emptied, _ := s.bucketEntry(bucket)
	return found && !emptied
}

// bucketHasRows reports whether a live list row is in bucket (s.mu held).
func (s *Store) bucketHasRows(bucket string) bool {
	for _, r := range live(s.list) {
		if r.Bucket == bucket {
			return true
		}
	}
	return false
}

// stamp is the time a write the node timestamps itself is stamped with
// (s.mu held): the clock plus a microsecond per call made so far, so that
// of two calls made in turn the later stamps later, as a running clock
// would (this one stands still between Advances).
func (s *Store) stamp() int64 { return s.now.UnixMicro() + int64(s.calls) }

// lostAnswer is the error of a write whose answer was lost, as the
// repository reports it: for a compare-and-set an unknown outcome (the
// repository reads the row back and reports that when it cannot tell:
// DB.exec), for a plain write "unavailable" alone (dbErr: its timeout
// says nothing of whether it applied, and the service must not take it
// for "not applied" either).
func lostAnswer(name string) error {
	table, op, _ := strings.Cut(name, ".")
	switch {
	case table == "claims" || table == "factors" || table == "jobs" || table == "tokens",
		table == "account_audit" && op == "claim",
		(table == "users" || table == "groups") && (op == "create" || op == "activate" || op == "update" || op == "discard"),
		table == "content" && (op == "create" || op == "update" || op == "clear"):
		return errUnknown
	}
	return errLostPlain
}
