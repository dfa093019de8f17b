package memstore

import (
	"time"

	"shelf/domain/jobs"
)

// JobQueue is the store as the queue of jobs in progress (jobs.Queue),
// written as repository.JobQueue writes it (see dayIndex).
func (s *Store) JobQueue() jobs.Queue { return s.jobQueueIndex() }

func (s *Store) jobQueueIndex() dayIndex[jobs.Entry] {
	return dayIndex[jobs.Entry]{s: s, table: &s.jobQueue, name: "job_queue",
		key: func(e jobs.Entry) string { return e.JobID }, at: func(e jobs.Entry) time.Time { return e.At }}
}
