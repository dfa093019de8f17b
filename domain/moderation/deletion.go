package moderation

import (
	"context"
	"errors"

	"shelf/domain"
)

// EraseDeleted ends what a suspension leaves in moderation's records, for
// u, an account being deleted (the step "suspension" of
// domain/lifecycle's deletion). The suspension the deletion ended is
// still in the deleting row: its history entry is written (a deletion is
// no lift, whose entries would carry it; S5), and its records are erased
// by their keys at the account's version, found or not: a suspension
// racing the deletion writes them at its own, older version, so they are
// shadowed wherever they land. The last lift's entries are written again
// (a lift stopped after its compare-and-set may have left them). Then
// whatever the reverse lookup still names (an older suspension's
// leftovers, or the suspension of a row deleted before it kept it) goes
// the same way, and last the last lift's suspension's records, by their
// keys, the lookup's among them.
func (m *Service) EraseDeleted(ctx context.Context, u domain.User) error {
	if sus := u.Suspension; sus != nil {
		if err := m.endDeleted(ctx, *sus, u.Version); err != nil {
			return err
		}
	}
	if l := u.LastLift; l != nil {
		if err := m.suspensions.RecordLift(ctx, *l, u.Version); err != nil {
			return err
		}
	}
	sus, err := m.suspensions.Lookup(ctx, u.ID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := m.endDeleted(ctx, sus, u.Version); err != nil {
			return err
		}
	}
	// The last lift's records by their own keys: the lookup may never
	// have named them (its write failed while the list row landed), or
	// its write is still on its way (the delete by key shadows it).
	return m.eraseLastLifted(ctx, u)
}

// endDeleted writes the history entry of a suspension a deletion ended,
// then erases its records.
func (m *Service) endDeleted(ctx context.Context, sus domain.Suspension, version int) error {
	if err := m.suspensions.RecordSuspended(ctx, sus, version); err != nil {
		return err
	}
	return m.suspensions.Erase(ctx, sus, version)
}
