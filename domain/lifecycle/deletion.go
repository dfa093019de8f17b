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

// Deleting an account (DELETE /v1/users/{id}, docs/design/deletion.md).
// The request: beginDeletion moves the account to deleting, its attempt
// recorded in the index first; the job's row is written and the request
// answers with it (202). The request reads none of the user's groups, so
// its cost is the same whatever they are, and nobody can hold a deletion
// back by making the user a group's last manager (decision 79). The job
// (jobs.go, on any process): each step, idempotent and safe to repeat or
// to land late: erase a suspension's records, leave every group (handing
// those the user manages alone to another member, closing those the user
// is alone in: leaveGroups), delete the items the user owns and leave the
// others', purge what is left of the library; then accounts.MarkDeleted,
// the names released, every session ended, the job finished and the index
// entry ended.

// DeleteUser begins the deletion of an account, by the user or an active
// admin, and returns its job: from here the account is invisible, no
// login or session works, and a worker finishes the rest (WorkJobs). A
// deletion already under way, or done, returns its job as it stands. The
// sessions are ended by the job, last, so the user's repeat whose answer
// was lost still authenticates until then (see Authenticate) and finds
// the job. The user proves the current password; an admin gives none,
// and may not delete another admin (accounts.AskDeletion). The request
// reads and writes a bounded number of rows, whatever the account holds.
func (s *Service) DeleteUser(ctx context.Context, p domain.Principal, id string, proof accounts.Proof) (jobs.Job, error) {
	u, err := s.beginDeletion(ctx, p, id, proof)
	if err != nil {
		return jobs.Job{}, err
	}
	if err := s.deletionStep("begun"); err != nil {
		return jobs.Job{}, err
	}
	if u.Status == domain.StatusDeleted {
		// A repeat of a finished deletion sweeps its steps again (a write
		// that landed late): an entry of its own, which the worker's pass
		// finishes from the account row and ends.
		sweep := accounts.DeletionEntry{UserID: u.ID, Attempt: domain.NewAttempt(), At: s.cfg.Now().UTC().Truncate(time.Millisecond), By: p.UserID}
		if err := domain.Entered(s.st.Deletions.Begin(ctx, sweep), sweep.At, s.cfg.Now()); err != nil {
			return jobs.Job{}, errors.Join(err, s.st.Deletions.End(ctx, sweep))
		}
	}
	return s.recordJob(ctx, deletionJob(u))
}

// maxDeletionRounds bounds the rounds of a deletion's compare-and-set
// that lost a race with another change of the account.
const maxDeletionRounds = 8

// beginDeletion moves the account to deleting (or finds it deleting or
// deleted) and returns it as it then stands. Each round: the account
// read at SERIAL (accounts.Deletion.Read), the compare-and-set staged,
// this attempt's entry in the index of deletions, then the
// compare-and-set. The entry is written before the compare-and-set so
// the repair finds every deletion that may have begun; every attempt's
// entry is its own, so an attempt that lost ends only its own and leaves
// the winner's.
func (s *Service) beginDeletion(ctx context.Context, p domain.Principal, id string, proof accounts.Proof) (domain.User, error) {
	d, err := s.accounts.AskDeletion(ctx, p, id, proof)
	if err != nil {
		return domain.User{}, err
	}
	var out domain.User
	err = domain.Retry(ctx, maxDeletionRounds, domain.ErrBusy, func(int) (bool, error) {
		u, begun, err := d.Read(ctx)
		if err != nil {
			return false, err
		}
		if begun {
			out = u
			return true, nil
		}
		entry, err := d.Stage(ctx)
		if err != nil {
			return false, err
		}
		if err := domain.Entered(s.st.Deletions.Begin(ctx, entry), entry.At, s.cfg.Now()); err != nil {
			// This attempt sends no compare-and-set: its entry, if the
			// write landed, is ended now (else the repair's).
			return false, errors.Join(err, s.st.Deletions.End(ctx, entry))
		}
		if err := s.deletionStep("entry"); err != nil {
			return false, err
		}
		next, applied, err := d.Apply(ctx)
		switch {
		case err != nil:
			// Unknown: the account may be deleting now or later; the entry
			// stays for the retry or the repair.
			return false, err
		case !applied:
			// Another change won: this attempt never began a deletion.
			// Its entry is its own, so ending it leaves the winner's.
			return false, s.st.Deletions.End(ctx, entry)
		}
		out = next
		return true, nil
	})
	return out, err
}

