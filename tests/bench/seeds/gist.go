package seeds

import (
	"context"
	"fmt"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// Gist is the gist's "third attempt" (seed 002): a lock row taken with a
// lightweight transaction under a short TTL, then a check that the value is
// free, a plain insert of the value row, and the lock deleted again.
//
// The gist claims one value. For a pair, a claimant runs it for the
// username and then, if it got the username, for the email; the gist has
// no way to give back a value it inserted (its second attempt explains why
// deleting is dangerous), so a claimant that loses the email keeps the
// username.
//
// Kept as the gist wrote it:
//   - a lock that cannot be taken, for any reason (an LWT timeout
//     included), is "please try again": the claimant gives up;
//   - the check sets no consistency, so it reads at the driver's default
//     (LOCAL_ONE in the DataStax Java driver), not at QUORUM;
//   - the lock and the value row are written and deleted with plain
//     statements beside the LWT;
//   - a failed insert deletes the value row at ANY, whoever wrote it, and
//     the error is swallowed: create() returns as if it had succeeded (the
//     claimant believes it won; Claim still returns the error, to count).
type Gist struct {
	s gocqlx.Session
}

// NewGist returns the gist's pattern on the session's keyspace.
func NewGist(s gocqlx.Session) *Gist { return &Gist{s: s} }

// gistLockTTL is the gist's lease on a lock: "TTL 10".
const gistLockTTL = 10

// Name implements Pattern.
func (g *Gist) Name() string { return "gist (LWT lock + check + insert)" }

// Setup creates a lock table and a value table per kind, as the gist's
// customer_lock and customer_account.
func (g *Gist) Setup(ctx context.Context) error {
	var stmts []string
	for _, kind := range []string{kindUsername, kindEmail} {
		stmts = append(stmts,
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (key text PRIMARY KEY)", kindTable("gist", kind, "_locks")),
			fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (key text PRIMARY KEY, claimant text)", kindTable("gist", kind, "s")))
	}
	return createTables(ctx, g.s, stmts...)
}

// Claim implements Pattern: the username, then the email.
func (g *Gist) Claim(ctx context.Context, p Pair, claimant string) (Won, error) {
	return oneAtATime(ctx, p, claimant, g.create)
}

// create is the gist's create(): true when it returned normally, which is
// when its caller believes the value is its own.
func (g *Gist) create(ctx context.Context, kind, key, claimant string) (bool, error) {
	if !g.acquire(ctx, kind, key) {
		return false, nil // CustomerCreateException: "please try again"
	}
	defer g.release(ctx, kind, key)
	unique, err := g.isUnique(ctx, kind, key)
	if err != nil {
		return false, err
	}
	if !unique {
		return false, nil // DuplicateCustomerIDException
	}
	insert := fmt.Sprintf("INSERT INTO %s (key, claimant) VALUES (?, ?)", kindTable("gist", kind, "s"))
	if err := g.s.ContextQuery(ctx, insert, nil).Bind(key, claimant).Consistency(gocql.Quorum).ExecRelease(); err != nil {
		// The gist's catch-all: assume failure, delete the row at ANY,
		// and fall through without rethrowing.
		del := fmt.Sprintf("DELETE FROM %s WHERE key = ?", kindTable("gist", kind, "s"))
		_ = g.s.ContextQuery(ctx, del, nil).Bind(key).Consistency(gocql.Any).ExecRelease()
		// The claimant believes it won; the error goes back only so the
		// runner can count how often that happened.
		return true, fmt.Errorf("gist: insert %s failed, row deleted, error swallowed: %w", kind, err)
	}
	return true, nil
}

// acquire takes the lock row; any error counts as not taken.
func (g *Gist) acquire(ctx context.Context, kind, key string) bool {
	stmt := fmt.Sprintf("INSERT INTO %s (key) VALUES (?) IF NOT EXISTS USING TTL %d", kindTable("gist", kind, "_locks"), gistLockTTL)
	applied, err := g.s.ContextQuery(ctx, stmt, nil).Bind(key).Consistency(gocql.Quorum).ExecCASRelease()
	return err == nil && applied
}

// release deletes the lock row with a plain delete, ignoring errors.
func (g *Gist) release(ctx context.Context, kind, key string) {
	stmt := fmt.Sprintf("DELETE FROM %s WHERE key = ?", kindTable("gist", kind, "_locks"))
	_ = g.s.ContextQuery(ctx, stmt, nil).Bind(key).Consistency(gocql.Quorum).ExecRelease()
}

// isUnique reads the value row at the driver's default consistency.
func (g *Gist) isUnique(ctx context.Context, kind, key string) (bool, error) {
	stmt := fmt.Sprintf("SELECT claimant FROM %s WHERE key = ?", kindTable("gist", kind, "s"))
	var claimants []string
	if err := g.s.ContextQuery(ctx, stmt, nil).Bind(key).Consistency(gocql.LocalOne).SelectRelease(&claimants); err != nil {
		return false, fmt.Errorf("gist: read %s: %w", kind, err)
	}
	return len(claimants) == 0, nil
}

// Holders implements Pattern: the claimant in each value row (a later
// plain insert overwrote an earlier one).
func (g *Gist) Holders(ctx context.Context, p Pair) (username, email []string, err error) {
	return bothHolders(p, func(kind, key string) ([]string, error) {
		stmt := fmt.Sprintf("SELECT claimant FROM %s WHERE key = ?", kindTable("gist", kind, "s"))
		var claimants []string
		err := g.s.ContextQuery(ctx, stmt, nil).Bind(key).Consistency(gocql.Quorum).SelectRelease(&claimants)
		return claimants, err
	})
}
