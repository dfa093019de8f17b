package groups

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// Closing a group (DELETE /v1/groups/{id}, docs/design.md#closing).
//
// A compare-and-set on the group's version moves it to status closing,
// recording when and by whom: from then on the group reads as gone (404),
// takes no member (every change is a compare-and-set on a version the
// closing moved past, and reads the group active first) and no share
// (content checks the group again after recording one), but it still holds
// its name. Then each step, idempotent and safe to repeat or to land late:
// take every item shared with the group off it through content's own
// unshare, purge what is left of its library, remove every member row at
// the closing's version. Then a second compare-and-set, closing -> closed,
// and only then is the name claim released: from status closed the
// claimer takes it over anyway (Holder), so the name is free exactly once
// the group is closed, never before. An index entry written before the
// first compare-and-set lets the repair find closings a crash stopped.
// Every attempt's entry is its own (keyed by the attempt's tag): a losing
// attempt ends only its own, and the winner's is ended only by the finish
// of the closing that applied, identified by the tag the group row
// records (issue 24: two managers closing at once shared one entry, and
// the loser's end left the closing where no repair could find it).

// ClosingEntry is one attempt of a closing as the index records it: the
// group, the attempt's tag, when it began and who asked.
type ClosingEntry struct {
	GroupID string
	Attempt string
	At      time.Time
	By      string
}

// of reports whether e is the entry of gr's closing (the attempt whose
// compare-and-set applied).
func (e ClosingEntry) of(gr Group) bool {
	return e.Attempt == gr.ClosingAttempt && e.At.Equal(gr.ClosedAt)
}

// ClosingStore keeps the index of closings in progress, one entry per
// attempt (GroupID, At, Attempt).
type ClosingStore interface {
	// Begin records an attempt of a closing; writing it again is harmless.
	Begin(ctx context.Context, e ClosingEntry) error
	// End deletes this attempt's entry, never another's; a Begin of it
	// landing late never outlives it.
	End(ctx context.Context, e ClosingEntry) error
	// InProgress calls fn with every entry, from the index's start on, and
	// moves the start up past the days it read empty.
	InProgress(ctx context.Context, fn func(ClosingEntry) error) error
}

// Shares is what closing a group needs of content (domain/library, wired
// in internal/app): the group's library index, and content's own unshare,
// so every item's member counts stay exact and every library follows.
type Shares interface {
	// Items lists the ids of the items in the principal's library index,
	// after content id after.
	Items(ctx context.Context, principalID, after string, limit int) ([]string, error)
	// Drop takes the principal off the item (deleting the item when the
	// principal is its last manager); ErrNotFound when it is not a member
	// or the item is gone.
	Drop(ctx context.Context, contentID, principalID string) error
	// Purge deletes what is left of the principal's library.
	Purge(ctx context.Context, principalID string) error
}

// ClosingDeps are what closing a group needs beyond the groups' own
// stores.
type ClosingDeps struct {
	Index  ClosingStore
	Shares Shares
}

// SetClosing wires group closing (content is built after the groups).
func (g *Service) SetClosing(d ClosingDeps) { g.closing = d }

// closingPage is how many items or members a closing reads at a time.
const closingPage = 100

// staleClosingAge is how old an entry of a group that is not being closed
// must be before the repair removes it: younger, its compare-and-set may
// still be in flight.
const staleClosingAge = 10 * time.Minute

// CloseGroup closes a group, by one of its managers or an active admin,
// whatever members it still has: every membership and every share with the
// group ends, and its name is freed. A closing under way is finished (by
// whoever began it, or an admin; to anyone else the group is gone), and a
// repeat of a finished one sweeps the steps again and answers nil.
func (g *Service) CloseGroup(ctx context.Context, p domain.Principal, id string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	gr, err := g.beginClosing(ctx, p, id, false)
	if err != nil {
		return err
	}
	return g.finishClosing(ctx, gr)
}

