package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"shelf/domain/accounts"
)

// Attempts keeps throttled attempts as repository.Attempts does: a row per
// attempt and scope, gone once its TTL has passed on the store's clock; a
// removal shadows the row's write even when that write lands later (the
// repository's delete is at the write's timestamp + 1).
type Attempts struct{ s *Store }

var _ accounts.AttemptStore = (*Attempts)(nil)

// Attempts is the store as the accounts' attempt store.
func (s *Store) Attempts() *Attempts { return &Attempts{s} }

// attemptRow is one attempt's row: until when it lives, or that it was
// removed.
type attemptRow struct {
	a       accounts.Attempt
	expires time.Time
	removed bool
}

// attemptTables are the rows by scope, then attempt id.
type attemptTables map[string]map[string]attemptRow

// attemptRows is scope's rows, made on first use. The caller holds s.mu.
func (s *Store) attemptRows(scope string) map[string]attemptRow {
	if s.attempts == nil {
		s.attempts = attemptTables{}
	}
	rows := s.attempts[scope]
	if rows == nil {
		rows = map[string]attemptRow{}
		s.attempts[scope] = rows
	}
	return rows
}

// Add writes one attempt's row under scope, living for ttl from now; a
// row removed already stays removed.
func (t *Attempts) Add(_ context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	_, err := t.s.call("attempts.add", true, func() (bool, error) {
		rows := t.s.attemptRows(scope)
		if rows[a.ID].removed {
			return true, nil
		}
		rows[a.ID] = attemptRow{a: a, expires: t.s.now.Add(max(ttl.Truncate(time.Second), time.Second))}
		return true, nil
	})
	return err
}

// List reads up to max of the scope's live attempts, oldest first.
func (t *Attempts) List(_ context.Context, scope string, max int) ([]accounts.Attempt, error) {
	var out []accounts.Attempt
	_, err := t.s.call("attempts.list", false, func() (bool, error) {
		for _, r := range t.s.attempts[scope] {
			if !r.removed && t.s.now.Before(r.expires) {
				out = append(out, r.a)
			}
		}
		slices.SortFunc(out, func(x, y accounts.Attempt) int {
			if c := x.At.Compare(y.At); c != 0 {
				return c
			}
			return strings.Compare(x.ID, y.ID)
		})
		out = out[:min(len(out), max)]
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Remove deletes one attempt's row, for good.
func (t *Attempts) Remove(_ context.Context, scope string, a accounts.Attempt) error {
	_, err := t.s.call("attempts.remove", true, func() (bool, error) {
		rows := t.s.attemptRows(scope)
		rows[a.ID] = attemptRow{a: a, removed: true}
		return true, nil
	})
	return err
}
