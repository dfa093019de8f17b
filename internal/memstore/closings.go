package memstore

import (
	"context"
	"sort"
	"strings"

	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
)

// closingKey is a group_closing_attempts row's key: the UTC day the
// attempt began, the group and the attempt's tag (as repository.Closings:
// every attempt's entry is its own).
func closingKey(e groups.ClosingEntry) string {
	return e.At.UTC().Format("2006-01-02") + "|" + e.GroupID + "|" + e.Attempt
}

// Closings is the store as the index of group closings in progress
// (lifecycle.ClosingStore), written as repository.Closings writes it: every
// Begin of an entry at its start time (µs), its End one microsecond later,
// so a Begin landing after its End stays deleted. It keeps its rows in the
// store's own table map, apart from the other tables, so its calls take
// faults like every other call.
func (s *Store) Closings() lifecycle.ClosingStore { return closingStore{s} }

type closingStore struct{ s *Store }

// closings returns the table, made on first use (under the lock).
func (c closingStore) closings() map[string]versioned[groups.ClosingEntry] {
	if c.s.closings == nil {
		c.s.closings = map[string]versioned[groups.ClosingEntry]{}
	}
	return c.s.closings
}

func (c closingStore) Begin(_ context.Context, e groups.ClosingEntry) error {
	_, err := c.s.call("group_closings.insert", true, func() (bool, error) {
		putAt(c.closings(), closingKey(e), e, e.At.UnixMicro())
		return true, nil
	})
	return err
}

func (c closingStore) End(_ context.Context, e groups.ClosingEntry) error {
	_, err := c.s.call("group_closings.delete", true, func() (bool, error) {
		deleteAt(c.closings(), closingKey(e), e.At.UnixMicro()+1)
		return true, nil
	})
	return err
}

// InProgress reads the whole index in one call (the repository reads it
// a day at a time; the days are not what the explorer explores).
func (c closingStore) InProgress(_ context.Context, fn func(groups.ClosingEntry) error) error {
	var found []groups.ClosingEntry
	_, err := c.s.call("group_closings.day", false, func() (bool, error) {
		found = c.s.liveClosings()
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, e := range found {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// liveClosings lists the entries not deleted, by key (under the lock).
func (s *Store) liveClosings() []groups.ClosingEntry {
	var out []groups.ClosingEntry
	for _, c := range s.closings {
		if !c.deleted {
			out = append(out, c.v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return closingKey(out[i]) < closingKey(out[j]) })
	return out
}

// ClosingSnapshot lists the entries of closings in progress, for checks.
func (s *Store) ClosingSnapshot() []groups.ClosingEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveClosings()
}

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
