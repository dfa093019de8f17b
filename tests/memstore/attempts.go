package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"shelf/domain/accounts"
)

// Attempts keeps throttled attempts as repository.Attempts does: per
// scope, a try per attempt (its row and its outcome, cells that live by
// TTLs of their own, as an insert and an update of one Cassandra row do)
// and a failure per attempt, and a mail budget's slots (a row per slot
// taken with a compare-and-set), each gone once its TTL has passed on
// the store's clock. Nothing is ever deleted.
type Attempts struct{ s *Store }

var _ accounts.AttemptStore = (*Attempts)(nil)

// Attempts is the store as the accounts' attempt store.
func (s *Store) Attempts() *Attempts { return &Attempts{s} }

// tryRow is one attempt's try: until when its row lives (Begin) and its
// outcome with until when that lives (Settle). The row reads while either
// lives.
type tryRow struct {
	a              accounts.Attempt
	rowUntil       time.Time
	outcome        accounts.Outcome
	outcomeUntil   time.Time
	outcomeWritten bool
}

// failureRow is one attempt's failure.
type failureRow struct {
	a     accounts.Attempt
	until time.Time
}

// attemptScope is one scope's rows, by attempt id, and how many writes
// it has had (AttemptWrites).
type attemptScope struct {
	tries    map[string]tryRow
	failures map[string]failureRow
	slots    map[int]slot
	writes   int
}

// attemptTables are the scopes.
type attemptTables map[string]*attemptScope

// attemptScope is scope's rows, made on first use. The caller holds s.mu.
func (s *Store) attemptScope(scope string) *attemptScope {
	if s.attempts == nil {
		s.attempts = attemptTables{}
	}
	sc := s.attempts[scope]
	if sc == nil {
		sc = &attemptScope{tries: map[string]tryRow{}, failures: map[string]failureRow{}, slots: map[int]slot{}}
		s.attempts[scope] = sc
	}
	return sc
}

// ttlUntil is when a cell written now with ttl expires: Cassandra keeps
// whole seconds, at least one.
func (s *Store) ttlUntil(ttl time.Duration) time.Time {
	return s.now.Add(max(ttl.Truncate(time.Second), time.Second))
}

// Begin writes a's try under scope, living for ttl; its outcome, if
// settled already, stays.
func (t *Attempts) Begin(_ context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	_, err := t.s.call("attempts.begin", true, func() (bool, error) {
		sc := t.s.attemptScope(scope)
		sc.writes++
		r := sc.tries[a.ID]
		r.a, r.rowUntil = a, t.s.ttlUntil(ttl)
		sc.tries[a.ID] = r
		return true, nil
	})
	return err
}

// Settle writes a's try's outcome under scope, living for ttl.
func (t *Attempts) Settle(_ context.Context, scope string, a accounts.Attempt, o accounts.Outcome, ttl time.Duration) error {
	_, err := t.s.call("attempts.settle", true, func() (bool, error) {
		sc := t.s.attemptScope(scope)
		sc.writes++
		r := sc.tries[a.ID]
		r.a, r.outcome, r.outcomeUntil, r.outcomeWritten = a, o, t.s.ttlUntil(ttl), true
		sc.tries[a.ID] = r
		return true, nil
	})
	return err
}

// Fail writes a's failure under scope, living for ttl.
func (t *Attempts) Fail(_ context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	_, err := t.s.call("attempts.fail", true, func() (bool, error) {
		sc := t.s.attemptScope(scope)
		sc.writes++
		sc.failures[a.ID] = failureRow{a: a, until: t.s.ttlUntil(ttl)}
		return true, nil
	})
	return err
}

// Read reads up to max of scope's live tries begun after triesSince and
// of its live failures after failuresSince, each oldest first.
func (t *Attempts) Read(_ context.Context, scope string, triesSince, failuresSince time.Time, max int) (accounts.Tally, error) {
	var out accounts.Tally
	_, err := t.s.call("attempts.read", false, func() (bool, error) {
		sc := t.s.attempts[scope]
		if sc == nil {
			return true, nil
		}
		now := t.s.now
		for _, r := range sc.tries {
			outcomeLive := r.outcomeWritten && now.Before(r.outcomeUntil)
			if !r.a.At.After(triesSince) || (!now.Before(r.rowUntil) && !outcomeLive) {
				continue
			}
			try := accounts.Try{Attempt: r.a}
			if outcomeLive {
				try.Outcome = r.outcome
			}
			out.Tries = append(out.Tries, try)
		}
		for _, r := range sc.failures {
			if r.a.At.After(failuresSince) && now.Before(r.until) {
				out.Failures = append(out.Failures, r.a)
			}
		}
		slices.SortFunc(out.Tries, func(x, y accounts.Try) int { return byStart(x.Attempt, y.Attempt) })
		slices.SortFunc(out.Failures, byStart)
		out.Tries = out.Tries[:min(len(out.Tries), max)]
		out.Failures = out.Failures[:min(len(out.Failures), max)]
		return true, nil
	})
	if err != nil {
		return accounts.Tally{}, err
	}
	return out, nil
}

// byStart orders attempts as the tables cluster them: by start, then id.
func byStart(x, y accounts.Attempt) int {
	if c := x.At.Compare(y.At); c != 0 {
		return c
	}
	return strings.Compare(x.ID, y.ID)
}

// AttemptWrites counts the writes each scope has had (tests: which
// partitions an attempt wrote to).
func (s *Store) AttemptWrites() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for scope, sc := range s.attempts {
		out[scope] = sc.writes
	}
	return out
}

// slot is one taken slot of a scope: its attempt and until when its row
// lives.
type slot struct {
	attempt string
	until   time.Time
}

// Slots reads scope's live slots, by number, with when each frees.
func (t *Attempts) Slots(_ context.Context, scope string) (map[int]time.Time, error) {
	out := map[int]time.Time{}
	_, err := t.s.call("attempts.slots", false, func() (bool, error) {
		sc := t.s.attempts[scope]
		if sc == nil {
			return true, nil
		}
		for n, sl := range sc.slots {
			if t.s.now.Before(sl.until) {
				out[n] = sl.until
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Take takes slot n of scope for a, living for ttl, if no live row holds
// it (INSERT IF NOT EXISTS USING TTL); a's own row found there is taken
// (a repeat).
func (t *Attempts) Take(_ context.Context, scope string, n int, a accounts.Attempt, ttl time.Duration) (bool, error) {
	return t.s.call("attempts.take", true, func() (bool, error) {
		sc := t.s.attemptScope(scope)
		if sl, held := sc.slots[n]; held && t.s.now.Before(sl.until) {
			return sl.attempt == a.ID, nil
		}
		sc.writes++
		sc.slots[n] = slot{attempt: a.ID, until: t.s.ttlUntil(ttl)}
		return true, nil
	})
}
