package domain

import (
	"context"
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
	// BaseVersion is the owner's version the operation read (0 for a
	// creation): the operation writes the owner IF version = BaseVersion,
	// so once the owner is past it, the operation can never apply.
	BaseVersion int
	// At is when the claim was last written: claimed, committed, taken
	// over or adopted (by the writer's clock).
	At time.Time
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
	Claim(ctx context.Context, kind ClaimKind, key, owner, op string, base int, lease time.Duration) (Claim, error)
	// Commit makes our claim permanent: every column rewritten without TTL.
	// It answers false when the claim is no longer ours (the lease ran out).
	Commit(ctx context.Context, kind ClaimKind, key, owner, op string, base int) (bool, error)
	// Release deletes the claim if (owner, op) still holds it.
	Release(ctx context.Context, kind ClaimKind, key, owner, op string) error
	// Takeover gives a committed claim whose holder is gone (a signup that
	// died after committing) or orphaned (see Claimer) to (owner, op) under
	// a lease, if it is still held by dead.
	Takeover(ctx context.Context, kind ClaimKind, key string, dead Claim, owner, op string, base int, lease time.Duration) (bool, error)
	// Adopt gives a committed claim of the owner to another operation of
	// the same owner, still committed, if it is still held by old.
	Adopt(ctx context.Context, kind ClaimKind, key string, old Claim, op string, base int) (bool, error)
	// Lookup reads a claim (ErrNotFound when there is none).
	Lookup(ctx context.Context, kind ClaimKind, key string) (Claim, error)
}
