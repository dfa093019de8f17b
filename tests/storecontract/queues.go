package storecontract

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/jobs"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
)

// Outbox runs OutboxChecks in order: Pending reads the whole queue, so on
// a real node they need tables no other test writes, and each leaves the
// queue empty.
func Outbox(t *testing.T, open Open[library.Outbox]) { RunInOrder(t, open, OutboxChecks) }

// SkewedOutbox is an outbox and the same outbox as processes whose clocks
// disagree with it see it.
type SkewedOutbox struct {
	Outbox library.Outbox
	// Skewed is the outbox on a clock d ahead of Outbox's.
	Skewed func(d time.Duration) library.Outbox
}

// OutboxStart runs OutboxStartChecks in order. They move the outbox's
// start ahead of the clock, so on a real node they come after every other
// check of the outbox's keyspace.
func OutboxStart(t *testing.T, open Open[SkewedOutbox]) { RunInOrder(t, open, OutboxStartChecks) }

// OutboxStartChecks are the contract of the outbox's moving start.
var OutboxStartChecks = []Check[SkewedOutbox]{
	{"AReaderAheadMovesTheStartByTheNodesClock", outboxStartMoves},
}

// outboxStartMoves: a reader whose clock runs 10 minutes ahead moves the
// outbox's start past the empty windows that ended two minutes (the
// horizon) before the node's clock, not its own: a mark made on time
// afterwards is listed, by it and by a reader on time; one made on a
// clock 10 minutes behind (as a write landing that late would be) lies
// behind the start and is listed by neither.
func outboxStartMoves(t testing.TB, s SkewedOutbox, c Clock) {
	ctx := context.Background()
	ahead := s.Skewed(10 * time.Minute)
	if _, err := ahead.Pending(ctx, c.Now().Add(10*time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	onTime, behind := Key("item"), Key("item")
	onTimeMark, err := s.Outbox.Mark(ctx, onTime)
	if err != nil {
		t.Fatal(err)
	}
	behindMark, err := s.Skewed(-10*time.Minute).Mark(ctx, behind)
	if err != nil {
		t.Fatal(err)
	}
	listed := func(o library.Outbox, before time.Time) []string {
		t.Helper()
		entries, err := o.Pending(ctx, before, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.ContentID)
		}
		return out
	}
	c.Pass(time.Millisecond) // the mark made on time is before the readers' now
	for _, r := range []struct {
		name   string
		o      library.Outbox
		before time.Time
	}{{"ahead", ahead, c.Now().Add(10 * time.Minute)}, {"on time", s.Outbox, c.Now()}} {
		if got := listed(r.o, r.before); !slices.Equal(got, []string{onTime}) {
			t.Fatalf("the reader %s lists %v, want only the mark made on time (%s), not the one behind the start (%s)", r.name, got, onTime, behind)
		}
	}
	for _, m := range []struct{ item, marker string }{{onTime, onTimeMark.Marker}, {behind, behindMark.Marker}} {
		if err := s.Outbox.Done(ctx, m.item, m.marker); err != nil {
			t.Fatal(err)
		}
	}
	if got := listed(ahead, c.Now().Add(10*time.Minute)); len(got) != 0 {
		t.Fatalf("marks left after Done: %v", got)
	}
}

// OutboxChecks are library.Outbox's contract.
var OutboxChecks = []Check[library.Outbox]{
	{"DoneTakesOneMark", outboxMarks},
	{"PendingListsAMarkOnlyPastItsTime", outboxMarkTimes},
	{"PendingTakesTheWholeMillisecondOfBefore", outboxMarkMillisecond},
}

// outboxMarkMillisecond: Pending(before) lists a mark made within
// before's own millisecond, after before itself: the repository bounds its
// read by maxTimeuuid(before), the last time UUID of that millisecond, and
// the outbox worker counts on it (library.Service.DrainOutbox's taken is
// before plus a millisecond). So the worker whose cut-off (its clock less
// the grace, in whole milliseconds) is the mark's millisecond takes it. A
// mark in a window's first millisecond is read by no such Pending (the
// windows read are those that begin before before: a minute wide), so
// the check makes its marks until one is not.
func outboxMarkMillisecond(t testing.TB, s library.Outbox, c Clock) {
	ctx := context.Background()
	var m library.OutboxEntry
	for {
		var err error
		if m, err = s.Mark(ctx, Key("item")); err != nil {
			t.Fatal(err)
		}
		if !m.MarkedAt.Truncate(time.Millisecond).Equal(m.MarkedAt.Truncate(time.Minute)) {
			break
		}
		if err := s.Done(ctx, m.ContentID, m.Marker); err != nil {
			t.Fatal(err)
		}
		c.Pass(time.Millisecond)
	}
	c.Pass(time.Millisecond) // the readers' clocks are past the mark
	before := m.MarkedAt.Truncate(time.Millisecond)
	got, err := s.Pending(ctx, before, 100)
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.ContainsFunc(got, func(e library.OutboxEntry) bool { return e.Marker == m.Marker })
	if err := s.Done(ctx, m.ContentID, m.Marker); err != nil {
		t.Fatal(err)
	}
	if !listed {
		t.Fatalf("a mark made at %v is not listed by Pending(%v), its own millisecond: %+v",
			m.MarkedAt.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), got)
	}
}

