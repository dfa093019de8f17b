package repository

import (
	"context"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Attempts keeps attempts counted by every instance together
// (throttle_tries and throttle_failures, migration 020;
// docs/design/throttle.md): a row per attempt and scope in each, never
// deleted. Writes and reads are at the session's consistency
// (LOCAL_QUORUM by default), which is what makes a count read after a
// write include it; at ONE the limit holds per replica only.
type Attempts struct {
	db *DB
}

var _ accounts.AttemptStore = (*Attempts)(nil)

// NewAttempts returns the attempt store.
func NewAttempts(db *DB) *Attempts { return &Attempts{db: db} }

// tryRow is a row of throttle_tries as triesSelectCQL reads it.
type tryRow struct {
	At      time.Time `db:"at"`
	Attempt string    `db:"attempt"`
	Outcome *string   `db:"outcome"`
}

// columns are triesSelectCQL's.
func (r *tryRow) columns() []any { return []any{&r.At, &r.Attempt, &r.Outcome} }

// failureRow is a row of throttle_failures as failuresSelectCQL reads it.
type failureRow struct {
	At      time.Time `db:"at"`
	Attempt string    `db:"attempt"`
}

// columns are failuresSelectCQL's.
func (r *failureRow) columns() []any { return []any{&r.At, &r.Attempt} }

const (
	// tryInsertCQL is USING TIMESTAMP <the attempt's start>: a repeat
	// writes the same cells. It writes the row alone, never the outcome,
	// so a copy landing after the try was settled leaves it settled.
	tryInsertCQL versionedCQL = `INSERT INTO throttle_tries (scope, at, attempt) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?`
	// trySettleCQL is at the start + 1: it wins over any write of the try.
	trySettleCQL      versionedCQL = `UPDATE throttle_tries USING TTL ? AND TIMESTAMP ? SET outcome = ? WHERE scope = ? AND at = ? AND attempt = ?`
	failureInsertCQL  versionedCQL = `INSERT INTO throttle_failures (scope, at, attempt) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?`
	triesSelectCQL    readCQL      = `SELECT at, attempt, outcome FROM throttle_tries WHERE scope = ? AND at > ? LIMIT ?`
	failuresSelectCQL readCQL      = `SELECT at, attempt FROM throttle_failures WHERE scope = ? AND at > ? LIMIT ?`
)

// Begin writes a's try under scope, in flight, living for ttl.
func (s *Attempts) Begin(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	return s.db.write(ctx, "throttle_tries.begin", tryInsertCQL, scope, a.At, a.ID, ttlSeconds(ttl), a.At.UnixMicro())
}

// Settle writes a's try's outcome, one microsecond after its row.
func (s *Attempts) Settle(ctx context.Context, scope string, a accounts.Attempt, o accounts.Outcome, ttl time.Duration) error {
	return s.db.write(ctx, "throttle_tries.settle", trySettleCQL, ttlSeconds(ttl), a.At.UnixMicro()+1, string(o), scope, a.At, a.ID)
}

// Fail writes a's failure under scope, living for ttl.
func (s *Attempts) Fail(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	return s.db.write(ctx, "throttle_failures.add", failureInsertCQL, scope, a.At, a.ID, ttlSeconds(ttl), a.At.UnixMicro())
}

// Read reads scope's tries and failures at once, each oldest first (the
// clustering order), from just after its since: the rows before, expired
// or about to, are never read.
func (s *Attempts) Read(ctx context.Context, scope string, triesSince, failuresSince time.Time, max int) (accounts.Tally, error) {
	var tries []tryRow
	var failures []failureRow
	var triesErr, failuresErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			tries, triesErr = selectRows[tryRow](s.db.query(ctx, 0, triesSelectCQL, scope, triesSince, max))
			return
		}
		failures, failuresErr = selectRows[failureRow](s.db.query(ctx, 0, failuresSelectCQL, scope, failuresSince, max))
	})
	if triesErr != nil {
		return accounts.Tally{}, dbErr("throttle_tries.read", triesErr)
	}
	if failuresErr != nil {
		return accounts.Tally{}, dbErr("throttle_failures.read", failuresErr)
	}
	var out accounts.Tally
	for _, r := range tries {
		t := accounts.Try{Attempt: accounts.Attempt{ID: r.Attempt, At: r.At.UTC()}}
		if r.Outcome != nil {
			t.Outcome = accounts.Outcome(*r.Outcome)
		}
		out.Tries = append(out.Tries, t)
	}
	for _, r := range failures {
		out.Failures = append(out.Failures, accounts.Attempt{ID: r.Attempt, At: r.At.UTC()})
	}
	return out, nil
}

