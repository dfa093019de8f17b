package repository

import (
	"context"
	"time"
)

// attemptIndex is an index of operations in progress, laid out one
// partition per UTC day an attempt began and one row per attempt (the
// subject, the attempt's tag): every Begin of an entry is the same row at
// its start time (µs) and End deletes it one microsecond later, so no write
// of it, however late, outlives its end, and no attempt's end touches
// another attempt's row. The repair reads it a day at a time from a start
// that only moves forward (walkDays). Account deletions, group closings
// and moderation's attempts each keep one (Deletions, Closings,
// ModerationAttempts), in tables of the same layout; an index says its
// statements and how its entries and rows convert.
type attemptIndex[E any, R any, P scanned[R]] struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
	// queue names the index's start in queue_progress; name its
	// statements (name.insert, name.delete, name.day).
	queue, name string
	// insert writes (day, subject, attempt, started_at, values...) USING
	// TIMESTAMP; remove deletes USING TIMESTAMP by (day, subject,
	// attempt); day selects a day's rows.
	insert, remove versionedCQL
	day            readCQL
	// key is an entry's start, subject and tag; values the rest of its
	// row, in insert's order; entry reads a row back.
	key    func(E) attemptKey
	values func(E) []any
	entry  func(R) E
}

// attemptKey names an attempt's row: the day of at, the subject, the tag.
type attemptKey struct {
	at               time.Time
	subject, attempt string
}

// Begin writes the attempt's entry at its start time (µs): every write of
// it is the same row at the same timestamp, and no other attempt's row.
func (x *attemptIndex[E, R, P]) Begin(ctx context.Context, e E) error {
	k := x.key(e)
	args := append([]any{deletionDay(k.at), k.subject, k.attempt, k.at}, x.values(e)...)
	return x.db.write(ctx, x.name+".insert", x.insert, append(args, k.at.UnixMicro())...)
}

// End deletes the attempt's entry one microsecond after its writes, so
// none of them, however late, outlives it; another attempt's row stays.
func (x *attemptIndex[E, R, P]) End(ctx context.Context, e E) error {
	k := x.key(e)
	return x.db.write(ctx, x.name+".delete", x.remove, k.at.UnixMicro()+1, deletionDay(k.at), k.subject, k.attempt)
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry (see walkDays).
func (x *attemptIndex[E, R, P]) InProgress(ctx context.Context, fn func(E) error) error {
	return walkDays(ctx, x.db, x.queue, x.horizon, func(day string) (int, error) {
		rows, err := selectRows[R, P](x.db.query(ctx, 0, x.day, day))
		if err != nil {
			return 0, dbErr(x.name+".day", err)
		}
		for _, r := range rows {
			if err := fn(x.entry(r)); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}

// deletionDay is the day partition of an attempt begun at t (every index
// kept by day: deletions, closings, moderation attempts, the job queue).
func deletionDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// walkDays reads an index of operations in progress kept one partition per
// UTC day (account deletions, group closings): from the queue's start up to
// today, readDay(day) answering how many entries it found. Then the start
// moves up to the first day that held an entry (or today), never closer to
// now than the horizon.
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
