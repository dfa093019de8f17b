package memstore

import (
	"context"
	"sort"
	"time"

	"shelf/domain/jobs"
)

// JobQueue is the store as the queue of jobs in progress (jobs.Queue),
// written as repository.JobQueue writes it: each entry at its start (µs),
// its end one microsecond later. Its calls take faults like every other.
func (s *Store) JobQueue() jobs.Queue { return jobQueue{s} }

type jobQueue struct{ s *Store }

// rows returns the table, made on first use (under the lock).
func (q jobQueue) rows() map[string]versioned[jobs.Entry] {
	if q.s.jobQueue == nil {
		q.s.jobQueue = map[string]versioned[jobs.Entry]{}
	}
	return q.s.jobQueue
}

func jobQueueKey(e jobs.Entry) string { return e.At.UTC().Format(time.DateOnly) + "|" + e.JobID }

func (q jobQueue) Begin(_ context.Context, e jobs.Entry) error {
	_, err := q.s.call("job_queue.insert", true, func() (bool, error) {
		putAt(q.rows(), jobQueueKey(e), e, e.At.UnixMicro())
		return true, nil
	})
	return err
}

func (q jobQueue) End(_ context.Context, e jobs.Entry) error {
	_, err := q.s.call("job_queue.delete", true, func() (bool, error) {
		deleteAt(q.rows(), jobQueueKey(e), e.At.UnixMicro()+1)
		return true, nil
	})
	return err
}

// InProgress reads the whole queue in one call.
func (q jobQueue) InProgress(_ context.Context, fn func(jobs.Entry) error) error {
	var found []jobs.Entry
	_, err := q.s.call("job_queue.day", false, func() (bool, error) {
		keys := make([]string, 0, len(q.rows()))
		for k, c := range q.rows() {
			if !c.deleted {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			found = append(found, q.rows()[k].v)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, e := range found {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}
