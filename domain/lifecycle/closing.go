package lifecycle

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
)

// Closing a group (DELETE /v1/groups/{id}, docs/design/closing.md).
// groups.BeginClosing moves the group to closing, its attempt recorded in
// the index first; then the content steps, idempotent and safe to repeat
// or to land late: take every item shared with the group off it through
// content's own unshare, purge what is left of its library; then
// groups.EndClosing removes the member rows, marks the group closed,
// releases its name and ends the index entry.

// CloseGroup closes a group, by one of its managers with the proof of
// owning their account (proof: the current password, and a factor's
// where the account has one; a stolen session alone must not end a group
// and its content) or an active admin by role (groups.MayClose,
// closerProven), whatever members it still has: every membership and
// every share with the group ends, and its name is freed. A repeat by
// whoever began the closing, or an admin, answers the closing's job (to
// anyone else the group is gone); a repeat of a finished one also writes
// an entry of its own, so the worker sweeps the steps again.
//
// The request does the bounded part: the closing's compare-and-set (from
// then on the group is 404 and takes no member), the job's row, and
// returns the job; a worker finishes the rest (WorkJobs), whatever the
// group holds.
func (s *Service) CloseGroup(ctx context.Context, p domain.Principal, id string, proof accounts.Proof) (jobs.Job, error) {
	if p.Anonymous() {
		return jobs.Job{}, domain.ErrNoSession
	}
	gr, err := s.groups.BeginClosing(ctx, p, id, s.closerProven(proof), s.st.Closings)
	if err != nil {
		return jobs.Job{}, err
	}
	if gr.Status == domain.StatusClosed {
		// A repeat of a finished closing sweeps its steps again (a share
		// that landed after the closing read the group's library: "Shares"
		// in docs/design/closing.md): an entry of its own, which the
		// worker's pass finishes from the group row and ends.
		sweep := groups.ClosingEntry{GroupID: gr.ID, Attempt: domain.NewAttempt(), At: s.cfg.Now().UTC().Truncate(time.Millisecond), By: p.UserID}
		if err := domain.Entered(s.st.Closings.Begin(ctx, sweep), sweep.At, s.cfg.Now()); err != nil {
			return jobs.Job{}, errors.Join(err, s.st.Closings.End(ctx, sweep))
		}
	}
	return s.recordJob(ctx, closingJob(gr))
}

// finishClosingOf finishes the closing of a group found closing (a
// deletion meets such a group among a user's groups), under its job's
// lease; any other group is left alone. A closing another worker holds
// (or took over from this one) is left to it, and the caller's run fails
// (errClosingHeld): the user is still among the group's members until
// that closing is done, so the deletion goes on in a later run. waiting
// is the deletion's progress, whose lease the closing renews as it goes.
func (s *Service) finishClosingOf(ctx context.Context, id string, waiting *progress) error {
	if !domain.ValidID(id, domain.GroupIDPrefix) {
		return nil
	}
	gr, err := s.groups.GetSerial(ctx, id)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && gr.Status != domain.StatusClosing) {
		return nil
	}
	if err != nil {
		return err
	}
	return closedHere(gr.ID)(s.underLease(ctx, closingJob(gr), func(l *jobs.Lease) error { return s.finishClosing(ctx, gr, l, waiting) }))
}

// closedHere is the outcome of a closing run under its job's lease for a
// deletion waiting on it: a closing left to another worker (ran false) is
// not done yet, so the deletion's run fails and its next run decides
// again (TestADeletionFinishesOnlyOnceAClosingHeldElsewhereIsDone).
func closedHere(groupID string) func(ran bool, err error) error {
	return func(ran bool, err error) error {
		if err == nil && !ran {
			return &domain.Error{Kind: domain.ErrConflict, Code: "closing_held",
				Message: "Group " + groupID + ": its closing is another worker's job; the next run goes on once it is done."}
		}
		return err
	}
}

