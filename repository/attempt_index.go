package repository

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
)

// attemptIndex is an index of operations in progress (account deletions,
// group closings, moderation's attempts, membership changes, the job
// queue: docs/design/jobs.md#index-start), laid out one partition per UTC
// day an attempt began, its rows clustered by the attempt's start and then
// its own key (the subject and the attempt's tag, or the job): every Begin
// of an entry is the same row at its start time (µs) and End deletes it
// one microsecond later, so no write of it, however late, outlives its
// end, and no attempt's end touches another attempt's row. InProgress
// reads from the index's start on (walkFromStart): the tombstones of the
// attempts ended before it are never read. An entry open past holdAfter
// is copied to the index's held partition, which every pass reads whole,
// so the start does not wait for it (see hold).
//
// Until a day after migration 032 (legacy.until) the index of the layout
// before (the day's rows clustered by subject, read a day at a time) is
// read too, and End deletes there an entry this process read there: an
// attempt begun by a process of the release before is found and ended.
type attemptIndex[E any, R any, P scanned[R]] struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// acknowledged up to domain.EntryGrant after its time, by a clock up
	// to horizon − EntryGrant behind the reader's, is still read.
	horizon time.Duration
	// holdAfter: an entry open this long is held (see hold).
	holdAfter time.Duration
	// queue names the index's start in queue_progress (the table's name);
	// name its statements (name.insert, name.delete, name.since).
	queue, name string
	// insert writes (day, started_at, key..., values...) USING TIMESTAMP;
	// remove deletes USING TIMESTAMP by (day, started_at, key...); since
	// selects a day's rows from a start on.
	insert, remove versionedCQL
	since          readCQL
	legacy         legacyIndex
	// key is an entry's start and the rest of its row's key; values the
	// rest of its row, in insert's order; entry reads a row back.
	key    func(E) attemptKey
	values func(E) []any
	entry  func(R) E
	// tracer, when set, traces the reads of the index (tests count the
	// tombstones they meet).
	tracer gocql.Tracer
}

// legacyIndex is an index's table of the layout before migration 032:
// (day, key...) with no start among its keys.
type legacyIndex struct {
	// queue names its start in queue_progress (read a day at a time);
	// until names the time after which, once read empty, it is read no
	// more (seeded by the migration a day after it ran).
	queue, until string
	remove       versionedCQL
	day          readCQL
	// drained: this process read it empty after until.
	drained *atomic.Bool
	// untilAt caches until's time once read (it never changes).
	untilAt *atomic.Pointer[time.Time]
	// seen are the entries this process read there and has not ended
	// (by legacyKey): only those does End delete there, so the old table
	// gains no tombstone but its own entries'. One ended elsewhere is read
	// again, decided again on its record, and ended here.
	seen *sync.Map
}

// legacyKey is the old layout's row of k: its day and the rest of its key.
func legacyKey(k attemptKey) string {
	return fmt.Sprintf("%q", append([]any{deletionDay(k.at)}, k.rest...))
}

// legacyOf is the old layout of an index whose start (before migration
// 032) was queue_progress row queue, in table.
func legacyOf(queue, table string, remove versionedCQL, day readCQL) legacyIndex {
	return legacyIndex{queue: queue, until: table + "_until", remove: remove, day: day, drained: new(atomic.Bool),
		untilAt: new(atomic.Pointer[time.Time]), seen: new(sync.Map)}
}

// legacyHorizon is how far behind now the old layout's start stays: a
// day, as before migration 032.
const legacyHorizon = 24 * time.Hour

// attemptHorizon is how far behind now an index's start stays: the
// grant of an entry's acknowledgement and the clock skew between the
// instances (domain.ClockSkew), a minute in all. A pass meets the tombstones of the attempts
// ended within it (a four-minute nemesis run's moderation crossed
// Cassandra's warning at 1 000 with 2.5 minutes, not with one).
const attemptHorizon = domain.EntryGrant + domain.ClockSkew

// attemptHoldAfter is how long an entry stays open before it is held
// (see hold): five minutes, far past any request's attempt, so only a
// long job (an account of some 60 000 items, at 200 a second) or an
// attempt stuck open is.
const attemptHoldAfter = 5 * time.Minute

