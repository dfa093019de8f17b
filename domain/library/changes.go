package library

import (
	"context"
	"errors"
	"time"

	"shelf/domain"
)

// maxContentAttempts bounds the retries of a change that keeps losing the
// item's compare-and-set to concurrent changes: contention is retried here,
// never answered as an error.
const maxContentAttempts = 64

var (
	errNoManagerLeft = &domain.Error{Kind: domain.ErrConflict, Code: "last_manager",
		Message: "The item would be left without a manager."}
	errPrincipalNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such user or group."}
)

// Create makes an item; its creator is its first manager and finds it in
// their library.
func (s *Service) Create(ctx context.Context, p domain.Principal, in Input) (Content, error) {
	if p.Anonymous() {
		return Content{}, domain.ErrNoSession
	}
	now := s.now()
	c := Content{ID: domain.NewID(domain.ContentIDPrefix), CreatedBy: p.UserID, CreatedAt: now, LastModified: now,
		Members: 1, Managers: 1, Version: 1}
	if in.Name == nil {
		return Content{}, domain.Invalid("Some fields are not valid.", domain.FieldError{Field: "name", Code: "required", Message: "is required"})
	}
	if in.Visibility == nil {
		return Content{}, domain.Invalid("Some fields are not valid.", domain.FieldError{Field: "visibility", Code: "required", Message: "is required"})
	}
	if err := in.apply(&c); err != nil {
		return Content{}, err
	}
	marker, err := s.outbox.Mark(ctx, c.ID, nil)
	if err != nil {
		return Content{}, err
	}
	if err := s.content.Create(ctx, c); err != nil {
		return Content{}, err
	}
	creator := Member{PrincipalID: p.UserID, Role: RoleManager}
	if err := s.members.Put(ctx, c.ID, creator, c.Version); err != nil {
		return c, nil // durable with its outbox mark: the worker finishes (see complete)
	}
	if err := s.library.Apply(ctx, entryOf(c, p.UserID, RoleManager), nil); err != nil {
		return c, nil
	}
	_ = s.outbox.Done(ctx, c.ID, marker)
	return c, nil
}

// Update changes an item's fields (managers only); it gets a new
// lastModified and every member library follows.
func (s *Service) Update(ctx context.Context, p domain.Principal, id string, in Input) (Content, error) {
	if err := s.requireManager(ctx, p, id); err != nil {
		return Content{}, err
	}
	next, prev, marker, err := s.change(ctx, id, nil, func(c Content) (Content, error) {
		if err := in.apply(&c); err != nil {
			return c, err
		}
		// Strictly later than before: the library row's key changes with
		// every update, so the old row's delete never hits the new row.
		lm := s.now()
		if !lm.After(c.LastModified) {
			lm = c.LastModified.Add(time.Millisecond)
		}
		c.LastModified = lm
		return c, nil
	})
	if err != nil {
		return Content{}, err
	}
	s.publish(ctx, next, &prev, marker)
	return next, nil
}

// Delete removes an item from every library (managers only).
func (s *Service) Delete(ctx context.Context, p domain.Principal, id string) error {
	if err := s.requireManager(ctx, p, id); err != nil {
		return err
	}
	next, prev, marker, err := s.change(ctx, id, nil, func(c Content) (Content, error) {
		c.Deleted = true
		return c, nil
	})
	if err != nil {
		return err
	}
	s.publish(ctx, next, &prev, marker)
	return nil
}

// Share gives a principal (user or group) a role on an item (managers
// only): created is true for a new member.
func (s *Service) Share(ctx context.Context, p domain.Principal, id, principalID, role string) (created bool, err error) {
	if p.Anonymous() {
		return false, domain.ErrNoSession
	}
	if role != RoleViewer && role != RoleManager {
		return false, domain.Invalid("Some fields are not valid.", domain.FieldError{Field: "role", Code: "oneof", Message: "must be viewer or manager"})
	}
	if err := s.requireManager(ctx, p, id); err != nil {
		return false, err
	}
	if err := s.principalExists(ctx, principalID); err != nil {
		return false, err
	}
	var before *Member
	next, prev, marker, err := s.change(ctx, id, nil, func(c Content) (Content, error) {
		found, err := s.members.Find(ctx, id, []string{principalID})
		if err != nil {
			return c, err
		}
		before = nil
		if len(found) == 1 {
			before = &found[0]
		}
		return shareCounts(c, before, role)
	})
	if err != nil {
		return false, err
	}
	if err := s.members.Put(ctx, id, Member{PrincipalID: principalID, Role: role}, next.Version); err != nil {
		return before == nil, nil // the outbox finishes it
	}
	var old *Entry
	if before != nil {
		e := entryOf(prev, principalID, before.Role)
		old = &e
	}
	entry := entryOf(next, principalID, role)
	if err := s.apply(ctx, entry, old); err != nil {
		return before == nil, nil
	}
	if err := s.catchUp(ctx, next, func(latest Content) error {
		// A change newer than ours read the members before ours was
		// written and skipped this principal: bring it to that change.
		return s.apply(ctx, entryOf(latest, principalID, role), &entry)
	}); err == nil {
		_ = s.outbox.Done(ctx, id, marker)
	}
	return before == nil, nil
}

