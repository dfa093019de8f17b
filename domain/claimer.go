package domain

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"
)

// Holders says what became of the owner of a committed claim, so the
// claimer can tell a live holder from one whose creation died after
// committing or that is gone for good (docs/design/signup.md).
type Holders interface {
	// Holder reports whether the owner exists (false: its creation died
	// after committing, its pending row expired with the lease, and it can
	// never be activated now; or it is deleted or closed for good) and, if
	// so, whether it holds key right now and its version (read at SERIAL).
	Holder(ctx context.Context, kind ClaimKind, key, owner string) (exists, holds bool, version int, err error)
}

// OwnerFence is what Holders may also do: move an owner that is still at
// version past it with nothing else changed (a compare-and-set on
// version), so that no operation that read it at version can apply any
// more. A fence that finds the owner moved on already, or gone, does
// nothing. Accounts' holders do it: an account's keys change by renames
// and changes of address, each of which compares-and-sets the account on
// the version it read; a group's name is claimed only by its creation.
type OwnerFence interface {
	FenceOwner(ctx context.Context, owner string, version int) error
}

// StaleClaimAge is how long after it was last written a committed claim
// of an owner still at the claim's base, not holding its key, counts as
// its change's in flight (six request deadlines, as for the workers'
// entries). Past it the change stopped between committing and its
// compare-and-set, or that compare-and-set's answer was lost: another
// claimant fences the owner (OwnerFence) and takes the key over, and the
// stopped compare-and-set can never land.
const StaleClaimAge = time.Minute

// Claimer takes, commits and gives back unique keys (usernames, emails,
// group names) through a ClaimStore: the one implementation of the claim
// protocol for accounts and groups alike (U1, U2, U4, U6).
type Claimer struct {
	claims ClaimStore
	lease  time.Duration
	log    Logger
	yield  Yield
	now    func() time.Time
}

// NewClaimer builds a claimer whose pending claims expire after lease and
// that waits for a split pair as DefaultYield says.
func NewClaimer(claims ClaimStore, lease time.Duration, log Logger) *Claimer {
	return &Claimer{claims: claims, lease: lease, log: log, yield: DefaultYield, now: time.Now}
}

// WithClock is a claimer like c that tells a claim's age by now.
func (c *Claimer) WithClock(now func() time.Time) *Claimer {
	d := *c
	d.now = now
	return &d
}

// Lease is how long a pending claim lives.
func (c *Claimer) Lease() time.Duration { return c.lease }

// Key is one key an operation needs.
type Key struct {
	Kind ClaimKind
	Key  string
	// Field is the JSON field it came from, for 409 answers.
	Field string
	// adopted: the claim was another operation of the same owner's, taken
	// over still committed; ReleaseAll never gives it back (that operation
	// may still land and make the owner hold the key).
	adopted bool
}

// claimOutcome is what acquiring one key came to.
type claimOutcome int

const (
	claimHeld      claimOutcome = iota // we hold it now
	claimAdopted                       // we hold it now, committed, taken from an earlier operation of ours
	claimNoop                          // the owner already has this key: nothing to claim
	claimTaken                         // someone else holds it, committed: a real conflict
	claimContended                     // someone else's operation in flight holds it (a pending claim)
	claimBusy                          // another operation of the same owner holds it
)

// maxTakeoverRounds bounds how often acquire looks again after another
// claimant took over a dead holder's claim first.
const maxTakeoverRounds = 3

