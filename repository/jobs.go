package repository

import (
	"context"
	"time"

	"shelf/domain/jobs"
)

// Jobs keeps the jobs' rows (jobs, migration 022; docs/design/jobs.md):
// compare-and-set rows like the accounts', each write tagged with a fresh
// write id so a lost answer is settled by reading the row back.
type Jobs struct {
	rows casTable[jobRow, *jobRow]
}

var _ jobs.Store = (*Jobs)(nil)

// NewJobs returns the store.
func NewJobs(db *DB) *Jobs {
	return &Jobs{rows: casTable[jobRow, *jobRow]{db: db, name: "jobs", selectCQL: jobSelectCQL,
		writeID: func(r jobRow) string { return r.WriteID }, version: func(r jobRow) int { return r.Version },
		status: func(jobRow) string { return "" }}}
}

const (
	jobColumns                  = `kind = ?, subject = ?, requested_by = ?, created_at = ?, version = ?, write_id = ?, owner = ?, lease_until = ?, phase = ?, done = ?, total = ?, runs = ?, last_error = ?, finished_at = ?, updated_at = ?`
	jobInsertCQL conditionalCQL = `INSERT INTO jobs (id, kind, subject, requested_by, created_at, version, write_id, owner, lease_until, phase, done, total, runs, last_error, finished_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`
	jobUpdateCQL conditionalCQL = `UPDATE jobs SET ` + jobColumns + ` WHERE id = ? IF version = ?`
	jobSelectCQL readCQL        = `SELECT id, kind, subject, requested_by, created_at, version, write_id, owner, lease_until, phase, done, total, runs, last_error, finished_at, updated_at FROM jobs WHERE id = ?`
)

// jobRow is a row of jobs.
type jobRow struct {
	ID          string    `db:"id"`
	Kind        string    `db:"kind"`
	Subject     string    `db:"subject"`
	RequestedBy string    `db:"requested_by"`
	CreatedAt   time.Time `db:"created_at"`
	Version     int       `db:"version"`
	WriteID     string    `db:"write_id"`
	Owner       string    `db:"owner"`
	LeaseUntil  time.Time `db:"lease_until"`
	Phase       string    `db:"phase"`
	Done        int       `db:"done"`
	Total       int       `db:"total"`
	Runs        int       `db:"runs"`
	LastError   string    `db:"last_error"`
	FinishedAt  time.Time `db:"finished_at"`
	UpdatedAt   time.Time `db:"updated_at"`
}

// columns are jobSelectCQL's.
func (r *jobRow) columns() []any {
	return []any{&r.ID, &r.Kind, &r.Subject, &r.RequestedBy, &r.CreatedAt, &r.Version, &r.WriteID, &r.Owner,
		&r.LeaseUntil, &r.Phase, &r.Done, &r.Total, &r.Runs, &r.LastError, &r.FinishedAt, &r.UpdatedAt}
}

func (r jobRow) toDomain() jobs.Job {
	return jobs.Job{ID: r.ID, Kind: jobs.Kind(r.Kind), Subject: r.Subject, By: r.RequestedBy, CreatedAt: r.CreatedAt.UTC(),
		Version: r.Version, Owner: r.Owner, LeaseUntil: r.LeaseUntil.UTC(), Phase: r.Phase, Done: r.Done, Total: r.Total,
		Runs: r.Runs, LastError: r.LastError, FinishedAt: r.FinishedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// values are j's columns after its id, in jobColumns' order.
func jobValues(j jobs.Job, writeID string) []any {
	return []any{string(j.Kind), j.Subject, j.By, j.CreatedAt, j.Version, writeID, j.Owner, j.LeaseUntil,
		j.Phase, j.Done, j.Total, j.Runs, j.LastError, j.FinishedAt, j.UpdatedAt}
}

// Create inserts j's row IF NOT EXISTS; a row there already is no error.
func (s *Jobs) Create(ctx context.Context, j jobs.Job) (bool, error) {
	writeID := newWriteID()
	return s.rows.write(ctx, "create", jobInsertCQL, j.ID, writeID, 0, append([]any{j.ID}, jobValues(j, writeID)...)...)
}

// Get reads a job.
func (s *Jobs) Get(ctx context.Context, id string) (jobs.Job, error) {
	r, err := s.rows.read(ctx, id, false)
	return r.toDomain(), err
}

// GetSerial reads a job at SERIAL.
func (s *Jobs) GetSerial(ctx context.Context, id string) (jobs.Job, error) {
	r, err := s.rows.read(ctx, id, true)
	return r.toDomain(), err
}

// Update writes j at j.Version by compare-and-set on the version before.
func (s *Jobs) Update(ctx context.Context, j jobs.Job) (bool, error) {
	writeID := newWriteID()
	return s.rows.write(ctx, "update", jobUpdateCQL, j.ID, writeID, j.Version, append(jobValues(j, writeID), j.ID, j.Version-1)...)
}
