package groups

import (
	"context"
	"errors"

	"shelf/domain"
)

// Adds of accounts being deleted (docs/design/deletion.md, "Memberships
// the deletion cannot see"). A deletion finds the user's groups through
// the reverse index (groups_by_member), written after the group row
// records the add. An add whose reverse index write failed, or whose
// compare-and-set landed after the deletion read that index, is not there;
// its change stays pending in the group row until both member rows are
// written, and whoever finishes it (the add, its retry, the group's next
// change or member list, the deletion's own reading of another group)
// reads the account after writing them: if it is being deleted or
// deleted, the membership is taken back instead of cleared. If the read
// finds the account still visible, its deletion's compare-and-set comes
// after the read, so its read of the reverse index, later still, finds
// the rows written before.

// grantedToDeparted reports a change pending in gr that gives a role (an
// add, a role change) to an account being deleted or deleted. Most such
// changes are taken back (takeBack); one that would leave the group
// without a manager cannot be: an add or a promotion is recorded by
// another manager, who still counts, so that is only a group's creation,
// its creator its one manager, and the group is closed instead
// (closeDeparted).
func (g *Service) grantedToDeparted(ctx context.Context, gr Group) (bool, error) {
	if gr.Pending.Role == "" {
		return false, nil
	}
	u, err := g.users.Access(ctx, gr.Pending.UserID)
	if errors.Is(err, domain.ErrNotFound) {
		return true, nil
	}
	return err == nil && u.Departed(), err
}

// soleManager reports a change pending in gr that makes its user the
// group's one manager: taking it back would leave the group with none.
func soleManager(gr Group) bool {
	return gr.Pending.Role == RoleManager && gr.ManagerCount <= 1
}

// closeDeparted closes a group whose one manager is an account being
// deleted (docs/design/deletion.md, "Memberships the deletion cannot
// see"): its creation finished after its creator's deletion read the
// creator's groups, so the deletion, which closes a group its user is
// alone in, never saw it. gr is as read, at the version that recorded the
// creator's membership, its member rows written. One compare-and-set on
// that version clears the change and begins the closing, recorded as the
// creator's, its entry written first as BeginClosing's is; the closing's
// repair (domain/lifecycle) finishes it, removing the creator's member
// rows at the closing's version. Exactly one of this and the
// compare-and-set that would have cleared the change applies.
func (g *Service) closeDeparted(ctx context.Context, op string, gr Group) error {
	at := g.now()
	next := gr
	next.Pending = nil
	next.Status, next.ClosedAt, next.ClosedBy = domain.StatusClosing, at, gr.Pending.UserID
	next.ClosingAttempt = domain.NewAttempt()
	next.Version, next.UpdatedAt = gr.Version+1, at
	entry := EntryOfClosing(next)
	if err := domain.Entered(g.cfg.Closings.Begin(ctx, entry), entry.At, g.now()); err != nil {
		return errors.Join(err, g.cfg.Closings.End(ctx, entry))
	}
	if err := g.hook(op, "entry"); err != nil {
		return err
	}
	applied, err := g.groups.Update(ctx, next)
	if err == nil && !applied {
		// Another finisher cleared the change or closed the group first:
		// this attempt's entry is its own.
		return g.cfg.Closings.End(ctx, entry)
	}
	return err
}

// takeBack turns the change pending in gr (as read: at the version that
// recorded it, its member rows written) into the user's removal, with the
// counts it leads to, by the compare-and-set that would have cleared it:
// exactly one of the two applies, and nothing is recorded before either
// (every change finishes what is pending first). Then the removal is
// finished like any change; a failure leaves it pending in the row for
// the group's next change or the jobs' worker. The removal is recorded
// by whoever finishes the add, a reader of the group too, so it has an
// entry of its own in the index of changes, written before its
// compare-and-set as a change's is: the add's entry ends when the add's
// take-back loses to another finisher's, whose removal the worker must
// still find if its writes fail
// (TestATakeBackWonByAReaderKeepsAnEntry).
func (g *Service) takeBack(ctx context.Context, op string, gr Group) error {
	c := *gr.Pending
	next := gr
	next.Pending = &MemberChange{UserID: c.UserID}
	next.MemberCount--
	if c.Role == RoleManager {
		next.ManagerCount--
	}
	next.Version, next.UpdatedAt = gr.Version+1, g.now()
	entry, err := g.beginChange(ctx, gr.ID)
	if err != nil {
		return err
	}
	applied, err := g.groups.Update(ctx, next)
	switch {
	case err != nil:
		// Unknown: whoever reads the group next finishes it, or the
		// jobs' worker, from the entry.
		return err
	case !applied:
		// Another finisher cleared or took it back first (with an entry
		// of its own).
		g.endChange(ctx, entry)
		return nil
	}
	if _, err := g.finish(ctx, op, next); err != nil {
		return err
	}
	g.endChange(ctx, entry)
	return nil
}
