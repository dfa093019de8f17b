package lifecycle

import (
	"context"
	"errors"

	"shelf/domain"
	"shelf/domain/groups"
	"shelf/domain/jobs"
)

// membership is one of the user's groups as a deletion sees it.
type membership struct {
	GroupID string
	// Manager: the user is one of the group's managers.
	Manager bool
	// Members and Managers are the group's counts, at Version.
	Members, Managers int
	Version           int
	// Pending: a membership change is recorded and not yet finished, so
	// the counts are not settled.
	Pending bool
}

// memberships reads each of the user's groups and the user's role there.
// A change found pending in a group is finished first (as a reader of its
// members does), so the counts are settled; Pending says one was found
// again. A group found gone (closing, closed, or none) is left out and
// handed to gone: the deletion's job finishes a closing still under way
// there (finishClosingOf), its request only wakes the worker
// (wakeForGone).
func (s *Service) memberships(ctx context.Context, userID string, gone func(groupID string) error) ([]membership, error) {
	ids, err := s.groups.GroupIDsOf(ctx, userID)
	if err != nil {
		return nil, err
	}
	self := domain.Principal{UserID: userID}
	var out []membership
	for _, id := range ids {
		gr, err := s.groups.GetGroup(ctx, id)
		if err == nil && gr.Pending != nil {
			if _, err = s.groups.ListMembers(ctx, self, id, "", 1); err == nil || errors.Is(err, domain.ErrForbidden) {
				gr, err = s.groups.GetGroup(ctx, id)
			}
		}
		if errors.Is(err, domain.ErrNotFound) {
			if err := gone(id); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		role, err := s.groups.MemberRole(ctx, id, userID)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, membership{GroupID: id, Manager: role == groups.RoleManager,
			Members: gr.MemberCount, Managers: gr.ManagerCount, Version: gr.Version, Pending: gr.Pending != nil})
	}
	return out, nil
}

// wakeForGone is what a deletion's request does with a group found gone
// among the user's groups: the user's role there blocks nothing, and a
// closing still under way there is its job's (the worker, woken now),
// never the request's, whose cost stays bounded whatever the group holds
// (TestADeletionRequestRunsNoClosingJob).
func (s *Service) wakeForGone(string) error {
	s.Wake()
	return nil
}

// leaveGroups takes the user out of every group (leaveGroup). A group
// found gone whose closing is still under way (the deletion's own,
// interrupted) has that closing finished, so no member row of it stays.
func (s *Service) leaveGroups(ctx context.Context, id string) error {
	ms, err := s.memberships(ctx, id, func(groupID string) error { return s.finishClosingOf(ctx, groupID) })
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := s.leaveGroup(ctx, m.GroupID, id); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
	}
	return nil
}

// leaveRounds bounds how often leaving one group decides again after a
// refusal; past it the deletion answers 409 and its retry goes on.
const leaveRounds = 3

// leaveGroup takes the user out of one group, as the user would. The
// check before the deletion began left no group of which the user is the
// last manager, but a change since may have made them so: another manager
// left while this one still counted (the group is handed to another
// member, an active one first: handOver; so no group is left without a
// manager), or every other member left (the group is closed with the
// account: closeAlone, decided on the group row, docs/design/closing.md;
// so a deletion never stops there for good). Each refusal decides again
// on the group as it then is.
func (s *Service) leaveGroup(ctx context.Context, groupID, id string) error {
	self := domain.Principal{UserID: id}
	var err error
	for range leaveRounds {
		if err = s.groups.RemoveMember(ctx, self, groupID, id); !errors.Is(err, groups.ErrLastManager) {
			return err
		}
		others, oerr := s.otherMembers(ctx, groupID, id)
		if oerr != nil {
			return oerr
		}
		if len(others) == 0 {
			if err = s.closeAlone(ctx, groupID, id); !errors.Is(err, groups.ErrLastManager) {
				return err
			}
			continue // someone joined: hand it over
		}
		if err = s.handOver(ctx, groupID, id, others); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
	}
	return err
}

// otherMembers reads the first members of the group, the user left out,
// as the user may see them.
func (s *Service) otherMembers(ctx context.Context, groupID, userID string) ([]string, error) {
	pg, err := s.groups.ListMembers(ctx, domain.Principal{UserID: userID}, groupID, "", page)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range pg.Items {
		if m.UserID != userID {
			out = append(out, m.UserID)
		}
	}
	return out, nil
}

// handOver makes one of the other members of the group a manager: one
// whose account is active; only when every visible one is suspended, one
// of those (nobody else could manage the group, and waiting for a
// suspension that may never end would leave this account deleting, its
// names held, for good; the suspended manager acts once it is lifted, and
// its own deletion hands the group on again). With no visible member (all
// of them are being deleted too), the deletion waits for theirs (409
// last_manager; its retry goes on).
func (s *Service) handOver(ctx context.Context, groupID, id string, others []string) error {
	suspended := ""
	for _, o := range others {
		u, err := s.accounts.Account(ctx, o)
		switch {
		case err != nil || !u.Visible():
		case u.Status == domain.StatusActive:
			return s.promote(ctx, groupID, id, o)
		case suspended == "":
			suspended = o
		}
	}
	if suspended != "" {
		return s.promote(ctx, groupID, id, suspended)
	}
	return errLastManager([]domain.FieldError{{Field: "groups", Code: "last_manager",
		Message: groupID + ": every other member is being deleted; try again once they are gone"}})
}

// promote makes member a manager of the group, as the manager by.
func (s *Service) promote(ctx context.Context, groupID, by, member string) error {
	_, _, err := s.groups.SetMember(ctx, domain.Principal{UserID: by}, groupID, member, groups.RoleManager)
	return err
}

// closeAlone closes a group whose only member is userID, as that user
// (onlyMember); a closing this user began is finished.
func (s *Service) closeAlone(ctx context.Context, groupID, userID string) error {
	gr, err := s.groups.BeginClosing(ctx, domain.Principal{UserID: userID}, groupID, onlyMember, s.st.Closings)
	if err != nil {
		return err
	}
	j, err := s.recordJob(ctx, closingJob(gr))
	if err != nil {
		return err
	}
	_, err = s.underLease(ctx, j, func(l *jobs.Lease) error { return s.finishClosing(ctx, gr, l) })
	return err
}
