package repository

import (
	"context"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/library"
)

// Outbox keeps content_mark_queue (migration 008): one row per mark, in
// the partition of the mark's time window and shard, read from a start
// that moves forward (docs/design/libraries.md#queues). The cost of a read
// depends on the marks of the last few windows, never on the changes ever
// made. The marks left in content_marks (007) are read too, until it is
// read empty.
type Outbox struct {
	db *DB
	// now is the clock marks are made and read with (tests skew it).
	now func() time.Time
	// width is the time window of one bucket; horizon is how far behind
	// this clock a bucket must end before an empty read of it moves the
	// start past it (the clocks of the instances agree within less).
	width, horizon time.Duration
	// legacyDrained: content_marks (007) has been read empty.
	legacyDrained *atomic.Bool
	// tracer, when set, traces the reads of the windows (tests count the
	// tombstones they meet).
	tracer gocql.Tracer
}

var _ library.Outbox = (*Outbox)(nil)

const (
	// outboxWidth is the time window of a bucket. Fixed for a keyspace: a
	// mark's bucket is worked out from its time again when it is done.
	outboxWidth = time.Minute
	// outboxHorizon bounds the clock skew between instances that the
	// outbox tolerates: a mark made by a clock this far behind the
	// worker's could land in a window the worker has passed.
	outboxHorizon = 2 * time.Minute
	// outboxShards spreads one window's marks over partitions.
	outboxShards = 8
)

// NewOutbox returns the outbox.
func NewOutbox(db *DB) *Outbox {
	return &Outbox{db: db, now: db.Now, width: outboxWidth, horizon: outboxHorizon, legacyDrained: new(atomic.Bool)}
}

// WithClock returns the outbox making its marks on another clock (a test
// of instances whose clocks disagree).
func (o *Outbox) WithClock(now func() time.Time) *Outbox {
	c := *o
	c.now = now
	return &c
}

const (
	outboxMarkCQL    versionedCQL  = `INSERT INTO content_mark_queue (bucket, shard, mark, content_id) VALUES (?, ?, ?, ?) USING TIMESTAMP ?`
	outboxDoneCQL    versionedCQL  = `DELETE FROM content_mark_queue USING TIMESTAMP ? WHERE bucket = ? AND shard = ? AND mark = ? AND content_id = ?`
	outboxBucketCQL  readCQL       = `SELECT content_id, mark FROM content_mark_queue WHERE bucket = ? AND shard IN ? AND mark < maxTimeuuid(?) LIMIT ?`
	outboxDrainedCQL repeatableCQL = `INSERT INTO queue_progress (queue, next) VALUES (?, ?)`

	legacyPendingCQL readCQL      = `SELECT content_id, mark FROM content_marks WHERE shard = ?`
	legacyDoneCQL    versionedCQL = `DELETE FROM content_marks USING TIMESTAMP ? WHERE shard = ? AND content_id = ? AND mark = ?`
)

// The queue_progress rows of the outbox.
const (
	outboxQueue  = "content_marks"
	legacyQueue  = "content_marks_legacy_drained"
	legacyPrefix = "legacy/"
)

// markRow is a row of a mark table as outboxBucketCQL and legacyPendingCQL
// read it.
type markRow struct {
	ContentID string     `db:"content_id"`
	Mark      gocql.UUID `db:"mark"`
}

// columns are outboxBucketCQL's and legacyPendingCQL's.
func (r *markRow) columns() []any { return []any{&r.ContentID, &r.Mark} }

// allShards is every shard, for a bucket's IN read.
var allShards = func() []int {
	s := make([]int, outboxShards)
	for i := range s {
		s[i] = i
	}
	return s
}()

// shardOf is the shard of an item's marks.
func shardOf(contentID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(contentID))
	return int(h.Sum32() % outboxShards)
}

// bucketOf is the window a time falls in.
func (o *Outbox) bucketOf(t time.Time) time.Time { return t.Truncate(o.width).UTC() }

// Mark adds a mark of its own for the item: a fresh time UUID, written at
// its own time as timestamp, so that Done, deleting that one key at that
// timestamp, shadows every attempt of it however late it lands, and no
// other mark.
func (o *Outbox) Mark(ctx context.Context, contentID string) (library.OutboxEntry, error) {
	mark := gocql.UUIDFromTime(o.now())
	if err := o.db.write(ctx, "content_marks.mark", outboxMarkCQL,
		o.bucketOf(mark.Time()), shardOf(contentID), mark, contentID, markTimestamp(mark)); err != nil {
		return library.OutboxEntry{}, err
	}
	return library.OutboxEntry{ContentID: contentID, Marker: mark.String(), MarkedAt: mark.Time().UTC()}, nil
}

