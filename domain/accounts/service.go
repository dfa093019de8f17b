// Package accounts is signup (a username and an email, both unique), login
// by either (with a second factor where the account has one: an
// authenticator app or a passkey, or a recovery code), sessions, the mailed
// tokens (verification, reset, the revert links of an email change and of
// a new factor), account changes, the accounts' steps of a deletion, the
// throttle of password guesses and of mail, the searches and the admin
// role. It keeps U1-U11 of docs/design/invariants.md with the kernel's
// claimer, compare-and-sets on the account row's version, and its stores
// (repository), which settle every ambiguous outcome (U5) and write the
// LWT-managed rows only by lightweight transactions (U6).
package accounts

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"shelf/domain"
)

// UserStore keeps accounts. Every write is a lightweight transaction (the
// rows are LWT-managed), ambiguous outcomes resolved by a SERIAL read.
type UserStore interface {
	// Create inserts a pending account that expires after lease unless
	// activated, and answers the tag of the attempt whose row it is. Each
	// attempt of the insert carries a tag of its own: one sent again after
	// a lost answer leaves the first able to land later, after the row
	// expired and another signup took the names over.
	Create(ctx context.Context, u domain.User, lease time.Duration) (tag string, err error)
	// Activate makes the pending account the attempt tagged tag wrote
	// active and permanent (every column rewritten without TTL). False:
	// no such row is pending (it expired, or a late attempt wrote it
	// again).
	Activate(ctx context.Context, u domain.User, tag string) (bool, error)
	// Discard deletes an account that is still pending.
	Discard(ctx context.Context, id string) error
	// Get reads an account (ErrNotFound when there is none).
	Get(ctx context.Context, id string) (domain.User, error)
	// Profile reads what a stranger sees of an account: its id, username,
	// display name, status and creation time, and no other column (no
	// hash, no email, nothing pending); ErrNotFound when there is none.
	Profile(ctx context.Context, id string) (domain.Profile, error)
	// Access, Credentials, Shown, Claimed and SignedIn read the columns of one use
	// each (domain.Access ...) and no other; ErrNotFound when there is no
	// account. What they answer is no User: no write takes it.
	Access(ctx context.Context, id string) (domain.Access, error)
	Credentials(ctx context.Context, id string) (domain.Credentials, error)
	Shown(ctx context.Context, id string) (domain.Shown, error)
	Claimed(ctx context.Context, id string) (domain.Claimed, error)
	SignedIn(ctx context.Context, id string) (domain.SignedIn, error)
	// GetSerial reads an account at SERIAL: the latest committed state,
	// finishing any transaction in flight.
	GetSerial(ctx context.Context, id string) (domain.User, error)
	// Update writes u if the stored version is still u.Version-1: every
	// column, so u must have been read whole (Get, GetSerial).
	Update(ctx context.Context, u domain.User) (bool, error)
	// Hold holds the visible account's other changes back for d under
	// attempt tag (domain.User.ModerationHeld): a compare-and-set on no
	// version, which no change of the account stands in the way of. An
	// admin's deletion writes it after a lost round, as a suspension does.
	Hold(ctx context.Context, id, tag string, d time.Duration) (bool, error)
	// HoldFree is Hold only where no hold lives (an admin's, or another
	// recovery's): a recovery's hold, which must never take the place of
	// an admin's, since a recovery gives way to an admin's hold alone
	// (domain.User.RecoveryHeld).
	HoldFree(ctx context.Context, id, tag string, d time.Duration) (bool, error)
	// NodeNow reads the clock of the store's node: a suspension's end is
	// judged by it too (blocked), as the sweeper judges it.
	NodeNow(ctx context.Context) (time.Time, error)
}

