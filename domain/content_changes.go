package domain

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// maxContentAttempts bounds the retries of a change that keeps losing the
// item's compare-and-set to concurrent changes: contention is retried here,
// never answered as an error.
const maxContentAttempts = 64

var (
	errNoManagerLeft = &Error{Kind: ErrConflict, Code: "last_manager",
		Message: "The item would be left without a manager."}
	errPrincipalNotFound = &Error{Kind: ErrNotFound, Code: "not_found", Message: "No such user or group."}
)

// Create makes an item; its creator is its first manager and finds it in
// their library.
func (s *Contents) Create(ctx context.Context, p Principal, in ContentInput) (Content, error) {
	if p.Anonymous() {
		return Content{}, errNoSession
	}
	now := s.now()
	c := Content{ID: NewID(ContentIDPrefix), CreatedBy: p.UserID, CreatedAt: now, LastModified: now,
		Members: 1, Managers: 1, Version: 1}
	if in.Name == nil {
		return Content{}, Invalid("Some fields are not valid.", FieldError{Field: "name", Code: "required", Message: "is required"})
	}
	if in.Visibility == nil {
		return Content{}, Invalid("Some fields are not valid.", FieldError{Field: "visibility", Code: "required", Message: "is required"})
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
	creator := ContentMember{PrincipalID: p.UserID, Role: RoleManager}
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
func (s *Contents) Update(ctx context.Context, p Principal, id string, in ContentInput) (Content, error) {
	if p.Anonymous() {
		return Content{}, errNoSession
	}
	if _, a, err := s.load(ctx, p, id); err != nil {
		return Content{}, err
	} else if !a.manage && !a.admin {
		return Content{}, errForbidden
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
func (s *Contents) Delete(ctx context.Context, p Principal, id string) error {
	if p.Anonymous() {
		return errNoSession
	}
	if _, a, err := s.load(ctx, p, id); err != nil {
		return err
	} else if !a.manage && !a.admin {
		return errForbidden
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
func (s *Contents) Share(ctx context.Context, p Principal, id, principalID, role string) (created bool, err error) {
	if p.Anonymous() {
		return false, errNoSession
	}
	if role != RoleViewer && role != RoleManager {
		return false, Invalid("Some fields are not valid.", FieldError{Field: "role", Code: "oneof", Message: "must be viewer or manager"})
	}
	if _, a, err := s.load(ctx, p, id); err != nil {
		return false, err
	} else if !a.manage && !a.admin {
		return false, errForbidden
	}
	if err := s.principalExists(ctx, principalID); err != nil {
		return false, err
	}
	var before *ContentMember
	next, prev, marker, err := s.change(ctx, id, nil, func(c Content) (Content, error) {
		found, err := s.members.Find(ctx, id, []string{principalID})
		if err != nil {
			return c, err
		}
		before = nil
		if len(found) == 1 {
			before = &found[0]
		}
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
	})
	if err != nil {
		return false, err
	}
	if err := s.members.Put(ctx, id, ContentMember{PrincipalID: principalID, Role: role}, next.Version); err != nil {
		return before == nil, nil // the outbox finishes it
	}
	var old *LibraryEntry
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

// catchUp closes the race between a membership change and a concurrent
// fan-out: a change that won a version after ours may have read the
// members before ours was written. Reading the item again after our
// writes, redo (at the newest version) whatever such a change may have
// missed or undone; a change that wins a version after this read reads
// the members after our writes.
func (s *Contents) catchUp(ctx context.Context, ours Content, redo func(latest Content) error) error {
	latest, err := s.content.GetSerial(ctx, ours.ID)
	if err != nil || latest.Version <= ours.Version {
		return err
	}
	return redo(latest)
}

// Unshare removes a principal from an item: managers may remove anyone, a
// user may remove the item from their own library, and a group's manager
// from the group's library. An item always keeps a manager.
func (s *Contents) Unshare(ctx context.Context, p Principal, id, principalID string) error {
	if p.Anonymous() {
		return errNoSession
	}
	_, a, err := s.load(ctx, p, id)
	if err != nil {
		return err
	}
	if !a.manage && !a.admin && principalID != p.UserID {
		allowed := false
		if ValidID(principalID, GroupIDPrefix) {
			role, err := s.groups.MemberRole(ctx, principalID, p.UserID)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			allowed = role == "manager"
		}
		if !allowed {
			return errForbidden
		}
	}
	var before ContentMember
	next, prev, marker, err := s.change(ctx, id, []string{principalID}, func(c Content) (Content, error) {
		found, err := s.members.Find(ctx, id, []string{principalID})
		if err != nil {
			return c, err
		}
		if len(found) == 0 {
			return c, &Error{Kind: ErrNotFound, Code: "not_found", Message: "The item is not shared with this principal."}
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

// principalExists checks a user or group id.
func (s *Contents) principalExists(ctx context.Context, id string) error {
	switch {
	case ValidID(id, UserIDPrefix):
		u, err := s.accounts.users.Get(ctx, id)
		if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
			return errPrincipalNotFound
		}
		return err
	case ValidID(id, GroupIDPrefix):
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
func (s *Contents) change(ctx context.Context, id string, purge []string, mutate func(Content) (Content, error)) (next, prev Content, marker int64, err error) {
	// The mark must be durable before the compare-and-set; the first read
	// of the item need not wait for it.
	var c Content
	var markErr, readErr error
	parallel(2, func(i int) {
		if i == 0 {
			marker, markErr = s.outbox.Mark(ctx, id, purge)
		} else {
			c, readErr = s.content.GetSerial(ctx, id)
		}
	})
	if markErr != nil {
		return Content{}, Content{}, 0, markErr
	}
	for attempt := 0; attempt < maxContentAttempts; attempt++ {
		if attempt > 0 {
			backoff := time.Duration(1+rand.IntN(5*min(attempt, 10))) * time.Millisecond
			if err := sleepCtx(ctx, backoff); err != nil {
				return Content{}, Content{}, 0, err
			}
			c, readErr = s.content.GetSerial(ctx, id)
		}
		err := readErr
		if errors.Is(err, ErrNotFound) || (err == nil && c.Deleted) {
			err = errContentNotFound
		}
		if err != nil {
			_ = s.outbox.Done(ctx, id, marker)
			return Content{}, Content{}, 0, err
		}
		n, err := mutate(c)
		if err != nil {
			_ = s.outbox.Done(ctx, id, marker)
			return Content{}, Content{}, 0, err
		}
		n.Version = c.Version + 1
		applied, err := s.content.Update(ctx, n)
		if err != nil {
			return Content{}, Content{}, 0, err // the mark stays: the worker checks
		}
		if applied {
			return n, c, marker, nil
		}
	}
	return Content{}, Content{}, 0, errBusy
}

func (s *Contents) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// apply writes one member's library, after the test hook.
func (s *Contents) apply(ctx context.Context, e LibraryEntry, prev *LibraryEntry) error {
	if s.Hooks.BeforeMember != nil {
		if err := s.Hooks.BeforeMember(e.ContentID, e.PrincipalID); err != nil {
			return err
		}
	}
	return s.library.Apply(ctx, e, prev)
}

// publish fans a change out to every member: before the answer for items
// with at most SyncFanoutLimit members, in the background otherwise. Either
// way the outbox mark stays until every library has it, so a fan-out that
// fails part-way is finished by the worker.
func (s *Contents) publish(ctx context.Context, next Content, prev *Content, marker int64) {
	run := func(ctx context.Context) {
		if err := s.fanout(ctx, next, prev); err == nil {
			// Clearing the mark need not hold up the answer: until it is
			// gone the worker would only redo a finished fan-out.
			go func() { _ = s.outbox.Done(context.WithoutCancel(ctx), next.ID, marker) }()
		} else {
			s.accounts.log.Warn(ctx, "fan-out stopped; the outbox worker will finish it", "content", next.ID, "error", err.Error())
		}
	}
	if prev.Members <= s.cfg.SyncFanoutLimit && next.Members <= s.cfg.SyncFanoutLimit {
		run(ctx)
		return
	}
	bg := context.WithoutCancel(ctx)
	go run(bg)
}

// memberPage is how many members a fan-out reads at a time.
const memberPage = 500

// fanout writes next into every member's library (or, for a deleted item,
// removes it), with bounded concurrency. prev, when known, is what the
// libraries held (its rows are deleted); otherwise each member's index
// entry says.
func (s *Contents) fanout(ctx context.Context, next Content, prev *Content) error {
	after := ""
	for {
		members, err := s.members.Page(ctx, next.ID, after, memberPage)
		if err != nil {
			return err
		}
		if err := s.fanoutTo(ctx, next, prev, members); err != nil {
			return err
		}
		if len(members) < memberPage {
			return nil
		}
		after = members[len(members)-1].PrincipalID
	}
}

// fanoutTo updates the given members' libraries, FanoutConcurrency at once.
func (s *Contents) fanoutTo(ctx context.Context, next Content, prev *Content, members []ContentMember) error {
	sem := make(chan struct{}, s.cfg.FanoutConcurrency)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, m := range members {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := s.syncMember(ctx, next, prev, m)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// syncMember brings one member's library to next.
func (s *Contents) syncMember(ctx context.Context, next Content, prev *Content, m ContentMember) error {
	var old *LibraryEntry
	if prev != nil {
		e := entryOf(*prev, m.PrincipalID, m.Role)
		old = &e
	} else {
		idx, err := s.library.Index(ctx, m.PrincipalID, []string{next.ID})
		if err != nil {
			return err
		}
		if e, ok := idx[next.ID]; ok {
			old = &e
		}
	}
	if next.Deleted {
		if s.Hooks.BeforeMember != nil {
			if err := s.Hooks.BeforeMember(next.ID, m.PrincipalID); err != nil {
				return err
			}
		}
		if err := s.library.Remove(ctx, m.PrincipalID, next.ID, old, next.Version); err != nil {
			return err
		}
		return s.members.Delete(ctx, next.ID, m.PrincipalID, next.Version)
	}
	if old != nil && old.Version >= next.Version {
		return nil // already there (or newer)
	}
	return s.apply(ctx, entryOf(next, m.PrincipalID, m.Role), old)
}

// DrainOutbox finishes fan-outs whose mark is older than grace (their
// change either crashed or is still running in the background): it brings
// every member library to the item's current state and purges principals
// it was removed from. It returns how many items it completed.
func (s *Contents) DrainOutbox(ctx context.Context, grace time.Duration, limit int) (int, error) {
	pending, err := s.outbox.Pending(ctx, s.cfg.Now().Add(-grace), limit)
	if err != nil {
		return 0, err
	}
	done := 0
	var errs []error
	for _, p := range pending {
		if err := s.complete(ctx, p); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.outbox.Done(ctx, p.ContentID, p.Marker); err != nil {
			errs = append(errs, err)
			continue
		}
		done++
	}
	return done, errors.Join(errs...)
}

// complete redoes one item's fan-out from its current state.
func (s *Contents) complete(ctx context.Context, p OutboxEntry) error {
	c, err := s.content.GetSerial(ctx, p.ContentID)
	if errors.Is(err, ErrNotFound) {
		return nil // the creation never happened
	}
	if err != nil {
		return err
	}
	if c.Version == 1 {
		// A creation that stopped before its creator became a member.
		if err := s.members.Put(ctx, c.ID, ContentMember{PrincipalID: c.CreatedBy, Role: RoleManager}, 1); err != nil {
			return err
		}
	}
	for _, principal := range p.Purge {
		found, err := s.members.Find(ctx, c.ID, []string{principal})
		if err != nil {
			return err
		}
		if len(found) > 0 && !c.Deleted {
			continue // shared again since
		}
		idx, err := s.library.Index(ctx, principal, []string{c.ID})
		if err != nil {
			return err
		}
		var old *LibraryEntry
		if e, ok := idx[c.ID]; ok {
			old = &e
		}
		if err := s.library.Remove(ctx, principal, c.ID, old, c.Version); err != nil {
			return err
		}
		if err := s.members.Delete(ctx, c.ID, principal, c.Version); err != nil {
			return err
		}
	}
	return s.fanout(ctx, c, nil)
}

// OutboxBacklog reports how many fan-outs are unfinished and how old the
// oldest mark is (for metrics).
func (s *Contents) OutboxBacklog(ctx context.Context) (items int, oldest time.Duration, err error) {
	now := s.cfg.Now()
	pending, err := s.outbox.Pending(ctx, now.Add(time.Hour), 100000)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range pending {
		if age := now.Sub(p.MarkedAt); age > oldest {
			oldest = age
		}
	}
	return len(pending), oldest, nil
}
