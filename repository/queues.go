package repository

import (
	"context"
	"errors"
	"time"

	"github.com/gocql/gocql"
)

// queue_progress: where each queue's reader starts (docs/design/libraries.md#queues).
const (
	queueStartCQL   readCQL      = `SELECT next FROM queue_progress WHERE queue = ?`
	queueStartAtCQL readCQL      = `SELECT next, toTimestamp(now()) AS node_now FROM queue_progress WHERE queue = ?`
	nodeNowCQL      readCQL      = `SELECT toTimestamp(now()) AS node_now FROM system.local WHERE key = 'local'`
	queueAdvanceCQL versionedCQL = `UPDATE queue_progress USING TIMESTAMP ? SET next = ? WHERE queue = ?`
)

// advanceOffset lifts the write timestamps of queue_progress's next above
// the migration's seed, whatever the clock that wrote it.
const advanceOffset = 24 * time.Hour

// queueStart reads where a queue's reader starts; found is false when the
// queue has no row.
func (db *DB) queueStart(ctx context.Context, queue string) (next time.Time, found bool, err error) {
	q := db.query(ctx, 0, queueStartCQL, queue)
	defer q.Release()
	switch err := q.Scan(&next); {
	case errors.Is(err, gocql.ErrNotFound):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, dbErr("queue_progress.get", err)
	}
	return next, true, nil
}

// queueStartAt is queueStart with the time of the node that answered
// (its coordinator's clock): a reader moving the start by its own clock
// bounds it by the cluster's too, so a process whose clock runs ahead
// cannot move it past what the others write meanwhile.
func (db *DB) queueStartAt(ctx context.Context, queue string) (next, nodeNow time.Time, found bool, err error) {
	r, found, err := getRow[queueStartRow](db.query(ctx, 0, queueStartAtCQL, queue))
	if err != nil {
		return time.Time{}, time.Time{}, false, dbErr("queue_progress.get", err)
	}
	return r.Next, r.NodeNow, found, nil
}

// nodeNow reads the time of the node that answers (a queue with no start
// yet has no row to read it with).
func (db *DB) nodeNow(ctx context.Context) (time.Time, error) {
	q := db.query(ctx, 0, nodeNowCQL)
	defer q.Release()
	var now time.Time
	if err := q.Scan(&now); err != nil {
		return time.Time{}, dbErr("system.local.now", err)
	}
	return now, nil
}

// queueStartRow is a queue's start and the answering node's time.
type queueStartRow struct {
	Next    time.Time `db:"next"`
	NodeNow time.Time `db:"node_now"`
}

// columns are queueStartAtCQL's.
func (r *queueStartRow) columns() []any { return []any{&r.Next, &r.NodeNow} }

// advanceQueue moves a queue's start to next. The write's timestamp grows
// with next, so it only moves forward: a late or repeated write of an
// older start loses, without a lightweight transaction. Its error is not
// returned: a lost write only means reading a stretch of the queue again.
func (db *DB) advanceQueue(ctx context.Context, queue string, next time.Time) {
	_ = db.write(ctx, "queue_progress.advance", queueAdvanceCQL, next.Add(advanceOffset).UnixMicro(), next, queue)
}

// traced is q traced by t, when t is set (tests count the tombstones a
// queue's reads meet).
func traced(q *gocql.Query, t gocql.Tracer) *gocql.Query {
	if t != nil {
		return q.Trace(t)
	}
	return q
}
