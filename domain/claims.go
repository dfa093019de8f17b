package domain

import (
	"context"
	"errors"
	"time"
)

// ClaimKind names a kind of unique key; each has its own claim table.
type ClaimKind string

// The kinds of unique keys.
const (
	KindUsername  ClaimKind = "username"
	KindEmail     ClaimKind = "email"
	KindGroupName ClaimKind = "group_name"
)

// ClaimState is pending (held under a lease that expires) or committed
// (held for good).
type ClaimState string

// The claim states.
const (
	ClaimPending   ClaimState = "pending"
	ClaimCommitted ClaimState = "committed"
)

// Claim is one row of a claim table: who holds a key, for which operation.
type Claim struct {
	Kind  ClaimKind
	Key   string
	Owner string // user id (group id for a group name)
	Op    string // the operation (signup, change, group creation) that made the claim
	State ClaimState
}

// ClaimStore keeps the claim tables. Every write is a lightweight
// transaction, and the store resolves ambiguous outcomes (timeouts, "CAS
// result unknown") by reading the row back at SERIAL, never by guessing (U5).
// A write conditioned on an owner and op never touches a claim held by
// anyone else (U6).
type ClaimStore interface {
	// Claim inserts key for (owner, op) with a lease if nobody holds it and
	// returns the claim as it then stands: Owner and Op equal to the
	// arguments mean we hold it (also when a retry finds our own row).
	Claim(ctx context.Context, kind ClaimKind, key, owner, op string, lease time.Duration) (Claim, error)
	// Commit makes our claim permanent: every column rewritten without TTL.
	// It answers false when the claim is no longer ours (the lease ran out).
	Commit(ctx context.Context, kind ClaimKind, key, owner, op string) (bool, error)
	// Release deletes the claim if (owner, op) still holds it.
	Release(ctx context.Context, kind ClaimKind, key, owner, op string) error
	// Takeover gives a committed claim whose owner's account no longer
	// exists (a signup that died after committing) to (owner, op) under a
	// lease, if it is still held by dead.
	Takeover(ctx context.Context, kind ClaimKind, key string, dead Claim, owner, op string, lease time.Duration) (bool, error)
	// Lookup reads a claim (ErrNotFound when there is none).
	Lookup(ctx context.Context, kind ClaimKind, key string) (Claim, error)
}

// claimOutcome is what acquiring one key came to.
type claimOutcome int

const (
	claimHeld  claimOutcome = iota // we hold it now
	claimNoop                      // the user already has this key: nothing to claim
	claimTaken                     // someone else holds it
	claimBusy                      // another operation of the same user holds it
)

// acquire takes key for (owner, op). A committed claim whose owner account
// is gone is taken over; one whose owner still exists is taken; a claim of
// another operation of the same user means that operation is in flight.
func (a *Accounts) acquire(ctx context.Context, kind ClaimKind, key, owner, op string) (claimOutcome, error) {
	for attempt := 0; attempt < 3; attempt++ {
		c, err := a.claims.Claim(ctx, kind, key, owner, op, a.cfg.ClaimLease)
		if err != nil {
			return 0, err
		}
		if c.Owner == owner && c.Op == op {
			return claimHeld, nil
		}
		if c.State != ClaimCommitted {
			if c.Owner == owner {
				return claimBusy, nil
			}
			return claimTaken, nil
		}
		holder, err := a.users.GetSerial(ctx, c.Owner)
		switch {
		case errors.Is(err, ErrNotFound):
			// The holder's signup died after committing: its pending account
			// expired with the lease and can never be activated now.
			ok, err := a.claims.Takeover(ctx, kind, key, c, owner, op, a.cfg.ClaimLease)
			if err != nil {
				return 0, err
			}
			if ok {
				return claimHeld, nil
			}
			continue // someone else moved first: look again
		case err != nil:
			return 0, err
		case c.Owner == owner && holder.keyOf(kind) == key:
			return claimNoop, nil
		case c.Owner == owner:
			return claimBusy, nil
		default:
			return claimTaken, nil
		}
	}
	return claimBusy, nil
}

// keyClaim is one key an operation needs.
type keyClaim struct {
	kind  ClaimKind
	key   string
	field string // the JSON field it came from, for 409 answers
}

// acquireAll takes every key in parallel. It returns the keys held (to
// commit or release) and, when some could not be taken, the conflict to
// answer with, naming every taken field.
func (a *Accounts) acquireAll(ctx context.Context, keys []keyClaim, owner, op string) (held []keyClaim, conflict error, err error) {
	outcomes := make([]claimOutcome, len(keys))
	errs := make([]error, len(keys))
	parallel(len(keys), func(i int) {
		outcomes[i], errs[i] = a.acquire(ctx, keys[i].kind, keys[i].key, owner, op)
	})
	var taken []FieldError
	busy := false
	for i, k := range keys {
		switch {
		case errs[i] != nil:
			err = errors.Join(err, errs[i])
		case outcomes[i] == claimHeld:
			held = append(held, k)
		case outcomes[i] == claimTaken:
			taken = append(taken, FieldError{Field: k.field, Code: "taken", Message: "is already taken"})
		case outcomes[i] == claimBusy:
			busy = true
		}
	}
	switch {
	case err != nil:
	case len(taken) > 0:
		conflict = &Error{Kind: ErrConflict, Code: "conflict", Message: "Some values are already taken.", Fields: taken}
	case busy:
		conflict = errBusy
	}
	return held, conflict, err
}

// errBusy: another change of the same account holds a key this one needs.
var errBusy = &Error{Kind: ErrConflict, Code: "concurrent_change",
	Message: "Another change of this account is in progress; try again."}

// commitAll commits every held key in parallel; ok is false if any claim
// was no longer ours.
func (a *Accounts) commitAll(ctx context.Context, held []keyClaim, owner, op string) (ok bool, err error) {
	oks := make([]bool, len(held))
	errs := make([]error, len(held))
	parallel(len(held), func(i int) {
		oks[i], errs[i] = a.claims.Commit(ctx, held[i].kind, held[i].key, owner, op)
	})
	ok = true
	for i := range held {
		ok = ok && oks[i]
	}
	return ok, errors.Join(errs...)
}

// releaseAll gives back every held key, in parallel and on a context of its
// own: a request that was cancelled still cleans up after itself.
func (a *Accounts) releaseAll(ctx context.Context, held []keyClaim, owner, op string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ClaimLease)
	defer cancel()
	parallel(len(held), func(i int) {
		if err := a.claims.Release(ctx, held[i].kind, held[i].key, owner, op); err != nil {
			// The lease frees it anyway (U4); say so in the log.
			a.log.Warn(ctx, "release of a claim failed; its lease will free it", "kind", string(held[i].kind), "error", err.Error())
		}
	})
}

// parallel runs fn(0..n-1) at once and waits for all.
func parallel(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			fn(i)
		}()
	}
	for i := 0; i < n; i++ {
		<-done
	}
}