// PasswordHasher hashes and checks passwords (argon2id in production).
type PasswordHasher interface {
	Hash(ctx context.Context, password string) (string, error)
	// Verify reports a match and whether the stored hash should be renewed.
	Verify(ctx context.Context, password, phc string) (ok, rehash bool, err error)
	// Burn spends one verification's work: an unknown login must cost
	// what a wrong password costs. It fails, as Verify does, when ctx
	// ends before the work could start, so that an unknown login is then
	// answered as a known one is.
	Burn(ctx context.Context, password string) error
}

// SessionStore keeps sessions, expiring them with their TTL.
type SessionStore interface {
	// Create writes the user's index entry, then the session.
	Create(ctx context.Context, s domain.Session) error
	// Get returns a live session by token hash (ErrNotFound otherwise).
	Get(ctx context.Context, tokenHash string) (domain.Session, error)
	// GetMany returns the live sessions among the token hashes, by hash
	// (one read); the others are simply absent.
	GetMany(ctx context.Context, tokenHashes []string) (map[string]domain.Session, error)
	// Entries lists the user's index entries, in no order: token hash,
	// creation (zero for an entry from before the index kept it: entriesOf
	// sorts such an entry by its expiry less the TTL), expiry and write
	// timestamp. An entry may outlive its session (a revocation that
	// stopped between the two deletes) or precede it (a login in flight).
	Entries(ctx context.Context, userID string) ([]domain.Session, error)
	// Newest reads up to limit of the user's index entries of sessions
	// opened at the password epoch, newest first (creation, then id,
	// descending), after before when it is set: one slice, however many
	// sessions the user has. Entries as Entries', with their epoch.
	Newest(ctx context.Context, userID string, epoch int, before *SessionKey, limit int) ([]domain.Session, error)
	// Entry reads the user's index entry of the session whose public id
	// (domain.SessionID) is sessionID, by key; domain.ErrNotFound when
	// there is none.
	Entry(ctx context.Context, userID, sessionID string) (domain.Session, error)
	// Touch records that s was seen at seen: its last_seen alone, at
	// write timestamp seen, so a later sighting always wins; it never
	// makes a revoked session work or listed again.
	Touch(ctx context.Context, s domain.Session, seen time.Time) error
	// Delete revokes one session: the session, then its index entries.
	Delete(ctx context.Context, s domain.Session) error
	// DeleteAll revokes every session of the user, except keep ("" for none).
	DeleteAll(ctx context.Context, userID, keep string) error
}

// Config holds the accounts' tunables.
type Config struct {
	// ClaimLease bounds how long a dead signup can block its names (U4).
	ClaimLease time.Duration
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration
	// RequireAdminFactor: RequireAdmin lets through only sessions whose
	// login gave a second factor (SHELF_REQUIRE_ADMIN_FACTOR).
	RequireAdminFactor bool
	// SeenInterval is how stale a session's last-seen time may get: a
	// request records it when it is at least this old (0: every request).
	SeenInterval time.Duration
	// Now is the clock (tests move it).
	Now func() time.Time
	// ClaimYield, when set, replaces domain.DefaultYield: how long a
	// signup or rename that holds the username waits for an email that
	// a claimant in flight holds pending.
	ClaimYield *domain.Yield
	// Background runs the work a request leaves for after its answer
	// (mail, recording when a session was seen): the server runs each in
	// a goroutine (domain.InGoroutine, the default); tests run it at
	// once, or when they choose.
	Background func(func())

	// What the service works with besides its stores, each given here,
	// once; the zero value of each leaves its feature off (tests of other
	// protocols, tools).

	// Mail mails tokens: verification, resets, notices (off: no mail,
	// and the token routes answer 503).
	Mail Mail
	// Passwords are the checks of new passwords beyond their length and
	// the identifiers.
	Passwords PasswordChecks
	// Audit keeps the audit of admin actions (nil: the entries stay in
	// the account rows, written nowhere else).
	Audit AuditLog
	// Intents records each round of an admin's change of another
	// account before its compare-and-set, for the sweeper to finish
	// (nil: a round whose process dies after it is in the audit of every
	// account only once that account's audit is read or an admin acts on
	// it again).
	Intents Intents
	// Throttle limits password guesses and, with its store, mail to one
	// address (Mail.PerAddress).
	Throttle Throttle
	// Search finds accounts by part of a name (nil: a search answers that
	// it cannot).
	Search UserSearch
	// Factors and TOTP are the second factors (nil: off); Passkeys are
	// WebAuthn's, beside them (nil: off).
	Factors  FactorStore
	TOTP     TOTP
	Passkeys Passkeys
	// FactorRows are the factors' rows whatever the setting, for a
	// deletion's job and a revert to remove those written while factors
	// were on (nil: Factors).
	FactorRows FactorStore
}