// outboxMarkTimes: Pending(before) lists a mark only if it was made
// before before's millisecond ended, at the time Mark answered (the
// outbox worker's fence records that bound: library.Service.fence), and
// lists it once before is past that time.
func outboxMarkTimes(t testing.TB, s library.Outbox, _ Clock) {
	ctx := context.Background()
	m, err := s.Mark(ctx, Key("item"))
	if err != nil {
		t.Fatal(err)
	}
	listed := func(before time.Time) *library.OutboxEntry {
		t.Helper()
		got, err := s.Pending(ctx, before, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if e.Marker == m.Marker {
				return &e
			}
		}
		return nil
	}
	if e := listed(m.MarkedAt.Truncate(time.Millisecond).Add(-time.Millisecond)); e != nil {
		t.Fatalf("a mark made at %v is listed by a read before the millisecond before it: %+v", m.MarkedAt, *e)
	}
	e := listed(m.MarkedAt.Add(time.Millisecond))
	if e == nil || !e.MarkedAt.Equal(m.MarkedAt) || e.ContentID != m.ContentID {
		t.Fatalf("a read past the mark lists %+v, want the mark as Mark answered it (%+v)", e, m)
	}
	if err := s.Done(ctx, m.ContentID, m.Marker); err != nil {
		t.Fatal(err)
	}
}

// outboxMarks: every mark is its own record, listed once until it is
// done, up to the limit; done takes that mark alone.
func outboxMarks(t testing.TB, s library.Outbox, c Clock) {
	ctx := context.Background()
	items := []string{Key("item"), Key("item"), Key("item")}
	type mark struct{ item, marker string }
	var marks []mark
	for _, item := range []string{items[0], items[1], items[2], items[0]} {
		m, err := s.Mark(ctx, item)
		if err != nil {
			t.Fatal(err)
		}
		marks = append(marks, mark{item, m.Marker})
	}
	if marks[0].marker == marks[3].marker {
		t.Fatalf("two marks of one item share the marker %s", marks[0].marker)
	}
	pending := func(limit int) []string {
		t.Helper()
		got, err := s.Pending(ctx, c.Now().Add(time.Minute), limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > limit {
			t.Fatalf("%d pending marks, limit %d", len(got), limit)
		}
		var out []string
		for _, e := range got {
			out = append(out, e.ContentID+"/"+e.Marker)
		}
		slices.Sort(out)
		return out
	}
	want := func(ms ...mark) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.item+"/"+m.marker)
		}
		slices.Sort(out)
		return out
	}
	if got := pending(10); !slices.Equal(got, want(marks...)) {
		t.Fatalf("pending: %v, want every mark once: %v", got, want(marks...))
	}
	if got := pending(2); len(got) != 2 {
		t.Fatalf("pending, limit 2: %v", got)
	}
	if err := s.Done(ctx, marks[0].item, marks[0].marker); err != nil {
		t.Fatal(err)
	}
	if got := pending(10); !slices.Equal(got, want(marks[1:]...)) {
		t.Fatalf("pending after one mark of %s is done: %v, want %v", marks[0].item, got, want(marks[1:]...))
	}
	for _, m := range marks[1:] {
		if err := s.Done(ctx, m.item, m.marker); err != nil {
			t.Fatal(err)
		}
	}
	if got := pending(10); len(got) != 0 {
		t.Fatalf("pending after every mark is done: %v", got)
	}
}

