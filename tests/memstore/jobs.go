package memstore

import (
	"context"

	"shelf/domain"
	"shelf/domain/jobs"
)

// Jobs is the store as the jobs' rows (jobs.Store): compare-and-set rows
// like the accounts', decided when the call lands, each call taking faults
// like every other.
func (s *Store) Jobs() jobs.Store { return jobStore{s} }

type jobStore struct{ s *Store }

// rows returns the table, made on first use (under the lock).
func (t jobStore) rows() map[string]jobs.Job {
	if t.s.jobs == nil {
		t.s.jobs = map[string]jobs.Job{}
	}
	return t.s.jobs
}

func (t jobStore) Create(_ context.Context, j jobs.Job) (bool, error) {
	return t.s.call("jobs.create", true, func() (bool, error) {
		if _, ok := t.rows()[j.ID]; ok {
			return false, nil
		}
		t.rows()[j.ID] = j
		return true, nil
	})
}

func (t jobStore) Get(_ context.Context, id string) (jobs.Job, error) {
	var out jobs.Job
	found, err := t.s.call("jobs.get", false, func() (bool, error) {
		j, ok := t.rows()[id]
		out = j
		return ok, nil
	})
	if err == nil && !found {
		return jobs.Job{}, domain.ErrNotFound
	}
	return out, err
}

func (t jobStore) GetSerial(ctx context.Context, id string) (jobs.Job, error) { return t.Get(ctx, id) }

func (t jobStore) Update(_ context.Context, j jobs.Job) (bool, error) {
	return t.s.call("jobs.update", true, func() (bool, error) {
		cur, ok := t.rows()[j.ID]
		if !ok || cur.Version != j.Version-1 {
			return false, nil
		}
		t.rows()[j.ID] = j
		return true, nil
	})
}