// CloseAlone closes a group whose only member is userID, as that user
// (account deletion, docs/design.md#deletion): the decision rests on the
// group row's exact count, in the compare-and-set. A group with other
// members is refused (last_manager, as a removal would be); one this user
// is not in, ErrNotFound. A closing this user began is finished.
func (g *Service) CloseAlone(ctx context.Context, groupID, userID string) error {
	gr, err := g.beginClosing(ctx, domain.Principal{UserID: userID}, groupID, true)
	if err != nil {
		return err
	}
	return g.finishClosing(ctx, gr)
}

// FinishClosing finishes the closing of a group found closing (a deletion
// meets such a group among a user's groups); any other group is left alone.
func (g *Service) FinishClosing(ctx context.Context, id string) error {
	if !domain.ValidID(id, domain.GroupIDPrefix) {
		return nil
	}
	gr, err := g.groups.GetSerial(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && gr.Status != domain.StatusClosing) {
		return nil
	}
	if err != nil {
		return err
	}
	return g.finishClosing(ctx, gr)
}

// closingGone reports a group that is closing or closed.
func closingGone(gr Group) bool {
	return gr.Status == domain.StatusClosing || gr.Status == domain.StatusClosed
}

// beginClosing moves the group to closing (or finds it closing or closed)
// and returns it as it then stands. A change pending in the group is
// finished first, so the closing is recorded on settled counts; the index
// entry goes before the compare-and-set. alone: the deletion's closing
// (see CloseAlone).
func (g *Service) beginClosing(ctx context.Context, p domain.Principal, id string, alone bool) (Group, error) {
	if !domain.ValidID(id, domain.GroupIDPrefix) {
		return Group{}, errGroupNotFound
	}
	var out Group
	err := domain.Retry(ctx, maxGroupAttempts, errGroupBusy, func(int) (bool, error) {
		gr, err := g.groups.GetSerial(ctx, id)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && gr.Status == domain.StatusPending) {
			return false, errGroupNotFound
		}
		if err != nil {
			return false, err
		}
		if closingGone(gr) {
			if gr.ClosedBy != p.UserID && (alone || g.requireAdmin(ctx, p) != nil) {
				return false, errGroupNotFound // gone, for everyone else
			}
			out = gr
			return true, nil
		}
		if gr.Pending != nil {
			_, err := g.finish(ctx, "close", gr)
			return false, err
		}
		if err := g.mayClose(ctx, gr, p, alone); err != nil {
			var refusal *domain.Error
			if !errors.As(err, &refusal) && !errors.Is(err, domain.ErrForbidden) {
				return false, err
			}
			// A refusal stands only on one state of the group.
			now, rerr := g.groups.GetSerial(ctx, id)
			if rerr != nil {
				return false, rerr
			}
			if now.Version != gr.Version || now.Pending != nil {
				return false, nil
			}
			return true, err
		}
		at := g.now()
		next := gr
		next.Status, next.ClosedAt, next.ClosedBy = domain.StatusClosing, at, p.UserID
		next.ClosingAttempt = domain.NewAttempt()
		next.Version, next.UpdatedAt = gr.Version+1, at
		entry := entryOfClosing(next)
		if err := g.closing.Index.Begin(ctx, entry); err != nil {
			// This attempt sends no compare-and-set: its entry, if the
			// write landed, is ended now (else the repair's).
			return false, errors.Join(err, g.closing.Index.End(ctx, entry))
		}
		if err := g.hook("close", "entry"); err != nil {
			return false, err
		}
		applied, err := g.groups.Update(ctx, next)
		switch {
		case err != nil:
			// Unknown: the group may be closing now or later; the entry
			// stays for the retry or the repair.
			return false, err
		case !applied:
			// Another change won: this attempt never began a closing.
			// Its entry is its own, so ending it leaves the winner's.
			return false, g.closing.Index.End(ctx, entry)
		}
		if err := g.hook("close", "cas"); err != nil {
			return false, err
		}
		out = next
		return true, nil
	})
	return out, err
}