// entryIndex is an index of operations in progress (account deletions,
// group closings, membership changes, moderation's attempts, the job
// queue) seen through one shape: E is its entry.
type entryIndex[E any] struct {
	begin, end func(ctx context.Context, e E) error
	inProgress func(ctx context.Context, fn func(E, time.Time) error) error
	// entry makes an entry of id's attempt begun at at; id reads it back.
	entry func(id, attempt string, at time.Time) E
	id    func(E) string
	// get, when set, reads an entry by its attempt.
	get func(ctx context.Context, e E) (E, error)
}

// Deletions runs DeletionChecks.
func Deletions(t *testing.T, open Open[lifecycle.DeletionStore]) { Run(t, open, DeletionChecks) }

// DeletionChecks are lifecycle.DeletionStore's contract.
var DeletionChecks = indexChecks(func(s lifecycle.DeletionStore) entryIndex[accounts.DeletionEntry] {
	return entryIndex[accounts.DeletionEntry]{begin: s.Begin, end: s.End, inProgress: s.InProgress,
		entry: func(id, attempt string, at time.Time) accounts.DeletionEntry {
			return accounts.DeletionEntry{UserID: id, Attempt: attempt, At: At(at), By: id, UsernameKey: id, EmailKey: id}
		},
		id: func(e accounts.DeletionEntry) string { return e.UserID + "/" + e.Attempt },
		get: func(ctx context.Context, e accounts.DeletionEntry) (accounts.DeletionEntry, error) {
			return s.Get(ctx, e.UserID, domain.Deletion{At: e.At, By: e.By, Attempt: e.Attempt})
		}}
})

// Closings runs ClosingChecks.
func Closings(t *testing.T, open Open[lifecycle.ClosingStore]) { Run(t, open, ClosingChecks) }

// ClosingChecks are lifecycle.ClosingStore's contract.
var ClosingChecks = indexChecks(func(s lifecycle.ClosingStore) entryIndex[groups.ClosingEntry] {
	return entryIndex[groups.ClosingEntry]{begin: s.Begin, end: s.End, inProgress: s.InProgress,
		entry: func(id, attempt string, at time.Time) groups.ClosingEntry {
			return groups.ClosingEntry{GroupID: id, Attempt: attempt, At: At(at), By: "admin"}
		},
		id: func(e groups.ClosingEntry) string { return e.GroupID + "/" + e.Attempt }}
})

// GroupChanges runs GroupChangeChecks.
func GroupChanges(t *testing.T, open Open[groups.ChangeIndex]) { Run(t, open, GroupChangeChecks) }

// GroupChangeChecks are groups.ChangeIndex's contract.
var GroupChangeChecks = indexChecks(func(s groups.ChangeIndex) entryIndex[groups.ChangeEntry] {
	return entryIndex[groups.ChangeEntry]{begin: s.Begin, end: s.End, inProgress: s.InProgress,
		entry: func(id, attempt string, at time.Time) groups.ChangeEntry {
			return groups.ChangeEntry{GroupID: id, Attempt: attempt, At: At(at)}
		},
		id: func(e groups.ChangeEntry) string { return e.GroupID + "/" + e.Attempt }}
})

// ModerationAttempts runs ModerationAttemptChecks.
func ModerationAttempts(t *testing.T, open Open[moderation.AttemptIndex]) {
	Run(t, open, ModerationAttemptChecks)
}