// shareCounts returns c with its counts once a principal that held before
// (nil: not a member) holds role. An item always keeps a manager.
func shareCounts(c Content, before *Member, role string) (Content, error) {
	if before == nil {
		c.Members++
	}
	if (before == nil || before.Role != RoleManager) && role == RoleManager {
		c.Managers++
	}
	if before != nil && before.Role == RoleManager && role != RoleManager {
		if c.Managers <= 1 {
			return c, errNoManagerLeft
		}
		c.Managers--
	}
	return c, nil
}

// catchUp closes the race between a membership change and a concurrent
// fan-out: a change that won a version after ours may have read the
// members before ours was written. Reading the item again after our
// writes, redo (at the newest version) whatever such a change may have
// missed or undone; a change that wins a version after this read reads
// the members after our writes.
func (s *Service) catchUp(ctx context.Context, ours Content, redo func(latest Content) error) error {
	latest, err := s.content.GetSerial(ctx, ours.ID)
	if err != nil || latest.Version <= ours.Version {
		return err
	}
	return redo(latest)
}

// Unshare removes a principal from an item: managers may remove anyone, a
// user may remove the item from their own library, and a group's manager
// from the group's library. An item always keeps a manager.
func (s *Service) Unshare(ctx context.Context, p domain.Principal, id, principalID string) error {
	if p.Anonymous() {
		return domain.ErrNoSession
	}
	if err := s.mayUnshare(ctx, p, id, principalID); err != nil {
		return err
	}
	var before Member
	next, prev, marker, err := s.change(ctx, id, []string{principalID}, func(c Content) (Content, error) {
		found, err := s.members.Find(ctx, id, []string{principalID})
		if err != nil {
			return c, err
		}
		if len(found) == 0 {
			return c, &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "The item is not shared with this principal."}
		}
		before = found[0]
		c.Members--
		if before.Role == RoleManager {
			if c.Managers <= 1 {
				return c, errNoManagerLeft
			}
			c.Managers--
		}
		return c, nil
	})
	if err != nil {
		return err
	}
	if err := s.members.Delete(ctx, id, principalID, next.Version); err != nil {
		return nil // the outbox purges it
	}
	old := entryOf(prev, principalID, before.Role)
	if err := s.library.Remove(ctx, principalID, id, &old, next.Version); err != nil {
		return nil
	}
	if err := s.catchUp(ctx, next, func(latest Content) error {
		// A newer change may have fanned out to this principal from a
		// member list read before the removal: remove again at its
		// version, which shadows those writes.
		e := entryOf(latest, principalID, before.Role)
		return s.library.Remove(ctx, principalID, id, &e, latest.Version)
	}); err == nil {
		_ = s.outbox.Done(ctx, id, marker)
	}
	return nil
}

// mayUnshare answers whether the caller may take principalID off the item:
// its managers and admins may remove anyone, a user the item from their own
// library, and a group's manager from the group's library.
func (s *Service) mayUnshare(ctx context.Context, p domain.Principal, id, principalID string) error {
	_, a, err := s.load(ctx, p, id)
	if err != nil || a.manage || a.admin || principalID == p.UserID {
		return err
	}
	if domain.ValidID(principalID, domain.GroupIDPrefix) {
		role, err := s.groups.MemberRole(ctx, principalID, p.UserID)
		if err != nil && !errors.Is(err, domain.ErrNotFound) {
			return err
		}
		if role == "manager" {
			return nil
		}
	}
	return domain.ErrDenied
}

// principalExists checks a user or group id.
func (s *Service) principalExists(ctx context.Context, id string) error {
	switch {
	case domain.ValidID(id, domain.UserIDPrefix):
		u, err := s.users.Get(ctx, id)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
			return errPrincipalNotFound
		}
		return err
	case domain.ValidID(id, domain.GroupIDPrefix):
		ok, err := s.groups.Exists(ctx, id)
		if err == nil && !ok {
			return errPrincipalNotFound
		}
		return err
	default:
		return errPrincipalNotFound
	}
}

// change runs one change of an item: the outbox mark first (so a crash
// after the change still fans out), then the compare-and-set of the
// content row, retried while concurrent changes win. mutate gets the
// current row and returns the next; its error aborts the change.
func (s *Service) change(ctx context.Context, id string, purge []string, mutate func(Content) (Content, error)) (next, prev Content, marker int64, err error) {
	// The mark must be durable before the compare-and-set; the first read
	// of the item need not wait for it.
	var c Content
	var markErr, readErr error
	domain.Parallel(2, func(i int) {
		if i == 0 {
			marker, markErr = s.outbox.Mark(ctx, id, purge)
		} else {
			c, readErr = s.content.GetSerial(ctx, id)
		}
	})
	if markErr != nil {
		return Content{}, Content{}, 0, markErr
	}
	err = domain.Retry(ctx, maxContentAttempts, domain.ErrBusy, func(attempt int) (bool, error) {
		if attempt > 0 {
			c, readErr = s.content.GetSerial(ctx, id)
		}
		err := readErr
		if errors.Is(err, domain.ErrNotFound) || (err == nil && c.Deleted) {
			err = errContentNotFound
		}
		if err == nil {
			next, err = mutate(c)
		}
		if err != nil {
			_ = s.outbox.Done(ctx, id, marker)
			return false, err
		}
		next.Version, prev = c.Version+1, c
		// An error leaves the mark: the worker checks what happened.
		return s.content.Update(ctx, next)
	})
	if err != nil {
		return Content{}, Content{}, 0, err
	}
	return next, prev, marker, nil
}
