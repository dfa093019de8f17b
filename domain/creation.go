package domain

import (
	"context"
	"errors"
	"time"
)

// Creation is a new row that holds unique keys: a signup (its username and
// email) or a group (its name). The row's id is the owner and the operation
// of its claims.
type Creation struct {
	ID      string
	Keys    []Key
	Holders Holders
	// Create writes the row pending, to expire after lease unless activated.
	Create func(ctx context.Context, lease time.Duration) error
	// Activate makes the pending row active and permanent; false: the row
	// Create wrote is no longer pending (its lease ran out; an earlier
	// attempt of its insert may have written it again since).
	Activate func(ctx context.Context) (bool, error)
	// Discard deletes the row if it is still pending.
	Discard func(ctx context.Context) error
	// Expired answers a creation that outlived its lease: its claims may
	// have passed to someone else, so nothing was kept.
	Expired error
	// Step, when set, is called after each phase: "claims", "commit",
	// "activate". An error stops the creation there at once, without
	// cleaning up, as a crash would (tests use it).
	Step func(step string) error
}

func (cr Creation) step(name string) error {
	if cr.Step == nil {
		return nil
	}
	return cr.Step(name)
}

// Create runs a creation in three phases (docs/design/signup.md): [claim every
// key ∥ create the row pending], then [commit every claim], then activate
// the row. The claims are committed before the row is active, so an active
// row never holds a key whose claim can still expire; a creation that dies
// before activation leaves a pending row that expires with the lease, and
// its claims are then free: pending ones expire, committed ones are taken
// over by the next claimant (Holders finds the row gone). A key held by
// someone else answers the conflict of AcquireAll. Before activation, a
// failure undoes the creation (the row was never activated, so a claim or
// a pending row that lands late only expires with its lease); an
// activation whose outcome stays unknown keeps everything, since the row
// may be active.
func (c *Claimer) Create(ctx context.Context, cr Creation) error {
	var held []Key
	var conflict, claimErr, createErr error
	Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			held, conflict, claimErr = c.AcquireAll(ctx, cr.Keys, cr.ID, cr.ID, 0, cr.Holders)
		} else {
			createErr = cr.Create(ctx, c.lease)
		}
	})
	if err := errors.Join(claimErr, createErr); err != nil || conflict != nil {
		c.undoCreation(ctx, cr, held)
		if err != nil {
			return err
		}
		return conflict
	}
	if err := cr.step("claims"); err != nil {
		return err
	}
	ok, err := c.CommitAll(ctx, held, cr.ID, cr.ID, 0)
	if err != nil || !ok {
		c.undoCreation(ctx, cr, held)
		if err != nil {
			return err
		}
		return cr.Expired
	}
	if err := cr.step("commit"); err != nil {
		return err
	}
	activated, err := cr.Activate(ctx)
	switch {
	case err != nil:
		// Unknown (ErrOutcomeUnknown) or not sent: release nothing. The row
		// may be active, or may still become active when a held attempt
		// lands; if it never does, it expires with the lease and its
		// committed claims are taken over by the next claimant. Both states
		// keep U1-U4.
		return err
	case !activated:
		// Definitely not: every attempt was answered, and the row is no
		// longer pending (its lease ran out). Nothing is in flight.
		c.undoCreation(ctx, cr, held)
		return cr.Expired
	}
	return cr.step("activate")
}

// undoCreation releases a failed creation's claims and its pending row,
// on a context of its own: a request that was cancelled still cleans up.
func (c *Claimer) undoCreation(ctx context.Context, cr Creation, held []Key) {
	c.ReleaseAll(ctx, held, cr.ID, cr.ID)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.lease)
	defer cancel()
	if err := cr.Discard(ctx); err != nil {
		c.log.Warn(ctx, "discarding a pending row failed; it expires with its lease", "id", cr.ID, "error", err.Error())
	}
}
