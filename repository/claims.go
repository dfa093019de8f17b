package repository

import (
	"context"
	"fmt"
	"time"

	"shelf/domain"
)

// Claims keeps the claim tables (usernames, emails, group_names). Every
// write is a lightweight transaction conditioned on the owner and
// operation (U6).
type Claims struct {
	db *DB
}

var _ domain.ClaimStore = (*Claims)(nil)

// NewClaims returns the claim store.
func NewClaims(db *DB) *Claims { return &Claims{db: db} }

// claimRow is a row of a claim table.
type claimRow struct {
	Key       string    `db:"key"`
	UserID    string    `db:"user_id"`
	Op        string    `db:"op"`
	State     string    `db:"state"`
	ClaimedAt time.Time `db:"claimed_at"`
	// BaseVersion is null (0) on rows from before migration 006.
	BaseVersion int `db:"base_version"`
}

// columns are claimSelectCQL's.
func (r *claimRow) columns() []any {
	return []any{&r.Key, &r.UserID, &r.Op, &r.State, &r.ClaimedAt, &r.BaseVersion}
}

func (r claimRow) toDomain(kind domain.ClaimKind) domain.Claim {
	return domain.Claim{Kind: kind, Key: r.Key, Owner: r.UserID, Op: r.Op, State: domain.ClaimState(r.State),
		BaseVersion: r.BaseVersion, At: r.ClaimedAt}
}

// claimTables maps each kind to its table. Table names are constants, never
// taken from input.
var claimTables = map[domain.ClaimKind]string{
	domain.KindUsername:  "usernames",
	domain.KindEmail:     "emails",
	domain.KindGroupName: "group_names",
}

func table(kind domain.ClaimKind) string {
	t, ok := claimTables[kind]
	if !ok {
		panic(fmt.Sprintf("repository: no claim table for kind %q", kind))
	}
	return t
}

// The statements on claim tables: every write is conditional (U6).
const (
	claimInsertCQL   conditionalCQL = `INSERT INTO %s (key, user_id, op, state, claimed_at, base_version) VALUES (?, ?, ?, 'pending', ?, ?) IF NOT EXISTS USING TTL ?`
	claimCommitCQL   conditionalCQL = `UPDATE %s USING TTL 0 SET user_id = ?, op = ?, state = 'committed', claimed_at = ?, base_version = ? WHERE key = ? IF user_id = ? AND op = ?`
	claimReleaseCQL  conditionalCQL = `DELETE FROM %s WHERE key = ? IF user_id = ? AND op = ?`
	claimTakeoverCQL conditionalCQL = `UPDATE %s USING TTL ? SET user_id = ?, op = ?, state = 'pending', claimed_at = ?, base_version = ? WHERE key = ? IF user_id = ? AND op = ? AND state = 'committed'`
	claimAdoptCQL    conditionalCQL = `UPDATE %s USING TTL 0 SET user_id = ?, op = ?, state = 'committed', claimed_at = ?, base_version = ? WHERE key = ? IF user_id = ? AND op = ? AND state = 'committed'`
	claimSelectCQL   readCQL        = `SELECT key, user_id, op, state, claimed_at, base_version FROM %s WHERE key = ?`
)

// Claim inserts the key for (owner, op) under a lease if nobody holds it.
func (c *Claims) Claim(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int, lease time.Duration) (domain.Claim, error) {
	t := table(kind)
	var existing claimRow
	now := c.db.Now().UTC()
	_, err := c.db.exec(ctx, lwt{
		name: t + ".claim",
		run: func(ctx context.Context) (bool, error) {
			// Not applied: the row in the way, as Cassandra sent it back.
			var inTheWay claimRow
			applied, err := c.db.cas(ctx, &inTheWay, onTable(claimInsertCQL, t), key, owner, op, now, base, ttlSeconds(lease))
			if applied {
				existing = claimRow{Key: key, UserID: owner, Op: op, State: string(domain.ClaimPending), ClaimedAt: now, BaseVersion: base}
			} else {
				existing = inTheWay
			}
			return applied, err
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			found, err := c.serialGet(ctx, t, key, &existing)
			if err != nil {
				return false, false, err
			}
			// No row: it did not apply and nothing is in the way, so run it
			// again. A row is the answer, ours or not.
			return found && existing.UserID == owner && existing.Op == op, !found, nil
		},
	})
	if err != nil {
		return domain.Claim{}, err
	}
	return existing.toDomain(kind), nil
}