// heldDay is the partition of an index's held entries (its day column
// holds a date everywhere else).
const heldDay = "held"

// attemptKey names an attempt's row: its start (and so its day), then the
// rest of its key (the subject and the attempt's tag, or the job).
type attemptKey struct {
	at   time.Time
	rest []any
}

// id tells one attempt's row from another's.
func (k attemptKey) id() string { return fmt.Sprintf("%q", append([]any{k.at.UnixMicro()}, k.rest...)) }

// Begin writes the attempt's entry at its start time (µs): every write of
// it is the same row at the same timestamp, and no other attempt's row.
// The caller goes on only if it was acknowledged within domain.EntryGrant
// of that time (domain.Entered).
func (x *attemptIndex[E, R, P]) Begin(ctx context.Context, e E) error {
	return x.write(ctx, x.name+".insert", deletionDay(x.key(e).at), e)
}

// write writes e's row in the day partition day, at its start time.
func (x *attemptIndex[E, R, P]) write(ctx context.Context, name, day string, e E) error {
	k := x.key(e)
	args := append([]any{day, k.at}, k.rest...)
	args = append(args, x.values(e)...)
	return x.db.write(ctx, name, x.insert, append(args, k.at.UnixMicro())...)
}

// delete deletes k's row in the day partition day, one microsecond after
// its writes.
func (x *attemptIndex[E, R, P]) delete(ctx context.Context, name, day string, k attemptKey) error {
	return x.db.write(ctx, name, x.remove, append([]any{k.at.UnixMicro() + 1, day, k.at}, k.rest...)...)
}

// End deletes the attempt's entry one microsecond after its writes, so
// none of them, however late, outlives it; another attempt's row stays.
// An attempt open for half of holdAfter or more (by this clock; another
// process's may be up to 45 s away) may have been held: its held copy too,
// so a hold landing after the end is shadowed as well. An entry this
// process read in the old layout, there too.
func (x *attemptIndex[E, R, P]) End(ctx context.Context, e E) error {
	k := x.key(e)
	err := x.delete(ctx, x.name+".delete", deletionDay(k.at), k)
	if err == nil && x.db.Now().Sub(k.at) >= x.holdAfter/2 {
		err = x.delete(ctx, x.name+".delete_held", heldDay, k)
	}
	if _, seen := x.legacy.seen.Load(legacyKey(k)); err != nil || !seen {
		return err
	}
	err = x.db.write(ctx, x.name+".delete_legacy", x.legacy.remove, append([]any{k.at.UnixMicro() + 1, deletionDay(k.at)}, k.rest...)...)
	if err == nil {
		x.legacy.seen.Delete(legacyKey(k))
	}
	return err
}

// InProgress calls fn with every entry in progress, once each, oldest
// first: those of the old layout while it is read, the held ones, then
// those from the index's start on (see walkFromStart); and with the pass's
// clock, the earlier of this process's and the node's, read with the start
// before any entry (readStart), by which a worker judges an entry's age. It
// holds the entries open past holdAfter (see hold) and reports the pass
// (DB.OnIndexPass).
func (x *attemptIndex[E, R, P]) InProgress(ctx context.Context, fn func(E, time.Time) error) error {
	st, err := readStart(ctx, x.db, x.queue)
	if err != nil {
		return err
	}
	each := func(e E) error { return fn(e, st.now) }
	if err := x.inLegacy(ctx, each); err != nil {
		return err
	}
	held, oldestHeld, err := x.inHeld(ctx, each)
	if err != nil {
		return err
	}
	lag, err := walkFromStart(ctx, x.db, st, x.queue, x.horizon, func(day string, from, now time.Time) (time.Time, error) {
		rows, err := selectRows[R, P](traced(x.db.query(ctx, 0, x.since, day, from), x.tracer))
		if err != nil {
			return time.Time{}, dbErr(x.name+".since", err)
		}
		oldest := time.Time{}
		for _, r := range rows {
			e := x.entry(r)
			k := x.key(e)
			if held[k.id()] {
				continue // read from the held partition
			}
			if err := each(e); err != nil {
				return time.Time{}, err
			}
			if oldest.IsZero() && !x.hold(ctx, e, now) {
				oldest = k.at // the rows are in start order: every later one is younger
			}
		}
		return oldest, nil
	})
	if err == nil && x.db.OnIndexPass != nil {
		x.db.OnIndexPass(x.queue, IndexPass{Lag: lag, Held: len(held), OldestHeld: oldestHeld})
	}
	return err
}

