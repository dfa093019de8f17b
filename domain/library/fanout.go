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
// with at most SyncFanoutLimit members, in the background otherwise. Either
// way the outbox mark stays until every library has it, so a fan-out that
// fails part-way is finished by the worker.
func (s *Service) publish(ctx context.Context, next Content, prev *Content, marker string) {
	run := func(ctx context.Context) {
		if err := s.fanout(ctx, next, prev); err == nil {
			// Clearing the mark need not hold up the answer: until it is
			// gone the worker would only redo a finished fan-out.
			s.inBackground(func() { _ = s.outbox.Done(context.WithoutCancel(ctx), next.ID, marker) })
		} else {
			s.log.Warn(ctx, "fan-out stopped; the outbox worker will finish it", "content", next.ID, "error", err.Error())
		}
	}
	if prev.Members <= s.cfg.SyncFanoutLimit && next.Members <= s.cfg.SyncFanoutLimit {
		run(ctx)
		return
	}
	bg := context.WithoutCancel(ctx)
	s.inBackground(func() { run(bg) })
}

// memberPage is how many members a fan-out reads at a time.
const memberPage = 500

// fanout writes next into every member's library (or, for a deleted item,
// removes it), with bounded concurrency. prev, when known, is what the
// libraries held (its rows are deleted); otherwise each member's index
// entry says.
func (s *Service) fanout(ctx context.Context, next Content, prev *Content) error {
	after := ""
	start, written := time.Now(), 0
	for {
		members, err := s.members.Page(ctx, next.ID, after, memberPage)
		if err != nil {
			return err
		}
		if err := s.fanoutTo(ctx, next, prev, members); err != nil {
			return err
		}
		written += len(members)
		if len(members) < memberPage {
			if s.cfg.ObserveFanout != nil {
				s.cfg.ObserveFanout(written, time.Since(start))
			}
			return nil
		}
		after = members[len(members)-1].PrincipalID
	}
}

// fanoutTo updates the given members' libraries, FanoutConcurrency at once.
func (s *Service) fanoutTo(ctx context.Context, next Content, prev *Content, members []Member) error {
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
