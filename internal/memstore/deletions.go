package memstore

import (
	"context"
	"sort"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
)

// Deletions keeps the index of account deletions in progress as
// repository.Deletions does: one row per attempt (the UTC day it began,
// the user, its tag), written at the attempt's start (µs) and deleted one
// microsecond after it, so no write of an entry, however late, outlives
// its end, and no attempt's end touches another's entry. The
// repository's moving start of the index is left out: InProgress reads
// every day.
type Deletions struct{ s *Store }

var _ lifecycle.DeletionStore = (*Deletions)(nil)

// Deletions is the store as the index of deletions in progress
// (lifecycle.DeletionStore).
func (s *Store) Deletions() *Deletions { return &Deletions{s} }

// deletionKey is the entry's row: its day, the user, the attempt.
func deletionKey(userID string, at time.Time, attempt string) string {
	return at.UTC().Format(time.DateOnly) + "|" + userID + "|" + attempt
}

// Begin writes the entry at its start.
func (d *Deletions) Begin(_ context.Context, e accounts.DeletionEntry) error {
	_, err := d.s.call("account_deletions.insert", true, func() (bool, error) {
		putAt(d.s.deletions, deletionKey(e.UserID, e.At, e.Attempt), e, e.At.UnixMicro())
		return true, nil
	})
	return err
}

// End deletes the entry one microsecond after its writes.
func (d *Deletions) End(_ context.Context, e accounts.DeletionEntry) error {
	_, err := d.s.call("account_deletions.delete", true, func() (bool, error) {
		deleteAt(d.s.deletions, deletionKey(e.UserID, e.At, e.Attempt), e.At.UnixMicro()+1)
		return true, nil
	})
	return err
}

// Get reads the entry of the attempt that began userID's deletion del.
func (d *Deletions) Get(_ context.Context, userID string, del domain.Deletion) (accounts.DeletionEntry, error) {
	var out accounts.DeletionEntry
	found, err := d.s.call("account_deletions.get", false, func() (bool, error) {
		c, ok := d.s.deletions[deletionKey(userID, del.At, del.Attempt)]
		out = c.v
		return ok && !c.deleted && c.v.At.Equal(del.At), nil
	})
	if err == nil && !found {
		return accounts.DeletionEntry{}, domain.ErrNotFound
	}
	return out, err
}

// InProgress calls fn with every live entry, by day, user and attempt, as
// one read.
func (d *Deletions) InProgress(_ context.Context, fn func(accounts.DeletionEntry) error) error {
	var entries []accounts.DeletionEntry
	_, err := d.s.call("account_deletions.day", false, func() (bool, error) {
		entries = d.s.liveDeletions()
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// liveDeletions lists the live entries by key (under the lock).
func (s *Store) liveDeletions() []accounts.DeletionEntry {
	keys := make([]string, 0, len(s.deletions))
	for k, c := range s.deletions {
		if !c.deleted {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]accounts.DeletionEntry, len(keys))
	for i, k := range keys {
		out[i] = s.deletions[k].v
	}
	return out
}

// DeletionSnapshot lists the live entries of the index, for checks.
func (s *Store) DeletionSnapshot() []accounts.DeletionEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveDeletions()
}
