package groups

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// Closing a group (DELETE /v1/groups/{id}, docs/design/closing.md): the
// groups' steps of it. The workflow is domain/lifecycle's (CloseGroup):
// BeginClosing, then content's steps, then EndClosing.
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
// records (docs/design/closing.md: with one shared entry, the loser of
// two managers closing at once would end the winner's, leaving the
// closing where no repair could find it).

// ClosingEntry is one attempt of a closing as the index records it: the
// group, the attempt's tag, when it began and who asked.
type ClosingEntry struct {
	GroupID string
	Attempt string
	At      time.Time
	By      string
}

// Of reports whether e is the entry of gr's closing (the attempt whose
// compare-and-set applied).
func (e ClosingEntry) Of(gr Group) bool {
	return e.Attempt == gr.ClosingAttempt && e.At.Equal(gr.ClosedAt)
}

// ClosingIndex is where a closing records its attempt before the
// compare-and-set that begins it: the index of closings in progress,
// kept by the workflow that closes groups (domain/lifecycle), which
// repairs closings from it.
type ClosingIndex interface {
	// Begin records an attempt of a closing; writing it again is harmless.
	Begin(ctx context.Context, e ClosingEntry) error
	// End deletes this attempt's entry, never another's.
	End(ctx context.Context, e ClosingEntry) error
}

// A CloseRule decides whether p may close gr, p's role there being role
// ("" for none): nil lets the closing begin. A refusal (a *domain.Error,
// or ErrForbidden) stands only on one state of the group: BeginClosing
// reads the group again before answering it.
type CloseRule func(ctx context.Context, p domain.Principal, gr Group, role string) error

// closingPage is how many members a closing reads at a time.
const closingPage = 100

// ClosingOrClosed reports a group that is closing or closed.
func (gr Group) ClosingOrClosed() bool {
	return gr.Status == domain.StatusClosing || gr.Status == domain.StatusClosed
}

// GetSerial reads a group at SERIAL, whatever its status (ErrNotFound
// when there is none): what a closing's finish and repair decide on.
func (g *Service) GetSerial(ctx context.Context, id string) (Group, error) {
	return g.groups.GetSerial(ctx, id)
}

// BeginClosing moves the group to closing (or finds it closing or closed)
// and returns it as it then stands; the caller carries out the rest
// (domain/lifecycle: the content steps, then EndClosing). may decides who
// may close it (MayClose for DELETE /v1/groups/{id}); a closing under way
// is returned to whoever began it, or an admin (to anyone else the group
// is gone). A change pending in the group is finished first, so the
// closing is recorded on settled counts; the attempt's entry goes into
// index before the compare-and-set.
func (g *Service) BeginClosing(ctx context.Context, p domain.Principal, id string, may CloseRule, index ClosingIndex) (Group, error) {
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
		if gr.ClosingOrClosed() {
			if gr.ClosedBy != p.UserID && g.requireAdmin(ctx, p) != nil {
				return false, errGroupNotFound // gone, for everyone else
			}
			out = gr
			return true, nil
		}
		if gr.Pending != nil {
			_, err := g.finish(ctx, "close", gr)
			return false, err
		}
		if err := g.mayCloseNow(ctx, p, gr, may); err != nil {
			return g.refusalStands(ctx, gr, err)
		}
		at := g.now()
		next := gr
		next.Status, next.ClosedAt, next.ClosedBy = domain.StatusClosing, at, p.UserID
		next.ClosingAttempt = domain.NewAttempt()
		next.Version, next.UpdatedAt = gr.Version+1, at
		entry := EntryOfClosing(next)
		if err := domain.Entered(index.Begin(ctx, entry), entry.At, g.now()); err != nil {
			// This attempt sends no compare-and-set: its entry, if the
			// write landed, is ended now (else the repair's).
			return false, errors.Join(err, index.End(ctx, entry))
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
			return false, index.End(ctx, entry)
		}
		if err := g.hook("close", "cas"); err != nil {
			return false, err
		}
		out = next
		return true, nil
	})
	return out, err
}

// mayCloseNow reads p's role in gr and asks may.
func (g *Service) mayCloseNow(ctx context.Context, p domain.Principal, gr Group, may CloseRule) error {
	role, err := g.role(ctx, gr.ID, p.UserID)
	if err != nil {
		return err
	}
	return may(ctx, p, gr, role)
}

