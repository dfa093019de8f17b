package lifecycle

import (
	"context"
	"errors"
	"strconv"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/jobs"
)

// groupsToLeave reads each of the user's groups (the reverse index, then
// the group) and returns those the user is still a member of. A change
// found pending in a group is finished first (as a reader of its members
// does), so the user's role there is settled. A group found gone (closing, closed, or none) is left out once a closing still
// under way there is finished (finishClosingOf: the deletion's own,
// interrupted), so no member row of it stays. It runs in the deletion's
// job, never in its request: its cost grows with the user's groups, so
// each page of them is reported to the job (renewing its lease).
func (s *Service) groupsToLeave(ctx context.Context, userID string, p *progress) ([]string, error) {
	ids, err := s.groups.GroupIDsOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	self := domain.Principal{UserID: userID}
	var out []string
	for i, id := range ids {
		if err := p.everyPage(ctx, i); err != nil {
			return nil, err
		}
		gr, err := s.groups.GetGroup(ctx, id)
		if err == nil && gr.Pending != nil {
			if _, err = s.groups.ListMembers(ctx, self, id, "", 1); err == nil || errors.Is(err, domain.ErrForbidden) {
				_, err = s.groups.GetGroup(ctx, id)
			}
		}
		if errors.Is(err, domain.ErrNotFound) {
			if err := s.finishClosingOf(ctx, id, p); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, err := s.groups.MemberRole(ctx, id, userID); errors.Is(err, domain.ErrNotFound) {
			// Not a member, or the group began closing since it was read:
			// a closing keeps the user among its members until it is done.
			if err := s.finishClosingOf(ctx, id, p); err != nil {
				return nil, err
			}
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// leaveGroups takes the user out of every group (leaveGroup): those the
// user manages alone are handed to another member, those the user is
// alone in are closed. Each page of groups left is reported to the job.
func (s *Service) leaveGroups(ctx context.Context, id string, p *progress) error {
	ids, err := s.groupsToLeave(ctx, id, p)
	if err != nil {
		return err
	}
	for i, groupID := range ids {
		if err := p.everyPage(ctx, i); err != nil {
			return err
		}
		err := s.leaveGroup(ctx, groupID, id, p)
		if errors.Is(err, domain.ErrNotFound) {
			// Gone since it was read: a closing that began meanwhile still
			// has the user among its members until it is done.
			err = s.finishClosingOf(ctx, groupID, p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leaveRounds bounds how often leaving one group decides again after a
// refusal; past it the job's run fails and the next run goes on (never
// done with the user still in the group).
const leaveRounds = 3

// leaveGroup takes the user out of one group, as the user would. Where
// the user is the group's last manager (made so by anyone, at any time:
// decision 79), the group is handed to another member, an active one
// first (handOver; so no group is left without a manager), or, when every
// other member left, the group is closed with the account (closeAlone,
// decided on the group row, docs/design/closing.md; so a deletion never
// stops there for good). Each refusal decides again on the group as it
// then is, and so does a hand-over refused because the user is no longer
// a member or manager there (another run of the job got there first) or
// because the member chosen left or is being deleted meanwhile. It
// answers nil (or ErrNotFound: not a member, the group gone) only once
// the user's removal is done; after leaveRounds refusals the job's run
// fails, so the deletion never ends with the user still in the group.
func (s *Service) leaveGroup(ctx context.Context, groupID, id string, p *progress) error {
	self := domain.Principal{UserID: id}
	for round := 0; ; round++ {
		err := s.groups.RemoveMember(ctx, self, groupID, id)
		if !errors.Is(err, groups.ErrLastManager) {
			return err
		}
		if round == leaveRounds {
			return &domain.Error{Kind: domain.ErrConflict, Code: "last_manager",
				Message: "Group " + groupID + ": still its last manager after " + strconv.Itoa(leaveRounds) + " hand-overs; the next run decides again."}
		}
		others, next, err := s.otherMembers(ctx, groupID, id, "")
		if errors.Is(err, domain.ErrForbidden) {
			continue // no longer a member: another run of this job left the group
		}
		if err != nil {
			return err
		}
		if len(others) == 0 {
			if err := s.closeAlone(ctx, groupID, id, p); !errors.Is(err, groups.ErrLastManager) {
				return err
			}
			continue // someone joined: hand it over
		}
		switch err := s.handOver(ctx, groupID, id, others, next, p); {
		case errors.Is(err, domain.ErrForbidden):
			// No longer the group's manager: another run of this job
			// (its lease lost while a step was slow) handed it over or
			// left; the next round finds out which.
		case errors.Is(err, domain.ErrNotFound):
			// The member chosen left (not_member) or is being deleted
			// (the promotion taken back): the next round reads again.
		case err != nil:
			return err
		}
	}
}

// otherMembers reads a page of the group's members (the first: cursor
// ""), the user left out, as the user may see them, and the next page's
// cursor ("" on the last).
func (s *Service) otherMembers(ctx context.Context, groupID, userID, cursor string) (others []string, next string, err error) {
	pg, err := s.groups.ListMembers(ctx, domain.Principal{UserID: userID}, groupID, cursor, page)
	if err != nil {
		return nil, "", err
	}
	for _, m := range pg.Items {
		if m.UserID != userID {
			others = append(others, m.UserID)
		}
	}
	return others, pg.Next, nil
}

// handOver makes one of the other members of the group a manager: the
// first whose account is active, page after page from others (the first
// page's) and next (the cursor of the page after it); only when no
// visible one is active, the first suspended one (nobody else could
// manage the group, and waiting for a suspension that may never end
// would leave this account deleting, its names held, for good; the
// suspended manager acts once it is lifted, and its own deletion hands
// the group on again). With no visible member (all of them are being
// deleted too), the deletion's job waits for theirs: it fails this run,
// saying so in the job row's last_error, and the next run decides again.
// It reads on past the first page only while no active member was found:
// a job's work, never a request's, reported to the job (p) before each
// page past the first, so its lease holds however many pages it reads
// (TestAWorkerKeepsADeletionsLeaseThroughAHandOversPages).
func (s *Service) handOver(ctx context.Context, groupID, id string, others []string, next string, p *progress) error {
	suspended := ""
	for {
		for _, o := range others {
			u, err := s.accounts.Account(ctx, o)
			switch {
			case errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()):
			case err != nil:
				// Unread, it may be the active one: this run fails, and
				// the next decides again.
				return err
			case u.Status == domain.StatusActive:
				return s.promote(ctx, groupID, id, o)
			case suspended == "":
				suspended = o
			}
		}
		if next == "" {
			break
		}
		if err := p.report(ctx); err != nil {
			return err
		}
		var err error
		if others, next, err = s.otherMembers(ctx, groupID, id, next); err != nil {
			return err
		}
	}
	if suspended != "" {
		return s.promote(ctx, groupID, id, suspended)
	}
	return &domain.Error{Kind: domain.ErrConflict, Code: "last_manager",
		Message: "Group " + groupID + ": every other member is being deleted too; the group is handed over or closed once they are gone."}
}

// promote makes member a manager of the group, as the manager by; one
// who left since the members were read is not put back (ErrNotMember:
// the next round reads them again).
func (s *Service) promote(ctx context.Context, groupID, by, member string) error {
	return s.groups.Promote(ctx, domain.Principal{UserID: by}, groupID, member)
}

// closeAlone closes a group whose only member is userID, as that user
// (onlyMember); a closing this user began is finished (one another worker
// holds fails the run: closedHere).
func (s *Service) closeAlone(ctx context.Context, groupID, userID string, waiting *progress) error {
	gr, err := s.groups.BeginClosing(ctx, domain.Principal{UserID: userID}, groupID, onlyMember, s.st.Closings)
	if err != nil {
		return err
	}
	j, err := s.recordJob(ctx, closingJob(gr))
	if err != nil {
		return err
	}
	return closedHere(groupID)(s.underLease(ctx, j, func(l *jobs.Lease) error { return s.finishClosing(ctx, gr, l, waiting) }))
}
