package memstore

import (
	"context"
	"sort"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Deletions keeps the index of account deletions in progress as
// repository.Deletions does: one row per user and UTC day a deletion
// began, written at the deletion's start (µs) and deleted one microsecond
// after it, so no write of an entry, however late, outlives its end. The
// repository's moving start of the index is left out: InProgress reads
// every day.
type Deletions struct{ s *Store }

var _ accounts.DeletionStore = (*Deletions)(nil)

// Deletions is the store as the accounts' index of deletions.
func (s *Store) Deletions() *Deletions { return &Deletions{s} }

// deletionKey is the entry's row: its day, then the user.
func deletionKey(userID string, at time.Time) string {
	return at.UTC().Format(time.DateOnly) + "|" + userID
}

// Begin writes the entry at its start.
func (d *Deletions) Begin(_ context.Context, e accounts.DeletionEntry) error {
	_, err := d.s.call("account_deletions.insert", true, func() (bool, error) {
		putAt(d.s.deletions, deletionKey(e.UserID, e.At), e, e.At.UnixMicro())
		return true, nil
	})
	return err
}

// End deletes the entry one microsecond after its writes.
func (d *Deletions) End(_ context.Context, e accounts.DeletionEntry) error {
	_, err := d.s.call("account_deletions.delete", true, func() (bool, error) {
		deleteAt(d.s.deletions, deletionKey(e.UserID, e.At), e.At.UnixMicro()+1)
		return true, nil
	})
	return err
}

// Get reads the entry of userID's deletion begun at at.
func (d *Deletions) Get(_ context.Context, userID string, at time.Time) (accounts.DeletionEntry, error) {
	var out accounts.DeletionEntry
	found, err := d.s.call("account_deletions.get", false, func() (bool, error) {
		c, ok := d.s.deletions[deletionKey(userID, at)]
		out = c.v
		return ok && !c.deleted && c.v.At.Equal(at), nil
	})
	if err == nil && !found {
		return accounts.DeletionEntry{}, domain.ErrNotFound
	}
	return out, err
}

// InProgress calls fn with every live entry, by day and user, as one read.
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

// liveDeletions lists the live entries by day and user (under the lock).
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
