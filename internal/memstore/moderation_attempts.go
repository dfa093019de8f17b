package memstore

import (
	"context"
	"sort"
	"time"

	"shelf/domain/moderation"
)

// ModerationAttempts is the store as the index of suspensions and
// unsuspensions in progress (moderation.AttemptIndex), written as
// repository.ModerationAttempts writes it: each entry at its start (µs),
// its end one microsecond later, so a Begin landing after its End stays
// ended. Its calls take faults like every other call.
func (s *Store) ModerationAttempts() moderation.AttemptIndex { return modAttempts{s} }

type modAttempts struct{ s *Store }

// rows returns the table, made on first use (under the lock).
func (m modAttempts) rows() map[string]versioned[moderation.Attempt] {
	if m.s.modAttempts == nil {
		m.s.modAttempts = map[string]versioned[moderation.Attempt]{}
	}
	return m.s.modAttempts
}

func modAttemptKey(a moderation.Attempt) string {
	return a.At.UTC().Format(time.DateOnly) + "|" + a.UserID + "|" + a.Tag
}

func (m modAttempts) Begin(_ context.Context, a moderation.Attempt) error {
	_, err := m.s.call("moderation_attempts.insert", true, func() (bool, error) {
		putAt(m.rows(), modAttemptKey(a), a, a.At.UnixMicro())
		return true, nil
	})
	return err
}

func (m modAttempts) End(_ context.Context, a moderation.Attempt) error {
	_, err := m.s.call("moderation_attempts.delete", true, func() (bool, error) {
		deleteAt(m.rows(), modAttemptKey(a), a.At.UnixMicro()+1)
		return true, nil
	})
	return err
}

// InProgress reads the whole index in one call.
func (m modAttempts) InProgress(_ context.Context, fn func(moderation.Attempt) error) error {
	var found []moderation.Attempt
	_, err := m.s.call("moderation_attempts.day", false, func() (bool, error) {
		found = m.s.liveModAttempts()
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, a := range found {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// liveModAttempts lists the live entries by key (under the lock).
func (s *Store) liveModAttempts() []moderation.Attempt {
	keys := make([]string, 0, len(s.modAttempts))
	for k, c := range s.modAttempts {
		if !c.deleted {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]moderation.Attempt, len(keys))
	for i, k := range keys {
		out[i] = s.modAttempts[k].v
	}
	return out
}

// ModerationAttemptSnapshot lists the live entries, for checks.
func (s *Store) ModerationAttemptSnapshot() []moderation.Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveModAttempts()
}