// hold copies e, if it has been open for holdAfter by now, into the held
// partition, and reports whether the copy is acknowledged: from then on
// every pass reads it there, and the start may pass its row. So an attempt
// that stays open (a long job, or one that fails on every pass) no longer
// holds the start, and the passes do not meet the tombstones of every
// attempt ended since it began; the held partition meets one for each
// attempt that was open that long (docs/design/jobs.md#index-start). The
// copy is the same row at the same timestamp as the entry's own, so the
// end's delete shadows it however late it lands; the entry's own row
// stays (Deletions.Get reads it by its time) and is passed by the start.
// A copy whose write failed holds the start, as the entry did.
func (x *attemptIndex[E, R, P]) hold(ctx context.Context, e E, now time.Time) bool {
	if now.Sub(x.key(e).at) < x.holdAfter {
		return false
	}
	return x.write(ctx, x.name+".hold", heldDay, e) == nil
}

// inHeld calls fn with every held entry, oldest first, and returns their
// ids and the oldest's age.
func (x *attemptIndex[E, R, P]) inHeld(ctx context.Context, fn func(E) error) (map[string]bool, time.Duration, error) {
	rows, err := selectRows[R, P](traced(x.db.query(ctx, 0, x.since, heldDay, time.UnixMilli(0)), x.tracer))
	if err != nil {
		return nil, 0, dbErr(x.name+".held", err)
	}
	held := make(map[string]bool, len(rows))
	var oldest time.Duration
	for i, r := range rows {
		e := x.entry(r)
		k := x.key(e)
		held[k.id()] = true
		if i == 0 {
			oldest = x.db.Now().Sub(k.at)
		}
		if err := fn(e); err != nil {
			return nil, 0, err
		}
	}
	return held, oldest, nil
}

// inLegacy calls fn with every entry of the old layout, a day at a time
// from its start (walkDays), until a pass after legacy.until reads it
// empty; from then on this process reads it no more.
func (x *attemptIndex[E, R, P]) inLegacy(ctx context.Context, fn func(E) error) error {
	if x.legacy.drained.Load() {
		return nil
	}
	until, err := x.legacyUntil(ctx)
	if err != nil {
		return err
	}
	total := 0
	err = walkDays(ctx, x.db, x.legacy.queue, legacyHorizon, func(day string) (int, error) {
		rows, err := selectRows[R, P](traced(x.db.query(ctx, 0, x.legacy.day, day), x.tracer))
		if err != nil {
			return 0, dbErr(x.name+".legacy_day", err)
		}
		for _, r := range rows {
			e := x.entry(r)
			x.legacy.seen.Store(legacyKey(x.key(e)), true)
			if err := fn(e); err != nil {
				return 0, err
			}
		}
		total += len(rows)
		return len(rows), nil
	})
	if err == nil && total == 0 && !until.IsZero() && x.db.Now().After(until) {
		x.legacy.drained.Store(true)
	}
	return err
}

// legacyUntil reads, once, the time after which the old layout, read
// empty, is read no more (zero without the migration's row).
func (x *attemptIndex[E, R, P]) legacyUntil(ctx context.Context) (time.Time, error) {
	if at := x.legacy.untilAt.Load(); at != nil {
		return *at, nil
	}
	until, found, err := x.db.queueStart(ctx, x.legacy.until)
	if err != nil || !found {
		return time.Time{}, err
	}
	x.legacy.untilAt.Store(&until)
	return until, nil
}

// IndexPass is how a pass over an index of attempts in progress left it:
// how far its start trails now (the horizon normally, up to holdAfter more
// while an entry is open that long), how many entries are held, and the
// oldest one's age (an attempt stuck open, if it grows).
type IndexPass struct {
	Lag        time.Duration
	Held       int
	OldestHeld time.Duration
}