// mayClose answers whether p may close gr: a manager of it or an active
// admin; for alone, only the group's one member.
func (g *Service) mayClose(ctx context.Context, gr Group, p domain.Principal, alone bool) error {
	role, err := g.role(ctx, gr.ID, p.UserID)
	switch {
	case err != nil:
		return err
	case alone && role == "":
		return errNotGroupMember
	case alone && gr.MemberCount > 1:
		return errLastManager
	case alone || role == RoleManager:
		return nil
	}
	_, err = g.admins.RequireAdmin(ctx, p)
	return err
}

// requireAdmin is nil for an active admin.
func (g *Service) requireAdmin(ctx context.Context, p domain.Principal) error {
	if p.Account == nil {
		return domain.ErrDenied // a system caller (a deletion) is nobody's admin
	}
	_, err := g.admins.RequireAdmin(ctx, p)
	return err
}

// entryOfClosing is the index entry of gr's closing: the attempt the group
// row records.
func entryOfClosing(gr Group) ClosingEntry {
	return ClosingEntry{GroupID: gr.ID, Attempt: gr.ClosingAttempt, At: gr.ClosedAt, By: gr.ClosedBy}
}

// finishClosing carries out the steps of the closing of gr (closing or
// closed), each idempotent: what a crash left, any step may do again. The
// entry it writes again and ends is the one of the attempt that began the
// closing (the row's).
func (g *Service) finishClosing(ctx context.Context, gr Group) error {
	entry := entryOfClosing(gr)
	if gr.Status == domain.StatusClosing {
		// Again, in case the first write of it was lost: the repair finds
		// the closing through it until it is done.
		if err := g.closing.Index.Begin(ctx, entry); err != nil {
			return err
		}
	}
	steps := []struct {
		name string
		run  func() error
	}{
		{"items", func() error { return g.dropItems(ctx, gr.ID) }},
		{"library", func() error { return g.closing.Shares.Purge(ctx, gr.ID) }},
		{"members", func() error { return g.removeMembers(ctx, gr) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			return err
		}
		if err := g.hook("close", s.name); err != nil {
			return err
		}
	}
	if gr.Status == domain.StatusClosing {
		if err := g.markClosed(ctx, gr); err != nil {
			return err
		}
		if err := g.hook("close", "closed"); err != nil {
			return err
		}
	}
	// The name, only while it is still this group's committed claim, with
	// the op found in it; a closed owner's claim is taken over anyway.
	g.claimer.ReleaseOld(ctx, []domain.Key{{Kind: domain.KindGroupName, Key: gr.NameKey, Field: "name"}}, gr.ID)
	if err := g.hook("close", "claim"); err != nil {
		return err
	}
	return g.closing.Index.End(ctx, entry)
}

// dropItems takes the group off every item of its library index, through
// content's own unshare: each item's counts stay exact, and its other
// members keep it.
func (g *Service) dropItems(ctx context.Context, id string) error {
	after := ""
	for {
		items, err := g.closing.Shares.Items(ctx, id, after, closingPage)
		if err != nil {
			return err
		}
		for _, c := range items {
			if err := g.closing.Shares.Drop(ctx, c, id); err != nil && !errors.Is(err, domain.ErrNotFound) {
				return err
			}
		}
		if len(items) < closingPage {
			return nil
		}
		after = items[len(items)-1]
	}
}

// removeMembers deletes every member row of the group (both tables) at
// the group's version: every member write of the group was made at an
// older version, so none landing late outlives it, and every change was
// finished before the closing was recorded, so the rows read here are all
// there are. Apply deletes a member's reverse index row before its member
// row, so a removal that failed half-way leaves the member row for the
// retry to page again.
func (g *Service) removeMembers(ctx context.Context, gr Group) error {
	after := ""
	for {
		page, err := g.members.Page(ctx, gr.ID, after, closingPage)
		if err != nil {
			return err
		}
		for _, m := range page {
			if err := g.members.Apply(ctx, gr.ID, MemberChange{UserID: m.UserID}, gr.Version); err != nil {
				return err
			}
		}
		if len(page) < closingPage {
			return nil
		}
		after = page[len(page)-1].UserID
	}
}

// markClosed is the compare-and-set closing -> closed (no members left).
// Only a finisher of the same closing can have moved the row, so a lost
// compare-and-set is settled by reading it.
func (g *Service) markClosed(ctx context.Context, gr Group) error {
	next := gr
	next.Status, next.MemberCount, next.ManagerCount = domain.StatusClosed, 0, 0
	next.Version, next.UpdatedAt = gr.Version+1, g.now()
	applied, err := g.groups.Update(ctx, next)
	if err != nil || applied {
		return err
	}
	now, err := g.groups.GetSerial(ctx, gr.ID)
	if err == nil && now.Status != domain.StatusClosed {
		return errGroupBusy
	}
	return err
}

// fence moves an open group's version on (a compare-and-set that changes
// nothing else) before the repair removes the entry of a closing that did
// not take effect: that closing's compare-and-set, still on its way
// however late, was decided on an older version and can no longer land,
// so no group is left closing without the entry that lets the repair
// finish it (TestExploreClosing, close-repair-early). A change that moved
// the version meanwhile fences as well; a group gone needs none.
func (g *Service) fence(ctx context.Context, id string) error {
	gr, err := g.groups.GetSerial(ctx, id)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil
	case err != nil:
		return err
	case gr.Status != domain.StatusActive:
		return errGroupBusy // closing by now: the next repair finishes it
	}
	next := gr
	next.Version, next.UpdatedAt = gr.Version+1, g.now()
	_, err = g.groups.Update(ctx, next)
	return err
}