// markTimestamp is the write timestamp of a mark: its time in microseconds.
func markTimestamp(mark gocql.UUID) int64 { return mark.Time().UnixMicro() }

// Done deletes one mark.
func (o *Outbox) Done(ctx context.Context, contentID, marker string) error {
	legacy := strings.HasPrefix(marker, legacyPrefix)
	mark, err := gocql.ParseUUID(strings.TrimPrefix(marker, legacyPrefix))
	if err != nil {
		return err
	}
	if legacy {
		return o.db.write(ctx, "content_marks.done", legacyDoneCQL, markTimestamp(mark), shardOf(contentID), contentID, mark)
	}
	return o.db.write(ctx, "content_marks.done", outboxDoneCQL,
		markTimestamp(mark), o.bucketOf(mark.Time()), shardOf(contentID), mark, contentID)
}

// Pending lists marks made before t (at most horizon ahead of this clock:
// a mark from a clock further ahead is found once this one catches up),
// oldest window first. It reads the windows from the queue's start and
// moves the start past those it finds empty that ended a horizon ago, by
// this process's clock or the answering node's, whichever is behind (as
// walkFromStart's): a reader whose clock runs ahead never moves the start
// past the windows the others still write marks into.
func (o *Outbox) Pending(ctx context.Context, before time.Time, limit int) ([]library.OutboxEntry, error) {
	now := o.now()
	if latest := now.Add(o.horizon); before.After(latest) {
		before = latest
	}
	var out []library.OutboxEntry
	if !o.legacyDrained.Load() {
		legacy, err := o.pendingLegacy(ctx, before, limit)
		if err != nil {
			return nil, err
		}
		out = legacy
	}
	start, nodeNow, err := o.start(ctx)
	if err != nil {
		return nil, err
	}
	now = domain.Behind(now, nodeNow)
	next, closed := start, now.Add(-o.horizon)
	advancing := true
	for b := o.bucketOf(start); b.Before(before) && len(out) < limit; b = b.Add(o.width) {
		rows, err := selectRows[markRow](traced(o.db.query(ctx, 0, outboxBucketCQL, b, allShards, before, limit-len(out)), o.tracer))
		if err != nil {
			return nil, dbErr("content_marks.pending", err)
		}
		for _, r := range rows {
			out = append(out, library.OutboxEntry{ContentID: r.ContentID, Marker: r.Mark.String(), MarkedAt: r.Mark.Time().UTC()})
		}
		end := b.Add(o.width)
		if advancing && len(rows) == 0 && !end.After(closed) && !end.After(before) {
			next = end
		} else {
			advancing = false
		}
	}
	if next.After(start) {
		o.db.advanceQueue(ctx, outboxQueue, next)
	}
	return out, nil
}

// start reads where the outbox's windows begin, and the answering node's
// time.
func (o *Outbox) start(ctx context.Context) (next, nodeNow time.Time, err error) {
	next, nodeNow, found, err := o.db.queueStartAt(ctx, outboxQueue)
	if err == nil && !found {
		// Migration 008 wrote the row: even missing, it is a database fault.
		err = dbErr("queue_progress.get", gocql.ErrNotFound)
	}
	return next, nodeNow, err
}

// pendingLegacy lists the marks left in content_marks (written before
// migration 008) and records, once all its shards read empty, that it is
// drained: from then on no instance reads it.
func (o *Outbox) pendingLegacy(ctx context.Context, before time.Time, limit int) ([]library.OutboxEntry, error) {
	_, drained, err := o.db.queueStart(ctx, legacyQueue)
	switch {
	case err != nil:
		return nil, err
	case drained:
		o.legacyDrained.Store(true)
		return nil, nil
	}
	var out []library.OutboxEntry
	empty := true
	for shard := 0; shard < outboxShards; shard++ {
		rows, err := selectRows[markRow](o.db.query(ctx, 0, legacyPendingCQL, shard))
		if err != nil {
			return nil, dbErr("content_marks.pending", err)
		}
		empty = empty && len(rows) == 0
		for _, r := range rows {
			if at := r.Mark.Time(); at.Before(before) && len(out) < limit {
				out = append(out, library.OutboxEntry{ContentID: r.ContentID, Marker: legacyPrefix + r.Mark.String(), MarkedAt: at.UTC()})
			}
		}
	}
	if empty {
		if err := o.db.write(ctx, "queue_progress.drained", outboxDrainedCQL, legacyQueue, o.now()); err == nil {
			o.legacyDrained.Store(true)
		}
	}
	return out, nil
}
