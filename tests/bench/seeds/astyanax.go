package seeds

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// Astyanax is Astyanax's multi-row uniqueness constraint (seed 000): a
// lock column named after the claimant is written with a TTL into every
// row being claimed (here the username's and the email's), each row is read
// back, and if any row holds another lock column it is a collision and our
// columns are deleted (rolled back); otherwise they are rewritten without a
// TTL (committed). Everything at QUORUM, nothing conditional: no Paxos.
//
// A row (a Thrift row, a CQL partition) holds one clustering row per lock
// column, "_LOCK_<claimant>". The lock writes of one claimant go out
// together in one unlogged batch, as Astyanax sends one mutation batch: not
// atomic. Any error on the way rolls back and is the claimant's answer.
type Astyanax struct {
	s   gocqlx.Session
	ttl time.Duration
}

// NewAstyanax returns the recipe on the session's keyspace, with lock
// columns that expire after ttl unless committed.
func NewAstyanax(s gocqlx.Session, ttl time.Duration) *Astyanax { return &Astyanax{s: s, ttl: ttl} }

// lockPrefix starts every lock column's name, as in the recipe.
const lockPrefix = "_LOCK_"

// Name implements Pattern.
func (a *Astyanax) Name() string { return "Astyanax (QUORUM lock columns, read back)" }

// Setup creates a column family per kind, each lock column a clustering
// row.
func (a *Astyanax) Setup(ctx context.Context) error {
	var stmts []string
	for _, kind := range []string{kindUsername, kindEmail} {
		stmts = append(stmts, fmt.Sprintf(
			"CREATE TABLE IF NOT EXISTS %s (key text, column text, value bigint, PRIMARY KEY (key, column))",
			kindTable("astyanax", kind, "s")))
	}
	return createTables(ctx, a.s, stmts...)
}

// rows are the rows a pair claims, in the order they are read back.
func (a *Astyanax) rows(p Pair) [][2]string {
	return [][2]string{{kindTable("astyanax", kindUsername, "s"), p.Username}, {kindTable("astyanax", kindEmail, "s"), p.Email}}
}

// Claim implements Pattern: acquire() of the recipe, all-or-nothing by
// construction (a collision on either row rolls back both).
func (a *Astyanax) Claim(ctx context.Context, p Pair, claimant string) (Won, error) {
	column := lockPrefix + claimant
	if err := a.write(ctx, p, column, int(a.ttl/time.Second)); err != nil {
		a.rollback(ctx, p, column)
		return Won{}, fmt.Errorf("astyanax: write lock columns: %w", err)
	}
	for _, row := range a.rows(p) {
		collision, err := a.collides(ctx, row[0], row[1], column)
		if err != nil {
			a.rollback(ctx, p, column)
			return Won{}, fmt.Errorf("astyanax: read back %s: %w", row[0], err)
		}
		if collision {
			a.rollback(ctx, p, column) // NotUniqueException
			return Won{}, nil
		}
	}
	if err := a.write(ctx, p, column, 0); err != nil {
		a.rollback(ctx, p, column)
		return Won{}, fmt.Errorf("astyanax: commit: %w", err)
	}
	return Won{Username: true, Email: true}, nil
}

// write puts the lock column into every row in one batch at QUORUM: with a
// TTL to lock, without (ttl 0) to commit.
func (a *Astyanax) write(ctx context.Context, p Pair, column string, ttl int) error {
	b := a.s.Session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	b.SetConsistency(gocql.Quorum)
	for _, row := range a.rows(p) {
		b.Query(fmt.Sprintf("INSERT INTO %s (key, column, value) VALUES (?, ?, 0) USING TTL ?", row[0]), row[1], column, ttl)
	}
	return a.s.Session.ExecuteBatch(b)
}

// collides reads the row at QUORUM and reports whether it holds a lock
// column other than ours.
func (a *Astyanax) collides(ctx context.Context, table, key, column string) (bool, error) {
	var columns []string
	stmt := fmt.Sprintf("SELECT column FROM %s WHERE key = ?", table)
	if err := a.s.ContextQuery(ctx, stmt, nil).Bind(key).Consistency(gocql.Quorum).SelectRelease(&columns); err != nil {
		return false, err
	}
	for _, c := range columns {
		if strings.HasPrefix(c, lockPrefix) && c != column {
			return true, nil
		}
	}
	return false, nil
}

// rollback deletes our lock column from every row, on a context of its own
// (a claimant whose attempt timed out still cleans up); errors are
// ignored, the TTL frees what is left.
func (a *Astyanax) rollback(ctx context.Context, p Pair, column string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	b := a.s.Session.NewBatch(gocql.UnloggedBatch).WithContext(ctx)
	b.SetConsistency(gocql.Quorum)
	for _, row := range a.rows(p) {
		b.Query(fmt.Sprintf("DELETE FROM %s WHERE key = ? AND column = ?", row[0]), row[1], column)
	}
	_ = a.s.Session.ExecuteBatch(b)
}

// Holders implements Pattern: the claimants whose lock column in the row is
// committed (has no TTL); lock columns still under a TTL are claims in
// flight or left behind, and expire.
func (a *Astyanax) Holders(ctx context.Context, p Pair) (username, email []string, err error) {
	var held [2][]string
	for i, row := range a.rows(p) {
		var columns []struct {
			Column string `db:"column"`
			TTL    *int   `db:"ttl"`
		}
		stmt := fmt.Sprintf("SELECT column, TTL(value) AS ttl FROM %s WHERE key = ?", row[0])
		if err := a.s.ContextQuery(ctx, stmt, nil).Bind(row[1]).Consistency(gocql.Quorum).SelectRelease(&columns); err != nil {
			return nil, nil, err
		}
		for _, c := range columns {
			if strings.HasPrefix(c.Column, lockPrefix) && (c.TTL == nil || *c.TTL == 0) {
				held[i] = append(held[i], strings.TrimPrefix(c.Column, lockPrefix))
			}
		}
	}
	return held[0], held[1], nil
}