// ModerationAttemptChecks are moderation.AttemptIndex's contract.
var ModerationAttemptChecks = indexChecks(func(s moderation.AttemptIndex) entryIndex[moderation.Attempt] {
	return entryIndex[moderation.Attempt]{begin: s.Begin, end: s.End, inProgress: s.InProgress,
		entry: func(id, attempt string, at time.Time) moderation.Attempt {
			return moderation.Attempt{UserID: id, Tag: attempt, At: At(at), Action: moderation.ActionSuspend}
		},
		id: func(a moderation.Attempt) string { return a.UserID + "/" + a.Tag }}
})

// JobQueue runs JobQueueChecks.
func JobQueue(t *testing.T, open Open[jobs.Queue]) { Run(t, open, JobQueueChecks) }

// JobQueueChecks are jobs.Queue's contract.
var JobQueueChecks = indexChecks(func(s jobs.Queue) entryIndex[jobs.Entry] {
	return entryIndex[jobs.Entry]{begin: s.Begin, end: s.End, inProgress: s.InProgress,
		entry: func(id, attempt string, at time.Time) jobs.Entry {
			return jobs.Entry{JobID: id + "-" + attempt, Kind: jobs.KindRebuild, Subject: id, By: id, At: At(at)}
		},
		id: func(e jobs.Entry) string { return e.JobID }}
})

func indexChecks[S, E any](view func(S) entryIndex[E]) []Check[S] {
	return []Check[S]{{"EndTakesOneAttemptForGood", func(t testing.TB, s S, c Clock) { indexEntries(t, view(s), c) }}}
}

// indexEntries: every attempt's entry is its own: an end takes that one
// alone, and its begin landing again after the end stays ended; the
// index lists each entry in progress once, with the pass's clock: the
// store's (the node's) while the pass ran.
func indexEntries[E any](t testing.TB, s entryIndex[E], c Clock) {
	ctx, id := context.Background(), Key("id")
	first, second := s.entry(id, "a1", c.Now()), s.entry(id, "a2", c.Now().Add(time.Millisecond))
	other := s.entry(Key("id"), "a1", c.Now())
	for _, e := range []E{first, second, other, first} {
		if err := s.begin(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() []string {
		t.Helper()
		var out []string
		var clocks []time.Time
		before := At(c.Now())
		err := s.inProgress(ctx, func(e E, now time.Time) error {
			if k := s.id(e); k == s.id(first) || k == s.id(second) || k == s.id(other) {
				out = append(out, k)
				clocks = append(clocks, now)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		after := c.Now()
		for _, now := range clocks {
			if now.Before(before) || now.After(after) {
				t.Fatalf("the pass's clock %v, want the store's during the pass (%v to %v)", now, before, after)
			}
		}
		slices.Sort(out)
		return out
	}
	want := func(es ...E) []string {
		var out []string
		for _, e := range es {
			out = append(out, s.id(e))
		}
		slices.Sort(out)
		return out
	}
	if got := listed(); !slices.Equal(got, want(first, second, other)) {
		t.Fatalf("in progress: %v, want each entry once: %v", got, want(first, second, other))
	}
	if err := s.end(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.begin(ctx, first); err != nil { // landing late
		t.Fatal(err)
	}
	if got := listed(); !slices.Equal(got, want(second, other)) {
		t.Fatalf("in progress after one attempt ended: %v, want %v", got, want(second, other))
	}
	if s.get != nil {
		if got, err := s.get(ctx, first); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("an ended attempt's entry: %+v %v, want ErrNotFound", got, err)
		}
		if got, err := s.get(ctx, second); err != nil || s.id(got) != s.id(second) {
			t.Fatalf("the other attempt's entry: %+v %v", got, err)
		}
	}
	for _, e := range []E{second, other} {
		if err := s.end(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if got := listed(); len(got) != 0 {
		t.Fatalf("in progress after every attempt ended: %v", got)
	}
}
