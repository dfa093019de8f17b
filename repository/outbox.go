package repository

import (
	"context"
	"hash/fnv"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain/library"
)

// Outbox keeps content_marks, one row per mark, spread over a few
// partitions.
type Outbox struct {
	db *DB
	// now is the clock marks are made with (tests skew it).
	now func() time.Time
}

var _ library.Outbox = (*Outbox)(nil)

// NewOutbox returns the outbox.
func NewOutbox(db *DB) *Outbox { return &Outbox{db: db, now: db.Now} }

// WithClock returns the outbox making its marks on another clock (a test
// of instances whose clocks disagree).
func (o *Outbox) WithClock(now func() time.Time) *Outbox { return &Outbox{db: o.db, now: now} }

const (
	outboxMarkCQL    = `INSERT INTO content_marks (shard, content_id, mark) VALUES (?, ?, ?) USING TIMESTAMP ?`
	outboxDoneCQL    = `DELETE FROM content_marks USING TIMESTAMP ? WHERE shard = ? AND content_id = ? AND mark = ?`
	outboxPendingCQL = `SELECT content_id, mark FROM content_marks WHERE shard = ?`
)

// markRow is a row of content_marks as outboxPendingCQL reads it.
type markRow struct {
	ContentID string     `db:"content_id"`
	Mark      gocql.UUID `db:"mark"`
}

// columns are outboxPendingCQL's.
func (r *markRow) columns() []any { return []any{&r.ContentID, &r.Mark} }

// outboxShards is how many partitions content_marks is spread over.
const outboxShards = 8

// shardOf is the partition of an item's marks.
func shardOf(contentID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(contentID))
	return int(h.Sum32() % outboxShards)
}

// Mark adds a mark of its own for the item: a fresh time UUID, written at
// its own time as timestamp, so that Done, deleting that one key at that
// timestamp, shadows every attempt of it however late it lands, and no
// other mark.
func (o *Outbox) Mark(ctx context.Context, contentID string) (string, error) {
	mark := gocql.UUIDFromTime(o.now())
	if err := o.db.write(ctx, "content_marks.mark", outboxMarkCQL, shardOf(contentID), contentID, mark, markTimestamp(mark)); err != nil {
		return "", err
	}
	return mark.String(), nil
}

// markTimestamp is the write timestamp of a mark: its time in microseconds.
func markTimestamp(mark gocql.UUID) int64 { return mark.Time().UnixMicro() }

// Done deletes one mark.
func (o *Outbox) Done(ctx context.Context, contentID, marker string) error {
	mark, err := gocql.ParseUUID(marker)
	if err != nil {
		return err
	}
	return o.db.write(ctx, "content_marks.done", outboxDoneCQL, markTimestamp(mark), shardOf(contentID), contentID, mark)
}

// Pending lists marks made before t, from every shard.
func (o *Outbox) Pending(ctx context.Context, before time.Time, limit int) ([]library.OutboxEntry, error) {
	var out []library.OutboxEntry
	for shard := 0; shard < outboxShards && len(out) < limit; shard++ {
		// A shard holds few marks (each is deleted once its fan-out is
		// done), so the whole partition is read and filtered here.
		rows, err := selectRows[markRow](o.db.query(ctx, 0, outboxPendingCQL, shard))
		if err != nil {
			return nil, dbErr("content_marks.pending", err)
		}
		for _, r := range rows {
			if at := r.Mark.Time(); at.Before(before) && len(out) < limit {
				out = append(out, library.OutboxEntry{ContentID: r.ContentID, Marker: r.Mark.String(), MarkedAt: at.UTC()})
			}
		}
	}
	return out, nil
}