// finishClosing carries out the steps of the closing of gr (closing or
// closed), each idempotent: what a crash left, any step may do again,
// under the job's lease, each step and page of items reported to it. The
// entry it writes again (and EndClosing ends) is the one of the attempt
// that began the closing (the row's); the job is finished just before.
// waiting, when set, is the progress of a job running this closing inside
// its own step: every report of the closing renews its lease too.
func (s *Service) finishClosing(ctx context.Context, gr groups.Group, l *jobs.Lease, waiting *progress) error {
	if gr.Status == domain.StatusClosing {
		// Again, in case the first write of it was lost: the repair finds
		// the closing through it until it is done.
		if err := s.st.Closings.Begin(ctx, groups.EntryOfClosing(gr)); err != nil {
			return err
		}
	}
	p := newProgress(l)
	p.waiting = waiting
	if err := p.enter(ctx, "items"); err != nil {
		return err
	}
	if err := s.dropItems(ctx, gr.ID, p); err != nil {
		return err
	}
	if err := s.closingStep("items"); err != nil {
		return err
	}
	if err := p.enter(ctx, "library"); err != nil {
		return err
	}
	if err := s.library.Purge(ctx, gr.ID, func() error { return p.report(ctx) }); err != nil {
		return err
	}
	if err := s.closingStep("library"); err != nil {
		return err
	}
	if err := p.enter(ctx, "members"); err != nil {
		return err
	}
	// Each page of members is reported too: a group of many thousands
	// takes longer than the lease to empty.
	return s.groups.EndClosing(ctx, gr, finishing{s.st.Closings, l}, func() error { return p.enter(ctx, "members") })
}

// finishing is the index of closings as EndClosing ends the entry: the
// job is finished first, so a job never reads finished while anything is
// left, and one whose end failed is still found by the next pass.
type finishing struct {
	groups.ClosingIndex
	lease *jobs.Lease
}

func (f finishing) End(ctx context.Context, e groups.ClosingEntry) error {
	if err := f.lease.Finish(ctx); err != nil {
		return err
	}
	return f.ClosingIndex.End(ctx, e)
}

// dropItems takes the group off every item of its library index, through
// content's own unshare (library.Drop): each item's counts stay exact, and
// its other members keep it.
func (s *Service) dropItems(ctx context.Context, id string, p *progress) error {
	return s.eachItem(ctx, id, p, func(it library.Entry) error { return s.library.Drop(ctx, it.ContentID, id) })
}

// ErrClosingProofRequired answers a manager's closing sent without the
// current password.
var ErrClosingProofRequired = domain.Invalid("Give your current password to close the group (and a code where your account has a second factor).",
	domain.FieldError{Field: "currentPassword", Code: "required", Message: "is required to close the group"})

// closerProven is groups.MayClose with the proof a manager gives: an
// active admin closes by role, a manager who is none proves owning their
// account (accounts.ProveCaller). So does an admin refused her role's
// power (a session without a second factor under
// SHELF_REQUIRE_ADMIN_FACTOR): that gate refuses the role, never the
// manager she also is. Asked only of a group still open, so a repeat of
// a closing under way (whose answer was lost) asks for nothing, a code
// once used included; its verdict is kept for the closing's other
// rounds, so that one request counts one proof against the throttle.
func (s *Service) closerProven(proof accounts.Proof) groups.CloseRule {
	var verdict error
	proven := false
	return func(ctx context.Context, p domain.Principal, gr groups.Group, role string) error {
		if err := s.groups.MayClose(ctx, p, gr, role); err != nil || role != groups.RoleManager {
			return err
		}
		if proven {
			return verdict
		}
		_, err := s.accounts.RequireAdmin(ctx, p)
		switch {
		case err == nil:
			return nil // an active admin, manager or not, closes by role
		case !errors.Is(err, domain.ErrDenied) && !errors.Is(err, accounts.ErrAdminFactorRequired):
			return err
		case proof.CurrentPassword == nil || *proof.CurrentPassword == "":
			verdict = ErrClosingProofRequired
		default:
			verdict = s.accounts.ProveCaller(ctx, p, proof)
		}
		proven = true
		return verdict
	}
}
