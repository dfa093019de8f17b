package memstore

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/lifecycle"
)

// Deletions keeps the index of account deletions in progress as
// repository.Deletions does (see dayIndex): one row per attempt (the UTC
// day it began, the user, its tag). The repository's moving start of the
// index is left out: InProgress reads every day.
type Deletions struct {
	dayIndex[accounts.DeletionEntry]
}

var _ lifecycle.DeletionStore = (*Deletions)(nil)

// Deletions is the store as the index of deletions in progress
// (lifecycle.DeletionStore).
func (s *Store) Deletions() *Deletions {
	return &Deletions{dayIndex[accounts.DeletionEntry]{s: s, table: &s.deletions, name: "account_deletions",
		key: func(e accounts.DeletionEntry) string { return e.UserID + "|" + e.Attempt },
		at:  func(e accounts.DeletionEntry) time.Time { return e.At }}}
}

// Get reads the entry of the attempt that began userID's deletion del.
func (d *Deletions) Get(_ context.Context, userID string, del domain.Deletion) (accounts.DeletionEntry, error) {
	var out accounts.DeletionEntry
	found, err := d.s.call("account_deletions.get", false, func() (bool, error) {
		c, ok := d.rows()[d.rowKey(accounts.DeletionEntry{UserID: userID, At: del.At, Attempt: del.Attempt})]
		out = c.v
		return ok && !c.deleted && c.v.At.Equal(del.At), nil
	})
	if err == nil && !found {
		return accounts.DeletionEntry{}, domain.ErrNotFound
	}
	return out, err
}

// DeletionSnapshot lists the live entries of the index, for checks.
func (s *Store) DeletionSnapshot() []accounts.DeletionEntry { return s.Deletions().snapshot() }
