package moderation

import (
	"context"
	"errors"
	"fmt"

	"shelf/domain"
)

// SweepExpired lifts suspensions whose end has passed, at most limit of
// them, and returns how many it lifted. Several sweepers may run at once:
// each lift is a compare-and-set. The store reads the entries ended by
// this process's clock and the node's both, and each lift is bounded by
// its entry's end, not by this clock: a sweeper whose clock runs ahead
// lifts no suspension before it ended by the node's clock.
func (m *Service) SweepExpired(ctx context.Context, limit int) (int, error) {
	expired, err := m.suspensions.Expired(ctx, m.cfg.Now().UTC(), limit)
	if err != nil {
		return 0, err
	}
	lifted := 0
	var errs []error
	for _, s := range expired {
		err := m.lift(ctx, s.UserID, "", domain.Origin{}, &s.Until, nil, nil)
		switch {
		case err == nil:
			lifted++
		case errors.Is(err, domain.ErrNotFound):
			// Lifted already, re-suspended with another end, or gone: the
			// entry is stale. Erase it at the account's version.
			errs = append(errs, m.eraseStaleExpiry(ctx, s))
		default:
			errs = append(errs, fmt.Errorf("lift %s: %w", s.UserID, err))
		}
	}
	return lifted, errors.Join(errs...)
}

// eraseStaleExpiry removes an expiry entry that no longer matches its
// account's suspension, and with it whatever the reverse lookup still
// names of a suspension the account no longer has: the lift of an account
// being deleted is no lift, and nothing else would visit the list row a
// suspension racing the deletion wrote. The account read at SERIAL is the
// proof (forget); the entry goes last, so a sweep stopped before it meets
// the entry again.
func (m *Service) eraseStaleExpiry(ctx context.Context, s domain.Suspension) error {
	u, err := m.users.GetSerial(ctx, s.UserID)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return err
	}
	if u.Status == domain.StatusSuspended && u.Suspension != nil && u.Suspension.Until.Equal(s.Until) {
		return nil // still current: its turn comes when it ends
	}
	if err == nil {
		l, err := m.suspensions.Lookup(ctx, s.UserID)
		switch {
		case err == nil && !backs(u.Standing(), l):
			if err := m.forget(ctx, u, l); err != nil {
				return err
			}
		case err != nil && !errors.Is(err, domain.ErrNotFound):
			return err
		}
	}
	return m.suspensions.EraseExpiry(ctx, s.UserID, s.Until, u.Version)
}