// deletionDay is the day partition of an attempt begun at t (every index
// kept by day: deletions, closings, moderation attempts, membership
// changes, the job queue).
func deletionDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// indexStart is where a pass over an index of operations in progress
// begins (readStart).
type indexStart struct {
	// start is the index's start; found is false without its row.
	start time.Time
	found bool
	// now is this process's clock or the answering node's, whichever is
	// behind; last is the other (the last day to read).
	now, last time.Time
}

// readStart reads an index's start with the answering node's time
// (queueStartAt). Without its row (a fault: migration 032 seeds each start
// a day back), the node's time is read on its own and the start is a day
// back.
func readStart(ctx context.Context, db *DB, queue string) (indexStart, error) {
	now := db.Now().UTC()
	start, nodeNow, found, err := db.queueStartAt(ctx, queue)
	if err == nil && !found {
		start = now.Add(-legacyHorizon)
		nodeNow, err = db.nodeNow(ctx)
	}
	if err != nil {
		return indexStart{}, err
	}
	st := indexStart{start: start.UTC(), found: found, now: now, last: now}
	if nodeNow = nodeNow.UTC(); nodeNow.Before(now) {
		st.now = nodeNow
	} else {
		st.last = nodeNow
	}
	return st, nil
}

// walkFromStart reads an index of operations in progress kept one
// partition per UTC day and clustered by start: from the start st read
// (readStart) up to today, readDay(day, start, now) reading the day's rows
// from the start on and answering the time of its oldest (zero if none; an
// entry held is not). Then the start moves up to the oldest entry found,
// or to now, but never closer to now than the horizon: an entry
// acknowledged after this pass read its day has a time within the horizon
// of now (domain.Entered), and an entry read holds the start until it ends
// or is held. Now is this process's clock or the answering node's,
// whichever is behind: a process whose clock runs ahead does not move the
// start past the entries the others write meanwhile. It returns how far
// the start then trails now. Without the start's row (a fault), a pass
// reads from a day back, moves nothing and holds nothing (readDay's now is
// a day back), and answers a day's lag, so the fault shows in
// shelf_attempt_index_lag_seconds.
func walkFromStart(ctx context.Context, db *DB, st indexStart, queue string, horizon time.Duration, readDay func(day string, from, now time.Time) (time.Time, error)) (lag time.Duration, err error) {
	start, now := st.start, st.now
	if !st.found {
		now = now.Add(-legacyHorizon)
	}
	oldest := time.Time{}
	for day := start.Truncate(24 * time.Hour); deletionDay(day) <= deletionDay(st.last); day = day.Add(24 * time.Hour) {
		at, err := readDay(deletionDay(day), start, now)
		if err != nil {
			return 0, err
		}
		if oldest.IsZero() {
			oldest = at
		}
	}
	next := now.Add(-horizon)
	if !oldest.IsZero() && oldest.Before(next) {
		next = oldest
	}
	if !st.found {
		return legacyHorizon, nil
	}
	if next.After(start) {
		db.advanceQueue(ctx, queue, next)
		start = next
	}
	return now.Sub(start), nil
}

// walkDays reads an index of the layout before migration 032 (one
// partition per UTC day, clustered by subject): from the queue's start up
// to today, readDay(day) answering how many entries it found. Then the
// start moves up to the first day that held an entry (or today), never
// closer to now than the horizon.
func walkDays(ctx context.Context, db *DB, queue string, horizon time.Duration, readDay func(day string) (int, error)) error {
	now := db.Now().UTC()
	start, found, err := db.queueStart(ctx, queue)
	if err != nil {
		return err
	}
	if !found {
		start = now.Add(-horizon) // a keyspace older than its migration's seed: none is older
	}
	first := time.Time{}
	today := deletionDay(now)
	for day := start.UTC().Truncate(24 * time.Hour); deletionDay(day) <= today; day = day.Add(24 * time.Hour) {
		n, err := readDay(deletionDay(day))
		if err != nil {
			return err
		}
		if n > 0 && first.IsZero() {
			first = day
		}
	}
	next := now.Truncate(24 * time.Hour)
	if !first.IsZero() {
		next = first
	}
	if limit := now.Add(-horizon); next.After(limit) {
		next = limit.Truncate(24 * time.Hour)
	}
	if next.After(start) {
		db.advanceQueue(ctx, queue, next)
	}
	return nil
}