// Hooks let tests stop an operation between its steps, as a crash would:
// a hook that returns an error makes the operation return it at once,
// without cleaning up.
type Hooks struct {
	AfterClaims func() error
	AfterCommit func() error
}

// step calls the hook of a creation step (domain.Creation.Step).
func (h Hooks) step(name string) error {
	switch {
	case name == "claims" && h.AfterClaims != nil:
		return h.AfterClaims()
	case name == "commit" && h.AfterCommit != nil:
		return h.AfterCommit()
	}
	return nil
}

// Service is signup, login, sessions and account changes.
type Service struct {
	cfg      Config
	claimer  *domain.Claimer
	users    UserStore
	sessions SessionStore
	hasher   PasswordHasher
	log      domain.Logger
	// seen records sightings of sessions off the requests' path.
	seen *sightings
	// afterMu guards afterRunning, the work requests left for after their
	// answers (background) still running, and afterIdle, closed when it
	// reaches none while Close waits (a WaitGroup would panic on work
	// begun beside a Close, by a worker still stopping).
	afterMu      sync.Mutex
	afterRunning int
	afterIdle    chan struct{}
	// mail, passwords, audit, throttle, search, factors, totp and
	// passkeys are Config's; mailJobs bounds the mail jobs running.
	mail     Mail
	mailJobs chan struct{}
	// sweeps runs the clean-ups a change of an account's sessions leaves
	// (sweepSessions, dropEnrolments): apart from the mail jobs, one at
	// a time per account.
	sweeps    *sweeper
	passwords PasswordChecks
	audit     AuditLog
	throttle  Throttle
	search    UserSearch
	factors   FactorStore
	totp      TOTP
	passkeys  Passkeys
	// Hooks are nil in production.
	Hooks Hooks
}

// New wires the service.
func New(cfg Config, claims domain.ClaimStore, users UserStore, sessions SessionStore, hasher PasswordHasher, log domain.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Background == nil {
		cfg.Background = domain.InGoroutine
	}
	claimer := domain.NewClaimer(claims, cfg.ClaimLease, log).WithClock(cfg.Now)
	if cfg.ClaimYield != nil {
		claimer = claimer.WithYield(*cfg.ClaimYield)
	}
	audit := cfg.Audit
	if audit == nil {
		audit = noAudit{}
	}
	return &Service{cfg: cfg, claimer: claimer, users: users, sessions: sessions, hasher: lineUp(hasher), log: log,
		seen: newSightings(), mailJobs: make(chan struct{}, maxMailJobs), sweeps: newSweeper(),
		mail: cfg.Mail, passwords: cfg.Passwords, audit: audit, throttle: cfg.Throttle, search: cfg.Search,
		factors: cfg.Factors, totp: cfg.TOTP, passkeys: cfg.Passkeys}
}

// holders tells the claimer whether the account behind a committed claim
// still exists, and whether it holds the key now (holds.key: its own, a
// new email it asked for, a replaced one held for its revert link).
type holders struct{ a *Service }

// maxFenceRounds bounds how often Holder reads an account again after
// its fence lost to another write of the account.
const maxFenceRounds = 3

