package library

import (
	"context"
	"errors"
	"sync"
	"time"
)

// apply writes one member's library, after the test hook.
func (s *Service) apply(ctx context.Context, e Entry, prev *Entry) error {
	if s.Hooks.BeforeMember != nil {
		if err := s.Hooks.BeforeMember(e.ContentID, e.PrincipalID); err != nil {
			return err
		}
	}
	return s.library.Apply(ctx, e, prev)
}

// publish fans a change out to every member: before the answer for items
// with at most SyncFanoutLimit members before and after the change, in the
// background pool otherwise (see pool). Either way the outbox mark stays until every library has it,
// so a fan-out that fails part-way, or is never started, is finished by
// the worker.
func (s *Service) publish(ctx context.Context, next Content, prev *Content, marker string) {
	if next.Placing {
		return // not placed: the outbox worker's fence places it, then fans it out
	}
	run := func(ctx context.Context) {
		if err := s.fanout(ctx, next, prev); err == nil {
			// Clearing the mark need not hold up the answer: until it is
			// gone the worker would only redo a finished fan-out.
			s.cfg.Background(func() { _ = s.outbox.Done(context.WithoutCancel(ctx), next.ID, marker) })
		} else {
			s.log.Warn(ctx, "fan-out stopped; the outbox worker will finish it", "content", next.ID, "error", err.Error())
		}
	}
	if prev.Members <= s.cfg.SyncFanoutLimit && next.Members <= s.cfg.SyncFanoutLimit {
		run(ctx)
		return
	}
	if !s.fanouts.add(next, prev, marker) {
		s.log.Warn(ctx, "background fan-out queue full or closing; left to the outbox worker", "content", next.ID)
	}
}

// errNotPlaced refuses a fan-out of an update whose place is provisional
// (see place): its rows would be at a place an oldest-first run may list
// twice.
var errNotPlaced = errors.New("the item's change is not placed yet: its fan-out waits for its place")

// memberPage is how many members a fan-out reads at a time (and how many
// index entries or rows a rebuild or a purge reads at a time).
const memberPage = 500

// fanout writes next into every member's library (or, for a deleted item,
// removes it), FanoutConcurrency members at once (see eachMember). prev,
// when known, is what the libraries held (its rows are deleted);
// otherwise each member's index entry says. After a failure no further
// member is started; the outbox mark stays and the worker finishes the
// fan-out.
func (s *Service) fanout(ctx context.Context, next Content, prev *Content) error {
	if next.Placing {
		return errNotPlaced
	}
	start := time.Now()
	written, err := s.eachMember(ctx, next.ID, func(m Member) error { return s.syncMember(ctx, next, prev, m) })
	if err != nil {
		return err
	}
	if s.cfg.ObserveFanout != nil {
		s.cfg.ObserveFanout(written, time.Since(start))
	}
	return nil
}

// eachMember runs fn for every member of an item, FanoutConcurrency at
// once, and returns how many it started. The members are read a page at a
// time, the next page as soon as the last member of the one before is
// handed out, while fn still runs for it: no worker waits for the slowest
// member of a page. After a failure no further member is started; the
// errors are joined.
func (s *Service) eachMember(ctx context.Context, contentID string, fn func(Member) error) (int, error) {
	members := make(chan Member)
	var mu sync.Mutex
	var errs []error
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(errs) > 0
	}
	var wg sync.WaitGroup
	for range max(s.cfg.FanoutConcurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range members {
				if err := fn(m); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	started, readErr := s.handOut(ctx, contentID, members, failed)
	close(members)
	wg.Wait()
	return started, errors.Join(append(errs, readErr)...)
}

// handOut reads the item's members a page at a time and hands each to the
// writers, until the last page or a failure; it returns how many it handed
// out.
func (s *Service) handOut(ctx context.Context, contentID string, to chan<- Member, failed func() bool) (int, error) {
	after, n := "", 0
	for {
		page, err := s.members.Page(ctx, contentID, after, memberPage)
		if err != nil {
			return n, err
		}
		for _, m := range page {
			if failed() {
				return n, nil
			}
			to <- m
			n++
		}
		if len(page) < memberPage {
			return n, nil
		}
		after = page[len(page)-1].PrincipalID
	}
}

// syncMember brings one member's library to next.
func (s *Service) syncMember(ctx context.Context, next Content, prev *Content, m Member) error {
	var old *Entry
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
	if old != nil && old.Version > next.Version {
		return nil // a newer change wrote this library
	}
	// An entry at next's version is not proof the rows are there: the
	// index entry is written first, and a bucket's write may have failed
	// after it. Writing them again at the same version is harmless.
	return s.apply(ctx, entryOf(next, m.PrincipalID, m.Role), old)
}
