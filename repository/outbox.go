package repository

import (
	"context"
	"hash/fnv"
	"time"

	"shelf/domain/library"
)

// Outbox keeps content_outbox, spread over a few partitions.
type Outbox struct {
	db *DB
}

var _ library.Outbox = (*Outbox)(nil)

// NewOutbox returns the outbox.
func NewOutbox(db *DB) *Outbox { return &Outbox{db: db} }

const (
	outboxMarkCQL    = `UPDATE content_outbox USING TIMESTAMP ? SET marked_at = ?, purge = purge + ? WHERE shard = ? AND content_id = ?`
	outboxDoneCQL    = `DELETE FROM content_outbox USING TIMESTAMP ? WHERE shard = ? AND content_id = ?`
	outboxPendingCQL = `SELECT content_id, purge, marked_at, WRITETIME(marked_at) AS marker FROM content_outbox WHERE shard = ?`
)

// outboxShards is how many partitions content_outbox is spread over.
const outboxShards = 8

// shardOf is the partition of an item's mark.
func shardOf(contentID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(contentID))
	return int(h.Sum32() % outboxShards)
}

// Mark records the item with a timestamp of our choosing, returned as the
// marker: Done deletes exactly what was written up to it, so a newer mark
// survives.
func (o *Outbox) Mark(ctx context.Context, contentID string, purge []string) (int64, error) {
	ts := time.Now().UnixMicro()
	if purge == nil {
		purge = []string{}
	}
	if err := o.db.Session.ContextQuery(ctx, outboxMarkCQL, nil).
		Bind(ts, time.UnixMicro(ts).UTC(), purge, shardOf(contentID), contentID).ExecRelease(); err != nil {
		return 0, dbErr("content_outbox.mark", err)
	}
	return ts, nil
}

// Done deletes the mark as of marker.
func (o *Outbox) Done(ctx context.Context, contentID string, marker int64) error {
	if err := o.db.Session.ContextQuery(ctx, outboxDoneCQL, nil).Bind(marker, shardOf(contentID), contentID).ExecRelease(); err != nil {
		return dbErr("content_outbox.done", err)
	}
	return nil
}

// Pending lists marks made before t, from every shard.
func (o *Outbox) Pending(ctx context.Context, before time.Time, limit int) ([]library.OutboxEntry, error) {
	var out []library.OutboxEntry
	for shard := 0; shard < outboxShards && len(out) < limit; shard++ {
		var rows []struct {
			ContentID string    `db:"content_id"`
			Purge     []string  `db:"purge"`
			MarkedAt  time.Time `db:"marked_at"`
			Marker    int64     `db:"marker"`
		}
		if err := o.db.Session.ContextQuery(ctx, outboxPendingCQL, nil).Bind(shard).SelectRelease(&rows); err != nil {
			return nil, dbErr("content_outbox.pending", err)
		}
		for _, r := range rows {
			if r.MarkedAt.Before(before) && len(out) < limit {
				out = append(out, library.OutboxEntry{ContentID: r.ContentID, Purge: r.Purge, Marker: r.Marker, MarkedAt: r.MarkedAt.UTC()})
			}
		}
	}
	return out, nil
}