// entryOf is the index entry of the deletion u records (a deleting row
// still has its keys; a deleted one has none, and its entry is read from
// the index: releaseNames).
func entryOf(u domain.User) accounts.DeletionEntry {
	return accounts.DeletionEntry{UserID: u.ID, Attempt: u.Deletion.Attempt, At: u.Deletion.At, By: u.Deletion.By,
		UsernameKey: u.UsernameKey, EmailKey: u.EmailKey}
}

// finishDeletion carries out the steps of the deletion of u (deleting or
// deleted), each idempotent: what a crash left, any step may do again. It
// runs under the job's lease, reporting each step and each page of items
// to it; the job is finished just before the index entry ends, so a job
// never reads finished while anything is left, and a deletion whose last
// writes failed is still found by the next pass. The entry it writes
// again and ends is the one of the attempt that began the deletion (the
// row's).
func (s *Service) finishDeletion(ctx context.Context, u domain.User, l *jobs.Lease) error {
	id := u.ID
	entry := entryOf(u)
	if u.Status == domain.StatusDeleting {
		// Again, in case the first write of it was lost: the repair finds
		// the deletion through it until it is done.
		if err := s.st.Deletions.Begin(ctx, entry); err != nil {
			return err
		}
		// The admin's entries the row carries (his deletion of it, or his
		// change before it whose write failed), before any step: a step
		// may fail run after run, and the audit of every account must
		// not wait for the mark deleting -> deleted to list them
		// (TestAnAdminsActionOnADeletingAccountIsInTheAuditOfEveryAccountBeforeItsJobEnds).
		if err := s.accounts.RecordCarried(ctx, u); err != nil {
			return err
		}
	}
	access := u.Access()
	self := domain.Principal{UserID: id, Account: &access}
	p := newProgress(l)
	steps := []struct {
		name string
		run  func() error
	}{
		{"suspension", func() error { return s.moderation.EraseDeleted(ctx, u) }},
		{"groups", func() error { return s.leaveGroups(ctx, id, p) }},
		{"items", func() error { return s.leaveItems(ctx, self, p) }},
		{"library", func() error { return s.library.Purge(ctx, id, func() error { return p.report(ctx) }) }},
	}
	for _, st := range steps {
		if err := p.enter(ctx, st.name); err != nil {
			return err
		}
		if err := st.run(); err != nil {
			return err
		}
		if err := s.deletionStep(st.name); err != nil {
			return err
		}
	}
	if err := p.enter(ctx, "names"); err != nil {
		return err
	}
	if u.Status == domain.StatusDeleting {
		if err := s.accounts.MarkDeleted(ctx, id); err != nil {
			return err
		}
		if err := s.deletionStep("deleted"); err != nil {
			return err
		}
	}
	// The keys the row held for the user (a username left, an address
	// asked for or held for a revert), kept in the deleted row until
	// their claims are given back: the row is their only record.
	if err := s.accounts.ReleaseHeld(ctx, id); err != nil {
		return err
	}
	entry, err := s.releaseNames(ctx, u, entry)
	if err != nil {
		return err
	}
	// Then the sessions: until here the user's repeat of the request
	// authenticates and finds the job. The index entry ends last, so a
	// deletion whose last writes failed is still the next pass's to
	// finish, the sessions included. The second factors go with them:
	// no secret or name of the user's is left.
	if err := s.accounts.EndFactors(ctx, id); err != nil {
		return err
	}
	if err := s.endSessions(ctx, id, p); err != nil {
		return err
	}
	if err := s.deletionStep("sessions"); err != nil {
		return err
	}
	if err := l.Finish(ctx); err != nil {
		return err
	}
	// Ended even when its own row is gone: an end that deleted the row
	// and failed at the entry's held copy leaves the copy for the passes
	// to read (docs/design/jobs.md#index-start), and only this end
	// forgets it (TestADeletionWhoseEndFailedAtItsHeldCopyIsEndedByTheNextPass).
	return s.st.Deletions.End(ctx, entry)
}

