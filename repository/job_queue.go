package repository

import (
	"time"

	"shelf/domain/jobs"
)

// JobQueue keeps the queue of jobs in progress (job_queue_by_start,
// migrations 024 and 032; docs/design/jobs.md): an attemptIndex of one row
// per job (the day, its start, the job).
type JobQueue struct {
	attemptIndex[jobs.Entry, jobQueueRow, *jobQueueRow]
}

var _ jobs.Queue = (*JobQueue)(nil)

// NewJobQueue returns the store.
func NewJobQueue(db *DB) *JobQueue {
	return &JobQueue{attemptIndex[jobs.Entry, jobQueueRow, *jobQueueRow]{
		db: db, horizon: attemptHorizon, holdAfter: attemptHoldAfter, queue: "job_queue_by_start", name: "job_queue",
		insert: jobQueueInsertCQL, remove: jobQueueDeleteCQL, since: jobQueueSinceCQL,
		legacy: legacyOf(jobQueue, "job_queue", jobQueueLegacyDeleteCQL, jobQueueLegacyDayCQL),
		key:    func(e jobs.Entry) attemptKey { return attemptKey{at: e.At, rest: []any{e.JobID}} },
		values: func(e jobs.Entry) []any { return []any{string(e.Kind), e.Subject, e.By} },
		entry: func(r jobQueueRow) jobs.Entry {
			return jobs.Entry{JobID: r.JobID, Kind: jobs.Kind(r.Kind), Subject: r.Subject, By: r.RequestedBy, At: r.StartedAt.UTC()}
		},
	}}
}

// jobQueue names the start of the old layout in queue_progress.
const jobQueue = "job_queue"

const (
	jobQueueInsertCQL versionedCQL = `INSERT INTO job_queue_by_start (day, started_at, job_id, kind, subject, requested_by) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?`
	jobQueueDeleteCQL versionedCQL = `DELETE FROM job_queue_by_start USING TIMESTAMP ? WHERE day = ? AND started_at = ? AND job_id = ?`
	jobQueueSinceCQL  readCQL      = `SELECT job_id, kind, subject, requested_by, started_at FROM job_queue_by_start WHERE day = ? AND started_at >= ?`

	jobQueueLegacyDeleteCQL versionedCQL = `DELETE FROM job_queue USING TIMESTAMP ? WHERE day = ? AND job_id = ?`
	jobQueueLegacyDayCQL    readCQL      = `SELECT job_id, kind, subject, requested_by, started_at FROM job_queue WHERE day = ?`
)

// jobQueueRow is a row of job_queue_by_start (or of the old layout).
type jobQueueRow struct {
	JobID       string    `db:"job_id"`
	Kind        string    `db:"kind"`
	Subject     string    `db:"subject"`
	RequestedBy string    `db:"requested_by"`
	StartedAt   time.Time `db:"started_at"`
}

// columns are jobQueueSinceCQL's (and jobQueueLegacyDayCQL's).
func (r *jobQueueRow) columns() []any {
	return []any{&r.JobID, &r.Kind, &r.Subject, &r.RequestedBy, &r.StartedAt}
}