// slotRow is a row of mail_slots as slotsSelectCQL reads it.
type slotRow struct {
	Slot    int    `db:"slot"`
	Attempt string `db:"attempt"`
	TTL     int    `db:"ttl"`
}

// columns are slotsSelectCQL's.
func (r *slotRow) columns() []any { return []any{&r.Slot, &r.Attempt, &r.TTL} }

// takenRow is a slot's attempt as slotSelectCQL reads it.
type takenRow struct {
	Attempt string `db:"attempt"`
}

// columns are slotSelectCQL's.
func (r *takenRow) columns() []any { return []any{&r.Attempt} }

// slotCells is the row in the way of slotTakeCQL, as Cassandra sends it
// back (every column).
type slotCells struct {
	Scope   string `db:"scope"`
	Slot    int    `db:"slot"`
	Attempt string `db:"attempt"`
}

const (
	// slotTakeCQL takes a free slot: a slot whose row expired is free.
	slotTakeCQL    conditionalCQL = `INSERT INTO mail_slots (scope, slot, attempt) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?`
	slotsSelectCQL readCQL        = `SELECT slot, attempt, TTL(attempt) AS ttl FROM mail_slots WHERE scope = ?`
	slotSelectCQL  readCQL        = `SELECT attempt FROM mail_slots WHERE scope = ? AND slot = ?`
)

// Slots reads scope's taken slots (mail_slots, migration 049) with when
// each frees: now plus its row's TTL, rounded up to the next second.
// The partition holds a row per slot, at most a budget's, live or
// expired.
func (s *Attempts) Slots(ctx context.Context, scope string) (map[int]time.Time, error) {
	rows, err := selectRows[slotRow](s.db.query(ctx, 0, slotsSelectCQL, scope))
	if err != nil {
		return nil, dbErr("mail_slots.read", err)
	}
	now := s.db.Now().UTC()
	out := make(map[int]time.Time, len(rows))
	for _, r := range rows {
		out[r.Slot] = now.Add(time.Duration(r.TTL+1) * time.Second)
	}
	return out, nil
}

// Take takes slot n of scope for a, living for ttl, IF NOT EXISTS. An
// ambiguous answer is settled by the slot's row at SERIAL: a's attempt
// there is taken, another's is not, and no row is a slot free for the
// statement to be run again.
func (s *Attempts) Take(ctx context.Context, scope string, n int, a accounts.Attempt, ttl time.Duration) (bool, error) {
	var held slotCells
	applied, err := s.db.exec(ctx, lwt{
		name: "mail_slots.take",
		run: func(ctx context.Context) (bool, error) {
			return s.db.cas(ctx, &held, slotTakeCQL, scope, n, a.ID, ttlSeconds(ttl))
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := getRow[takenRow](s.db.query(ctx, s.db.Serial, slotSelectCQL, scope, n))
			switch {
			case err != nil:
				return false, false, err
			case !found:
				return false, true, nil
			}
			return r.Attempt == a.ID, false, nil
		},
	})
	if err != nil {
		return false, err
	}
	// Not applied: the row in its way may be a's own, an attempt of this
	// statement landed before (a repeat).
	return applied || held.Attempt == a.ID, nil
}
