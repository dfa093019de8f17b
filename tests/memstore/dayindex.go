package memstore

import (
	"context"
	"sort"
	"time"
)

// dayIndex is one index of work in progress by the UTC day it began
// (account deletions, group closings, moderation attempts, the job queue),
// written as the repository writes each: every Begin of an entry at its
// start (µs), its End one microsecond later, so a Begin landing after its
// End stays ended; every key names its attempt, so no attempt's end
// touches another's entry. A row is keyed by its day and its key alone
// (the repository's by its start too), and InProgress reads it a day at
// a time, by day and key (the repository reads from a start
// that moves up to the oldest open entry, oldest first, and holds an entry
// open long in a partition of its own: docs/design/jobs.md#index-start,
// proven on Cassandra by repository's TestAttemptIndex* tests: the start
// is not what the explorer explores; an attempt whose entry is
// acknowledged past domain.EntryGrant, as a Slow call's is, goes no
// further). Its calls take faults like every other call.
type dayIndex[E any] struct {
	s *Store
	// table is the Store's field holding the rows, made on first use.
	table *map[string]versioned[E]
	// name is the table's, for the calls' names (name.insert ...).
	name string
	// key names the entry within its day; at is when it began.
	key func(E) string
	at  func(E) time.Time
}

// rows returns the table, made on first use (under the lock).
func (d dayIndex[E]) rows() map[string]versioned[E] {
	if *d.table == nil {
		*d.table = map[string]versioned[E]{}
	}
	return *d.table
}

// rowKey is the entry's row: its day, then its key.
func (d dayIndex[E]) rowKey(e E) string {
	return d.at(e).UTC().Format(time.DateOnly) + "|" + d.key(e)
}

// Begin writes the entry at its start.
func (d dayIndex[E]) Begin(_ context.Context, e E) error {
	_, err := d.s.call(d.name+".insert", true, func() (bool, error) {
		putAt(d.rows(), d.rowKey(e), e, d.at(e).UnixMicro())
		return true, nil
	})
	return err
}

// End deletes the entry one microsecond after its writes.
func (d dayIndex[E]) End(_ context.Context, e E) error {
	_, err := d.s.call(d.name+".delete", true, func() (bool, error) {
		deleteAt(d.rows(), d.rowKey(e), d.at(e).UnixMicro()+1)
		return true, nil
	})
	return err
}

// InProgress calls fn with every live entry, by day and key, a day at a
// time up to the store clock's day at the pass's start, each day read
// when the pass reaches it (as the repository reads a partition at a
// time, through the day of its clock at the start): an entry begun on a
// later day up to that one while fn runs for an earlier day is read in
// the same pass, one begun on a day already read waits for the next. The
// clock given is the store's at the first read (the node's: the
// repository's pass takes the earlier of it and its process's, read once
// before any entry, and the store's processes share its clock).
func (d dayIndex[E]) InProgress(_ context.Context, fn func(E, time.Time) error) error {
	var now time.Time
	read, last := "", ""
	for first := true; first || read < last; first = false {
		var found []E
		_, err := d.s.call(d.name+".day", false, func() (bool, error) {
			if first {
				now = d.s.now
				last = now.UTC().Format(time.DateOnly)
			}
			read, found = d.dayAfter(read, last)
			return true, nil
		})
		if err != nil {
			return err
		}
		if found == nil {
			return nil
		}
		for _, e := range found {
			if err := fn(e, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// dayAfter reads the first day after the day read ("" none yet) and no
// later than last that holds a live entry: that day and its live entries
// by key; none, the last day (under the lock).
func (d dayIndex[E]) dayAfter(read, last string) (day string, found []E) {
	for _, e := range d.live() {
		k := d.at(e).UTC().Format(time.DateOnly)
		switch {
		case k <= read:
		case day == "" && k <= last:
			day = k
			found = append(found, e)
		case k == day:
			found = append(found, e)
		default:
			return day, found
		}
	}
	if day == "" {
		return last, nil
	}
	return day, found
}

// live lists the entries not ended, by day and key (under the lock).
func (d dayIndex[E]) live() []E {
	keys := make([]string, 0, len(d.rows()))
	for k, c := range d.rows() {
		if !c.deleted {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]E, len(keys))
	for i, k := range keys {
		out[i] = d.rows()[k].v
	}
	return out
}

// snapshot is live for checks (it takes the lock).
func (d dayIndex[E]) snapshot() []E {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.live()
}