// acquire takes key for (owner, op), an operation that read the owner at
// version base. A pending claim of someone else is contended (that
// operation is in flight, and may yet give it back); one of another
// operation of the same owner means that operation is in flight. A
// committed claim is decided by its holder:
//   - gone (its creation died after committing, or it is deleted or
//     closed for good): taken over;
//   - holds the key: taken, or nothing to do when that is the owner;
//   - the owner itself, not holding the key: a change of ours that stopped
//     between committing and updating the owner (or whose update stayed
//     unknown); adopted, still committed, so that if that change still
//     lands the key stays claimed; busy when the owner is past base (this
//     operation can never apply, and adopting would lower the claim's
//     base below that change's);
//   - someone else, not holding the key, with its version past the claim's
//     base: an orphan (the operation that claimed it can never apply, or
//     applied and the holder has moved on since): taken over;
//   - someone else, not holding the key, at the claim's base: its change
//     may be in flight; taken, unless the claim is older than
//     StaleClaimAge and the holders can fence the owner: then the owner is
//     fenced and the claim, an orphan now, taken over. Without it a change
//     that stopped after committing would keep the key from everyone until
//     its owner changed anything.
func (c *Claimer) acquire(ctx context.Context, k Key, owner, op string, base int, holders Holders) (claimOutcome, error) {
	for round := 0; round < maxTakeoverRounds; round++ {
		cl, err := c.claims.Claim(ctx, k.Kind, k.Key, owner, op, base, c.lease)
		if err != nil {
			return 0, err
		}
		if cl.Owner == owner && cl.Op == op {
			return claimHeld, nil
		}
		if cl.State != ClaimCommitted {
			if cl.Owner == owner {
				return claimBusy, nil
			}
			return claimContended, nil
		}
		exists, holds, version, err := holders.Holder(ctx, k.Kind, k.Key, cl.Owner)
		if err != nil {
			return 0, err
		}
		var ok bool
		switch {
		case holds && cl.Owner == owner:
			return claimNoop, nil
		case holds:
			return claimTaken, nil
		case exists && cl.Owner == owner && version > base:
			// This operation read the owner before it moved on, so it can
			// never apply; adopted at base, the claim would look like an
			// orphan while the change that claimed it may still land
			// (TestASlowRenameNeverLowersTheBaseOfAClaimInFlight).
			return claimBusy, nil
		case exists && cl.Owner == owner:
			if ok, err = c.claims.Adopt(ctx, k.Kind, k.Key, cl, op, base); err == nil && ok {
				return claimAdopted, nil
			}
		case exists && version <= cl.BaseVersion:
			fence, can := holders.(OwnerFence)
			if !can || c.now().Sub(cl.At) < StaleClaimAge {
				return claimTaken, nil
			}
			err = fence.FenceOwner(ctx, cl.Owner, version)
		default: // gone, or an orphan
			if ok, err = c.claims.Takeover(ctx, k.Kind, k.Key, cl, owner, op, base, c.lease); err == nil && ok {
				return claimHeld, nil
			}
		}
		if err != nil {
			return 0, err
		}
		// someone else moved first, or the owner was fenced: look again
	}
	return claimBusy, nil
}

// AcquireAll takes every key in parallel. It returns the keys held (to
// commit or release, by the caller, whatever the answer) and, when some
// could not be taken, the conflict to answer with: a 409 naming every taken
// field, or ErrBusy when another operation of the same owner holds a key.
//
// keys come in a fixed order that every caller follows (username before
// email): when the parallel round ends in a split, the claimant that holds
// the first key waits for the later ones others hold pending, and the
// others yield (see awaitSplit).
//
// base is the owner's version the operation read (0 for a creation).
func (c *Claimer) AcquireAll(ctx context.Context, keys []Key, owner, op string, base int, holders Holders) (held []Key, conflict error, err error) {
	outcomes := make([]claimOutcome, len(keys))
	errs := make([]error, len(keys))
	Parallel(ctx, len(keys), func(ctx context.Context, i int) {
		outcomes[i], errs[i] = c.acquire(ctx, keys[i], owner, op, base, holders)
	})
	if split(outcomes, errs) {
		err = c.awaitSplit(ctx, keys, outcomes, errs, owner, op, base, holders)
	}
	var taken []FieldError
	busy := false
	for i, k := range keys {
		switch {
		case errs[i] != nil:
			err = errors.Join(err, errs[i])
		case outcomes[i] == claimHeld:
			held = append(held, k)
		case outcomes[i] == claimAdopted:
			k.adopted = true
			held = append(held, k)
		case outcomes[i] == claimTaken || outcomes[i] == claimContended:
			taken = append(taken, FieldError{Field: k.Field, Code: "taken", Message: "is already taken"})
		case outcomes[i] == claimBusy:
			busy = true
		}
	}
	switch {
	case err != nil:
	case len(taken) > 0:
		conflict = &Error{Kind: ErrConflict, Code: "conflict", Message: "Some values are already taken.", Fields: taken}
	case busy:
		conflict = ErrBusy
	}
	return held, conflict, err
}

// CommitAll commits every held key in parallel; ok is false if any claim
// was no longer ours (its lease ran out).
func (c *Claimer) CommitAll(ctx context.Context, held []Key, owner, op string, base int) (ok bool, err error) {
	oks := make([]bool, len(held))
	errs := make([]error, len(held))
	Parallel(ctx, len(held), func(ctx context.Context, i int) {
		oks[i], errs[i] = c.claims.Commit(ctx, held[i].Kind, held[i].Key, owner, op, base)
	})
	ok = true
	for i := range held {
		ok = ok && oks[i]
	}
	return ok, errors.Join(errs...)
}