// Commit rewrites every column without TTL if (owner, op) holds the claim.
func (c *Claims) Commit(ctx context.Context, kind domain.ClaimKind, key, owner, op string, base int) (bool, error) {
	t := table(kind)
	now := c.db.Now().UTC()
	return c.db.exec(ctx, lwt{
		name: t + ".commit",
		run: func(ctx context.Context) (bool, error) {
			return c.db.cas(ctx, nil, onTable(claimCommitCQL, t), owner, op, now, base, key, owner, op)
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			var row claimRow
			found, err := c.serialGet(ctx, t, key, &row)
			if err != nil {
				return false, false, err
			}
			ours := found && row.UserID == owner && row.Op == op
			return ours && row.State == string(domain.ClaimCommitted), ours && row.State != string(domain.ClaimCommitted), nil
		},
	})
}

// Release deletes the claim if (owner, op) still holds it.
func (c *Claims) Release(ctx context.Context, kind domain.ClaimKind, key, owner, op string) error {
	t := table(kind)
	_, err := c.db.exec(ctx, lwt{
		name: t + ".release",
		run: func(ctx context.Context) (bool, error) {
			return c.db.cas(ctx, nil, onTable(claimReleaseCQL, t), key, owner, op)
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			var row claimRow
			found, err := c.serialGet(ctx, t, key, &row)
			if err != nil {
				return false, false, err
			}
			stillOurs := found && row.UserID == owner && row.Op == op
			return !stillOurs, stillOurs, nil
		},
	})
	return err
}

// Takeover moves a committed claim of a dead account (or an orphan) to
// (owner, op) under a lease, if it is still exactly the claim that was
// found.
func (c *Claims) Takeover(ctx context.Context, kind domain.ClaimKind, key string, dead domain.Claim, owner, op string, base int, lease time.Duration) (bool, error) {
	t := table(kind)
	now := c.db.Now().UTC()
	return c.moveCommitted(ctx, t+".takeover", key, dead, owner, op, func(ctx context.Context) (bool, error) {
		return c.db.cas(ctx, nil, onTable(claimTakeoverCQL, t), ttlSeconds(lease), owner, op, now, base, key, dead.Owner, dead.Op)
	})
}

// Adopt moves a committed claim of the owner to another operation of the
// same owner, still committed (no TTL), if it is still exactly the claim
// that was found.
func (c *Claims) Adopt(ctx context.Context, kind domain.ClaimKind, key string, old domain.Claim, op string, base int) (bool, error) {
	t := table(kind)
	now := c.db.Now().UTC()
	return c.moveCommitted(ctx, t+".adopt", key, old, old.Owner, op, func(ctx context.Context) (bool, error) {
		return c.db.cas(ctx, nil, onTable(claimAdoptCQL, t), old.Owner, op, now, base, key, old.Owner, old.Op)
	})
}

// moveCommitted runs a write that moves the committed claim found (from)
// to (owner, op); a lost answer is settled by reading the claim back.
func (c *Claims) moveCommitted(ctx context.Context, name, key string, from domain.Claim, owner, op string, run func(context.Context) (bool, error)) (bool, error) {
	t := table(from.Kind)
	return c.db.exec(ctx, lwt{
		name: name,
		run:  run,
		resolve: func(ctx context.Context) (bool, bool, error) {
			var row claimRow
			found, err := c.serialGet(ctx, t, key, &row)
			if err != nil {
				return false, false, err
			}
			if found && row.UserID == owner && row.Op == op {
				return true, false, nil
			}
			stillThere := found && row.UserID == from.Owner && row.Op == from.Op && row.State == string(domain.ClaimCommitted)
			return false, stillThere, nil
		},
	})
}

// Lookup reads a claim at the configured consistency.
func (c *Claims) Lookup(ctx context.Context, kind domain.ClaimKind, key string) (domain.Claim, error) {
	t := table(kind)
	row, found, err := getRow[claimRow](c.db.query(ctx, 0, onTable(claimSelectCQL, t), key))
	if err != nil {
		return domain.Claim{}, dbErr(t+".lookup", err)
	}
	if !found {
		return domain.Claim{}, domain.ErrNotFound
	}
	return row.toDomain(kind), nil
}

func (c *Claims) serialGet(ctx context.Context, t, key string, dest *claimRow) (bool, error) {
	row, found, err := getRow[claimRow](c.db.query(ctx, c.db.Serial, onTable(claimSelectCQL, t), key))
	*dest = row
	return found, err
}

// ttlSeconds turns a lease into a TTL, at least one second.
func ttlSeconds(d time.Duration) int {
	if s := int(d / time.Second); s > 0 {
		return s
	}
	return 1
}