// endSessions ends every session of the user, the user's own included,
// a page at a time (JobItemsAtOnce at once, as items are), reporting the
// step again before each page past the first: a user may hold tens of
// thousands of sessions (one a login), and a step that outlasts the lease
// silently is taken over by another worker, which runs the whole deletion
// again beside this one (TestAWorkerKeepsADeletionsLeaseThroughItsSessions).
func (s *Service) endSessions(ctx context.Context, id string, p *progress) error {
	sessions, err := s.accounts.SessionsOf(ctx, id)
	if err != nil {
		return err
	}
	for start := 0; start < len(sessions); start += page {
		if err := p.everyPage(ctx, start); err != nil {
			return err
		}
		if err := atOnce(s.cfg.JobItemsAtOnce, sessions[start:min(start+page, len(sessions))], func(sess domain.Session) error {
			return s.accounts.EndSession(ctx, sess)
		}); err != nil {
			return err
		}
	}
	return nil
}

// releaseNames gives back the names of a deleted account (each only while
// it is still its committed claim, with the op found in it) and returns
// the index entry to end. The keys of an account that was deleting when
// this call began are in entry; a deleted row has none, so they are read
// from the index entry, and without one the deletion was finished before
// (or its names are taken over anyway: Holder), and entry, the row's
// attempt without keys, is what is ended. A release that failed fails
// the run: the entry, not ended, is what the next pass releases from.
func (s *Service) releaseNames(ctx context.Context, u domain.User, entry accounts.DeletionEntry) (accounts.DeletionEntry, error) {
	if u.Status == domain.StatusDeleted {
		stored, err := s.st.Deletions.Get(ctx, u.ID, *u.Deletion)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return entry, nil
		case err != nil:
			return entry, err
		}
		entry = stored
	}
	if err := s.accounts.ReleaseNames(ctx, entry); err != nil {
		// The entry, kept, is the only record of the keys: the run fails
		// and the next pass gives them back.
		return entry, err
	}
	return entry, s.deletionStep("claims")
}

// leaveItems deletes the items the user owns (made them and manages them,
// or is the last manager of) and takes the user off every other item,
// through content's own change path: every library follows, and the
// owners' member counts stay exact. Each page is reported to the job.
func (s *Service) leaveItems(ctx context.Context, self domain.Principal, p *progress) error {
	return s.eachItem(ctx, self.UserID, p, func(it library.Entry) error { return s.leaveItem(ctx, self, it) })
}

// leaveItem deletes one item the user owns, or leaves it.
func (s *Service) leaveItem(ctx context.Context, self domain.Principal, it library.Entry) error {
	if it.Role == library.RoleManager {
		c, err := s.library.Get(ctx, self, it.ContentID)
		if err != nil {
			return err
		}
		if c.CreatedBy == self.UserID {
			return s.library.Delete(ctx, self, it.ContentID)
		}
	}
	// Left, or deleted if nobody else manages it (it is then the user's
	// to take away), decided in one change on the row it writes on: a
	// manager added after a refused leave keeps the item
	// (TestADeletionThatFoundTheLastManagerDeletesNothingAManagerWasAddedTo).
	return s.library.Drop(ctx, it.ContentID, self.UserID)
}

// onlyMember is the rule of the deletion's own closing of a group: the
// user may close it only as its one member, decided on the group row's
// exact count in the compare-and-set (a group with others is refused as a
// removal would be; one the user is not in, ErrNotMember).
func onlyMember(_ context.Context, _ domain.Principal, gr groups.Group, role string) error {
	switch {
	case role == "":
		return groups.ErrNotMember
	case gr.MemberCount > 1:
		return groups.ErrLastManager
	}
	return nil
}