// ReleaseAll gives back every held key but the adopted ones, in parallel
// and on a context of its own: a request that was cancelled still cleans
// up after itself. An adopted key stays committed to the owner: the change
// that claimed it first may still land; once the owner's version is past
// its base, anyone may take it over.
func (c *Claimer) ReleaseAll(ctx context.Context, held []Key, owner, op string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.lease)
	defer cancel()
	held = slices.DeleteFunc(slices.Clone(held), func(k Key) bool { return k.adopted })
	Parallel(ctx, len(held), func(ctx context.Context, i int) {
		if err := c.claims.Release(ctx, held[i].Kind, held[i].Key, owner, op); err != nil {
			// The lease frees it anyway (U4); say so in the log.
			c.log.Warn(ctx, "release of a claim failed; its lease will free it", "kind", string(held[i].Kind), "error", err.Error())
		}
	})
}

// GiveBack is ReleaseAll for an operation of owner that read it at
// version base and can no longer apply (its compare-and-set was never
// sent, or was answered not applied), its adopted keys given back too.
// Kept, each stayed committed to the owner at base, its clock set anew by
// the adoption: an owner who sent such an operation again and again,
// refused each time on another key, kept a key it never held from
// everyone for as long as it went on, no claim of it ever growing stale
// (U4; TestAnAccountCannotSquatAnAddressByRetryingARefusedChange). So the
// owner is first fenced past base (OwnerFence): neither this operation
// nor the one the claim was adopted from (which read the owner at base or
// before) can apply after it. Then each adopted key the owner does not
// hold (Holder, read after the fence) is released if it is still this
// operation's. Holders that cannot fence, or a fence or read that fails,
// leave the adopted keys as ReleaseAll does.
func (c *Claimer) GiveBack(ctx context.Context, held []Key, owner, op string, base int, holders Holders) {
	c.ReleaseAll(ctx, held, owner, op)
	adopted := slices.DeleteFunc(slices.Clone(held), func(k Key) bool { return !k.adopted })
	fence, can := holders.(OwnerFence)
	if len(adopted) == 0 || !can {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.lease)
	defer cancel()
	if err := fence.FenceOwner(ctx, owner, base); err != nil {
		c.log.Warn(ctx, "fencing an owner to give back its adopted claims failed; they stay until the owner moves on", "owner", owner, "error", err.Error())
		return
	}
	for _, k := range adopted {
		exists, holds, version, err := holders.Holder(ctx, k.Kind, k.Key, owner)
		if err != nil || holds || (exists && version <= base) {
			continue
		}
		if err := c.claims.Release(ctx, k.Kind, k.Key, owner, op); err != nil {
			c.log.Warn(ctx, "release of an adopted claim failed; it is an orphan anyone may take over", "kind", string(k.Kind), "error", err.Error())
		}
	}
}

// ReleaseOld gives back keys an owner no longer holds since it was
// written at version written. Each is deleted only if it is still the
// owner's committed claim of the operation found by reading it, so a new
// claim of the same key by anyone is never touched, and only if that
// operation read the owner before written: one that read it at or after
// written (a later change of the owner back to the key, which claimed or
// adopted it) may hold the key now or when it lands. An owner gone for
// good (deleted, closed) passes NoLaterChange. It answers the reads and
// releases that failed (a key found free, or another's, is no failure):
// a caller whose record of the keys is its only one (a deletion's entry)
// keeps that record until a release is proven.
func (c *Claimer) ReleaseOld(ctx context.Context, old []Key, owner string, written int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.lease)
	defer cancel()
	errs := make([]error, len(old))
	Parallel(ctx, len(old), func(ctx context.Context, i int) {
		cl, err := c.claims.Lookup(ctx, old[i].Kind, old[i].Key)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				errs[i] = err
			}
			return
		}
		if cl.Owner != owner || cl.State != ClaimCommitted || cl.BaseVersion >= written {
			return
		}
		if err := c.claims.Release(ctx, cl.Kind, cl.Key, owner, cl.Op); err != nil {
			c.log.Warn(ctx, "releasing an old claim failed; it stays reserved for its owner", "owner", owner, "error", err.Error())
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}

// NoLaterChange is ReleaseOld's written for an owner gone for good: no
// change of it can claim a key again.
const NoLaterChange = math.MaxInt

// Lookup reads a claim (ErrNotFound when there is none).
func (c *Claimer) Lookup(ctx context.Context, kind ClaimKind, key string) (Claim, error) {
	return c.claims.Lookup(ctx, kind, key)
}