// Holder answers for the claimer. An account whose row still names the
// key in a hold that has ended (a change pending past its link's life, a
// recovery address past its revert link's, a username left past its
// hold) is fenced first: a
// compare-and-set on its version drops the ended holds, so that a write
// of the account that read the hold while it lasted (a slow revert, a
// confirmation, a change back to the address held) can no longer apply.
// Only once the fence applied does it answer "does not hold", with the
// version past the fence; a fence that lost to another write of the
// account reads it again (maxFenceRounds, then ErrBusy). Clocks decide
// when a hold ends, never who holds the key (U1). A fence whose outcome is
// unknown is an error: nothing is taken on a guess.
func (h holders) Holder(ctx context.Context, kind domain.ClaimKind, key, owner string) (exists, holds bool, version int, err error) {
	for range maxFenceRounds {
		u, err := h.a.users.GetSerial(ctx, owner)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && u.Status == domain.StatusDeleted) {
			// The holder's signup died after committing: its pending account
			// expired with the lease and can never be activated now. Or the
			// account is deleted, for good: its names are free (an account
			// still deleting holds them, so nobody gets them before).
			return false, false, 0, nil
		}
		if err != nil {
			return false, false, 0, err
		}
		rules := h.a.holdsAt(h.a.cfg.Now())
		if rules.key(u, kind, key) {
			return true, true, u.Version, nil
		}
		if !names(u, kind, key) {
			return true, false, u.Version, nil
		}
		fenced, _ := rules.live(u)
		fenced.Version, fenced.UpdatedAt = u.Version+1, h.a.now()
		applied, err := h.a.users.Update(ctx, fenced)
		if err != nil {
			return false, false, 0, err
		}
		if applied {
			// The fence dropped every hold that had ended, not only the
			// one named key is in: the others go back now, or nothing
			// would name them (TestAFenceForOneEndedHoldLeavesNoClaimOfTheOthers);
			// key is the claimer's to take over.
			others := slices.DeleteFunc(named(u), func(k domain.Key) bool { return k.Kind == kind && k.Key == key })
			h.a.releaseUnnamed(ctx, others, owner, fenced)
			return true, false, fenced.Version, nil
		}
		// Another write of the account came first: look again.
	}
	return false, false, 0, domain.ErrBusy
}

// FenceOwner moves the account past version with nothing else changed,
// if it is still at version: a change that read it there (a rename or a
// change of address stopped after committing its keys) can never apply
// after it (domain.OwnerFence).
func (h holders) FenceOwner(ctx context.Context, owner string, version int) error {
	u, err := h.a.users.GetSerial(ctx, owner)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil
	case err != nil:
		return err
	case u.Version != version:
		return nil
	}
	u.Version++
	_, err = h.a.users.Update(ctx, u)
	return err
}

// now is the clock at the millisecond the API shows.
func (a *Service) now() time.Time { return a.cfg.Now().UTC().Truncate(time.Millisecond) }

// maxChangeAttempts bounds the retries of a change that lost a race with
// another change of the same account.
const maxChangeAttempts = 8

// background runs job after the answer (Config.Background), counted for
// Close.
func (a *Service) background(job func()) {
	a.afterMu.Lock()
	a.afterRunning++
	a.afterMu.Unlock()
	a.cfg.Background(func() {
		defer func() {
			a.afterMu.Lock()
			defer a.afterMu.Unlock()
			if a.afterRunning--; a.afterRunning == 0 && a.afterIdle != nil {
				close(a.afterIdle)
				a.afterIdle = nil
			}
		}()
		job()
	})
}

// Close waits, until ctx ends, for the work requests left for after their
// answers (mail, the notices among them, and sightings of sessions): a
// process that stops once its requests drained would otherwise end it
// part-way, and nothing records a mail to send it again. It says whether
// all of it finished. The server calls it once no request is left.
func (a *Service) Close(ctx context.Context) (finished bool) {
	a.afterMu.Lock()
	if a.afterRunning == 0 {
		a.afterMu.Unlock()
		return true
	}
	if a.afterIdle == nil {
		a.afterIdle = make(chan struct{})
	}
	idle := a.afterIdle
	a.afterMu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}
