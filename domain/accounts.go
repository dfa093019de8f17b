package domain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// UserStore keeps accounts. Every write is a lightweight transaction (the
// rows are LWT-managed), ambiguous outcomes resolved by a SERIAL read.
type UserStore interface {
	// Create inserts a pending account that expires after lease unless
	// activated.
	Create(ctx context.Context, u User, lease time.Duration) error
	// Activate makes a pending account active and permanent (every column
	// rewritten without TTL). False: it is no longer pending (it expired).
	Activate(ctx context.Context, u User) (bool, error)
	// Discard deletes an account that is still pending.
	Discard(ctx context.Context, id string) error
	// Get reads an account (ErrNotFound when there is none).
	Get(ctx context.Context, id string) (User, error)
	// GetSerial reads an account at SERIAL: the latest committed state,
	// finishing any transaction in flight.
	GetSerial(ctx context.Context, id string) (User, error)
	// Update writes u if the stored version is still u.Version-1.
	Update(ctx context.Context, u User) (bool, error)
}

// PasswordHasher hashes and checks passwords (argon2id in production).
type PasswordHasher interface {
	Hash(ctx context.Context, password string) (string, error)
	// Verify reports a match and whether the stored hash should be renewed.
	Verify(ctx context.Context, password, phc string) (ok, rehash bool, err error)
	// Burn spends one verification's work and returns false: an unknown
	// login must cost what a wrong password costs.
	Burn(ctx context.Context, password string) bool
}

// Logger is the little the domain says outside its answers.
type Logger interface {
	Warn(ctx context.Context, msg string, kv ...string)
}

// AccountsConfig holds the accounts' tunables.
type AccountsConfig struct {
	// ClaimLease bounds how long a dead signup can block its names (U4).
	ClaimLease time.Duration
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration
	// Now is the clock (tests move it).
	Now func() time.Time
}

// Hooks let tests stop an operation between its steps, as a crash would:
// a hook that returns an error makes the operation return it at once,
// without cleaning up.
type Hooks struct {
	AfterClaims func() error
	AfterCommit func() error
}

// Accounts is signup, login, sessions and account changes.
type Accounts struct {
	cfg      AccountsConfig
	claims   ClaimStore
	users    UserStore
	sessions SessionStore
	hasher   PasswordHasher
	log      Logger
	// Hooks are nil in production.
	Hooks Hooks
}

// NewAccounts wires the service.
func NewAccounts(cfg AccountsConfig, claims ClaimStore, users UserStore, sessions SessionStore, hasher PasswordHasher, log Logger) *Accounts {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Accounts{cfg: cfg, claims: claims, users: users, sessions: sessions, hasher: hasher, log: log}
}

// SignupInput is what a signup asks for.
type SignupInput struct {
	Username    string
	Email       string
	Password    string
	DisplayName string // optional; the username when empty
}

// ErrSignupExpired: the signup took longer than the claim lease, so its
// claims may have passed to someone else. Nothing was kept; try again.
var ErrSignupExpired = &Error{Kind: ErrUnavailable, Code: "signup_expired",
	Message: "The signup took too long and was undone; try again."}

// Signup creates an account with a unique username and email (U1-U4):
// [claim username ∥ claim email ∥ create pending account], then
// [commit both claims], then activate the account. Claims are committed
// before the account becomes active, so an active account never holds a
// name whose claim can still expire; a signup that dies before activation
// leaves a pending account that expires with the lease, and its claims are
// then free: pending ones expire, committed ones are taken over.
func (a *Accounts) Signup(ctx context.Context, in SignupInput) (User, error) {
	username, usernameKey, fe1 := NormalizeUsername(in.Username)
	email, emailKey, fe2 := NormalizeEmail(in.Email)
	display := username
	var fe3 *FieldError
	if in.DisplayName != "" {
		display, fe3 = NormalizeDisplayName(in.DisplayName)
	}
	fe4 := CheckPassword("password", in.Password, usernameKey, emailKey)
	if err := invalidFields(fe1, fe2, fe3, fe4); err != nil {
		return User{}, err
	}
	hash, err := a.hasher.Hash(ctx, in.Password)
	if err != nil {
		return User{}, fmt.Errorf("hash password: %w", err)
	}
	now := a.cfg.Now().UTC().Truncate(time.Millisecond)
	u := User{
		ID: NewID(UserIDPrefix), Username: username, UsernameKey: usernameKey,
		Email: email, EmailKey: emailKey, DisplayName: display, PasswordHash: hash,
		Status: StatusPending, CreatedAt: now, UpdatedAt: now, Version: 1,
	}
	op := u.ID // a signup is the account's first operation
	keys := []keyClaim{{KindUsername, usernameKey, "username"}, {KindEmail, emailKey, "email"}}

	// Phase 1: claim both keys and create the pending account, in parallel.
	var held []keyClaim
	var conflict, claimErr, createErr error
	parallel(2, func(i int) {
		if i == 0 {
			held, conflict, claimErr = a.acquireAll(ctx, keys, u.ID, op)
		} else {
			createErr = a.users.Create(ctx, u, a.cfg.ClaimLease)
		}
	})
	if err := errors.Join(claimErr, createErr, conflict); err != nil {
		a.undoSignup(ctx, held, u.ID)
		if conflict != nil && claimErr == nil && createErr == nil {
			return User{}, conflict
		}
		return User{}, err
	}
	if a.Hooks.AfterClaims != nil {
		if err := a.Hooks.AfterClaims(); err != nil {
			return User{}, err
		}
	}

	// Phase 2: commit both claims.
	ok, err := a.commitAll(ctx, held, u.ID, op)
	if err != nil || !ok {
		a.undoSignup(ctx, held, u.ID)
		if err != nil {
			return User{}, err
		}
		return User{}, ErrSignupExpired
	}
	if a.Hooks.AfterCommit != nil {
		if err := a.Hooks.AfterCommit(); err != nil {
			return User{}, err
		}
	}

	// Phase 3: activate. From here on the names are the account's.
	u.Status = StatusActive
	activated, err := a.users.Activate(ctx, u)
	if errors.Is(err, ErrNotApplied) {
		a.undoSignup(ctx, held, u.ID) // read back: definitely not active
		return User{}, err
	}
	if err != nil {
		// Unknown even after the SERIAL read: do not release anything (the
		// account may be active). If it is not, it expires with the lease
		// and its committed claims are then taken over by the next claimant.
		return User{}, err
	}
	if !activated {
		a.undoSignup(ctx, held, u.ID)
		return User{}, ErrSignupExpired
	}
	return u, nil
}

// undoSignup releases a failed signup's claims and its pending account.
func (a *Accounts) undoSignup(ctx context.Context, held []keyClaim, id string) {
	a.releaseAll(ctx, held, id, id)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ClaimLease)
	defer cancel()
	if err := a.users.Discard(ctx, id); err != nil {
		a.log.Warn(ctx, "discarding a pending account failed; it expires with its lease", "error", err.Error())
	}
}

// invalidFields joins field errors into one ErrInvalid, or nil.
func invalidFields(fes ...*FieldError) error {
	var fields []FieldError
	for _, fe := range fes {
		if fe != nil {
			fields = append(fields, *fe)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return Invalid("Some fields are not valid.", fields...)
}