// ClosingReport is what RepairClosings found and did.
type ClosingReport struct {
	// Found counts the entries of closings in progress read.
	Found int
	// Finished counts closings finished (closed, name released).
	Finished int
	// Stale counts entries of closings that never began, removed.
	Stale int
	// Problems says what was found, one line each.
	Problems []string
}

// RepairClosings finishes every closing a crash or a lost answer left in
// progress (`api admin repair-closings`): it reads the index of closings
// in progress, not the groups, and finishes each from the group row as
// any retry would. dryRun only reports.
func (g *Service) RepairClosings(ctx context.Context, dryRun bool) (ClosingReport, error) {
	var r ClosingReport
	var errs []error
	err := g.closing.Index.InProgress(ctx, func(e ClosingEntry) error {
		r.Found++
		gr, err := g.groups.GetSerial(ctx, e.GroupID)
		begun := e.GroupID + " begun at " + e.At.Format(time.RFC3339)
		switch {
		case err != nil && !errors.Is(err, domain.ErrNotFound):
			errs = append(errs, err)
		case err == nil && closingGone(gr):
			r.Problems = append(r.Problems, "closing of "+begun+" is "+string(gr.Status)+": finishing it")
			if dryRun {
				return nil
			}
			if err := g.finishClosing(ctx, gr); err != nil {
				errs = append(errs, err)
				return nil
			}
			if !e.of(gr) {
				// An entry of an attempt whose compare-and-set lost:
				// decided on an older version, it can never apply now.
				errs = append(errs, g.closing.Index.End(ctx, e))
			}
			r.Finished++
		case g.cfg.Now().Sub(e.At) < staleClosingAge:
			// Its compare-and-set may still be on its way.
		default:
			r.Problems = append(r.Problems, "closing of "+begun+" never took effect: removing its entry")
			if dryRun {
				return nil
			}
			if err := g.fence(ctx, e.GroupID); err != nil {
				errs = append(errs, err)
				return nil
			}
			if err := g.closing.Index.End(ctx, e); err != nil {
				errs = append(errs, err)
				return nil
			}
			r.Stale++
		}
		return nil
	})
	return r, errors.Join(append(errs, err)...)
}
