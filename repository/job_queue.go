package repository

import (
	"context"
	"time"

	"shelf/domain/jobs"
)

// JobQueue keeps the queue of jobs in progress (job_queue, migration 024;
// docs/design/jobs.md), laid out as the index of account deletions: one
// partition per UTC day a job began, one row per job, read from a start
// that only moves forward (walkDays).
type JobQueue struct {
	db *DB
	// horizon: the start never comes closer to now than this, so an entry
	// whose write lands that late is still read.
	horizon time.Duration
}

var _ jobs.Queue = (*JobQueue)(nil)

// NewJobQueue returns the store.
func NewJobQueue(db *DB) *JobQueue { return &JobQueue{db: db, horizon: 24 * time.Hour} }

// jobQueue names the queue's start in queue_progress.
const jobQueue = "job_queue"

const (
	jobQueueInsertCQL versionedCQL = `INSERT INTO job_queue (day, job_id, kind, subject, requested_by, started_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	jobQueueDeleteCQL versionedCQL = `DELETE FROM job_queue USING TIMESTAMP ? WHERE day = ? AND job_id = ?`
	jobQueueDayCQL    readCQL      = `SELECT job_id, kind, subject, requested_by, started_at FROM job_queue WHERE day = ?`
)

// jobQueueRow is a row of job_queue.
type jobQueueRow struct {
	JobID       string    `db:"job_id"`
	Kind        string    `db:"kind"`
	Subject     string    `db:"subject"`
	RequestedBy string    `db:"requested_by"`
	StartedAt   time.Time `db:"started_at"`
}

// columns are jobQueueDayCQL's.
func (r *jobQueueRow) columns() []any {
	return []any{&r.JobID, &r.Kind, &r.Subject, &r.RequestedBy, &r.StartedAt}
}

// Begin writes the job's entry at its start time (µs).
func (q *JobQueue) Begin(ctx context.Context, e jobs.Entry) error {
	return q.db.write(ctx, "job_queue.insert", jobQueueInsertCQL, deletionDay(e.At), e.JobID, string(e.Kind), e.Subject, e.By, e.At, e.At.UnixMicro())
}

// End deletes the job's entry one microsecond after its writes.
func (q *JobQueue) End(ctx context.Context, e jobs.Entry) error {
	return q.db.write(ctx, "job_queue.delete", jobQueueDeleteCQL, e.At.UnixMicro()+1, deletionDay(e.At), e.JobID)
}

// InProgress reads the days from the start up to today, one partition
// each, and calls fn with every entry.
func (q *JobQueue) InProgress(ctx context.Context, fn func(jobs.Entry) error) error {
	return walkDays(ctx, q.db, jobQueue, q.horizon, func(day string) (int, error) {
		rows, err := selectRows[jobQueueRow](q.db.query(ctx, 0, jobQueueDayCQL, day))
		if err != nil {
			return 0, dbErr("job_queue.day", err)
		}
		for _, r := range rows {
			e := jobs.Entry{JobID: r.JobID, Kind: jobs.Kind(r.Kind), Subject: r.Subject, By: r.RequestedBy, At: r.StartedAt.UTC()}
			if err := fn(e); err != nil {
				return 0, err
			}
		}
		return len(rows), nil
	})
}
