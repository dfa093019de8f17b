package memstore

import (
	"strings"
	"time"

	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
)

// Closings is the store as the index of group closings in progress
// (lifecycle.ClosingStore), written as repository.Closings writes it (see
// dayIndex): one row per attempt (the day, the group, the attempt's tag).
func (s *Store) Closings() lifecycle.ClosingStore { return s.closingIndex() }

func (s *Store) closingIndex() dayIndex[groups.ClosingEntry] {
	return dayIndex[groups.ClosingEntry]{s: s, table: &s.closings, name: "group_closings",
		key: func(e groups.ClosingEntry) string { return e.GroupID + "|" + e.Attempt },
		at:  func(e groups.ClosingEntry) time.Time { return e.At }}
}

// ClosingSnapshot lists the entries of closings in progress, for checks.
func (s *Store) ClosingSnapshot() []groups.ClosingEntry { return s.closingIndex().snapshot() }

// GroupChanges is the store as the index of membership changes in
// progress (groups.ChangeIndex), written as repository.GroupChanges
// writes it: one row per attempt (the day, the group, the attempt's tag).
func (s *Store) GroupChanges() groups.ChangeIndex { return s.changeIndex() }

func (s *Store) changeIndex() dayIndex[groups.ChangeEntry] {
	return dayIndex[groups.ChangeEntry]{s: s, table: &s.groupChanges, name: "group_changes",
		key: func(e groups.ChangeEntry) string { return e.GroupID + "|" + e.Attempt },
		at:  func(e groups.ChangeEntry) time.Time { return e.At }}
}

// ChangeSnapshot lists the entries of membership changes in progress, for
// checks.
func (s *Store) ChangeSnapshot() []groups.ChangeEntry { return s.changeIndex().snapshot() }

// LibraryRows lists the live rows of every library (every bucket), by
// principal, for checks: a closed group's library must have none, and a
// deleted item none anywhere.
func (s *Store) LibraryRows() map[string][]library.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]library.Entry{}
	for k, c := range s.content.rows {
		if !c.deleted {
			principal := k[:strings.IndexByte(k, '|')]
			out[principal] = append(out[principal], c.v)
		}
	}
	return out
}