// refusalStands answers err, a refusal to close gr, only if the group is
// still as it was when refused (done false: decide again); any other
// error is returned for the retry.
func (g *Service) refusalStands(ctx context.Context, gr Group, err error) (done bool, _ error) {
	var refusal *domain.Error
	if !errors.As(err, &refusal) && !errors.Is(err, domain.ErrForbidden) {
		return false, err
	}
	now, rerr := g.groups.GetSerial(ctx, gr.ID)
	if rerr != nil {
		return false, rerr
	}
	if now.Version != gr.Version || now.Pending != nil {
		return false, nil
	}
	return true, err
}

// MayClose is who may close a group through DELETE /v1/groups/{id}: one
// of its managers, or an active admin.
func (g *Service) MayClose(ctx context.Context, p domain.Principal, _ Group, role string) error {
	if role == RoleManager {
		return nil
	}
	_, err := g.admins.RequireAdmin(ctx, p)
	if errors.Is(err, domain.ErrDenied) {
		return errNotManagerToClose // "only an admin" would hide the managers
	}
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

// EntryOfClosing is the index entry of gr's closing: the attempt the
// group row records.
func EntryOfClosing(gr Group) ClosingEntry {
	return ClosingEntry{GroupID: gr.ID, Attempt: gr.ClosingAttempt, At: gr.ClosedAt, By: gr.ClosedBy}
}

// EndClosing carries out the groups' own last steps of the closing of gr
// (closing or closed), once its content steps are done: every member row
// goes, the group is marked closed, its name is released and the entry of
// the attempt that began it (the row's) is ended. Each step is idempotent:
// what a crash left, any step may do again. paged is told after each page
// of member rows removed, so the job running the closing renews its lease
// however many members the group had (its error stops the closing).
func (g *Service) EndClosing(ctx context.Context, gr Group, index ClosingIndex, paged func() error) error {
	if err := g.removeMembers(ctx, gr, paged); err != nil {
		return err
	}
	if err := g.hook("close", "members"); err != nil {
		return err
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
	// the op found in it. A release not answered fails the run, its entry
	// kept: the entry is the last record of the name the job reads.
	if err := g.claimer.ReleaseOld(ctx, []domain.Key{{Kind: domain.KindGroupName, Key: gr.NameKey, Field: "name"}}, gr.ID, domain.NoLaterChange); err != nil {
		return err
	}
	if err := g.hook("close", "claim"); err != nil {
		return err
	}
	return index.End(ctx, EntryOfClosing(gr))
}

// removeMembers deletes every member row of the group (both tables) at
// the group's version: every member write of the group was made at an
// older version, so none landing late outlives it, and every change was
// finished before the closing was recorded, so the rows read here are all
// there are. Apply deletes a member's reverse index row before its member
// row, so a removal that failed half-way leaves the member row for the
// retry to page again. paged is told after each page.
func (g *Service) removeMembers(ctx context.Context, gr Group, paged func() error) error {
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
		if err := paged(); err != nil {
			return err
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

// Fence moves an open group's version on (a compare-and-set that changes
// nothing else) before the repair removes the entry of a closing that did
// not take effect: that closing's compare-and-set, still on its way
// however late, was decided on an older version and can no longer land,
// so no group is left closing without the entry that lets the repair
// finish it (TestExploreClosing, close-repair-early). The jobs' worker
// fences the same way before it finishes an interrupted membership change
// (finishInterrupted). Only a fence that applied is one: a compare-and-set
// that did not apply may have lost to the very attempt it fences (the
// stale closing's, landing meanwhile), so the group is read and fenced
// again, and a group found closing or closed by then is busy: its entry
// stays for the job to finish it
// (TestAClosingFenceThatLosesToTheStaleClosingKeepsItsEntry). A group
// gone needs none. A change found pending is finished first, as a reader
// of the group would, and the group read again: a fence never carries a
// pending change to a version of its own, since whoever recorded the
// change takes a lost clear or take-back for one another finisher made
// and ends its entry (TestAnAddWhoseClearLosesToAClosingFenceKeepsAnEntry).
func (g *Service) Fence(ctx context.Context, id string) error {
	return domain.Retry(ctx, maxGroupAttempts, errGroupBusy, func(int) (bool, error) {
		gr, err := g.groups.GetSerial(ctx, id)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return true, nil
		case err != nil:
			return false, err
		case gr.Status != domain.StatusActive:
			return false, errGroupBusy // closing by now: the next repair finishes it
		case gr.Pending != nil:
			_, err := g.finish(ctx, "fence", gr)
			return false, err // read again, settled
		}
		next := gr
		next.Version, next.UpdatedAt = gr.Version+1, g.now()
		return g.groups.Update(ctx, next)
	})
}
