package seeds

import (
	"context"
	"fmt"
	"time"

	"github.com/gocql/gocql"
	"github.com/scylladb/gocqlx/v2"
)

// Poll is the poll post's unique names (seed 003): insert yourself under
// the name with a key made of the current time in milliseconds and who you
// are (the post's "currentTimestamp - ClusterNodeId - ThreadId"), so
// Cassandra keeps the claimants of a name in time order; then read every
// claimant up to and including yourself, at QUORUM. Anyone before you: the
// name is taken, and you delete your row. Nobody: it is yours.
//
// The post claims one name. For a pair, a claimant does it for the
// username and then, if it got the username, for the email, each with a
// key stamped when it is inserted; the post has no way to give a name back
// once it was won, so a claimant that loses the email keeps the username.
type Poll struct {
	s gocqlx.Session
}

// NewPoll returns the post's pattern on the session's keyspace.
func NewPoll(s gocqlx.Session) *Poll { return &Poll{s: s} }

// Name implements Pattern.
func (p *Poll) Name() string { return "poll post (ordered insert, read back)" }

// Setup creates one table per kind: a partition per name, its claimants in
// time order.
func (p *Poll) Setup(ctx context.Context) error {
	var stmts []string
	for _, kind := range []string{kindUsername, kindEmail} {
		stmts = append(stmts, fmt.Sprintf(
			"CREATE TABLE IF NOT EXISTS %s (name text, at bigint, claimant text, PRIMARY KEY (name, at, claimant))",
			kindTable("poll", kind, "s")))
	}
	return createTables(ctx, p.s, stmts...)
}

// Claim implements Pattern: the username, then the email.
func (p *Poll) Claim(ctx context.Context, pair Pair, claimant string) (Won, error) {
	return oneAtATime(ctx, pair, claimant, p.claim)
}

// claim inserts the claimant under the name, reads the name's claimants up
// to it, and keeps its row only if nobody came before.
func (p *Poll) claim(ctx context.Context, kind, name, claimant string) (bool, error) {
	table := kindTable("poll", kind, "s")
	at := time.Now().UnixMilli()
	insert := fmt.Sprintf("INSERT INTO %s (name, at, claimant) VALUES (?, ?, ?)", table)
	if err := p.s.ContextQuery(ctx, insert, nil).Bind(name, at, claimant).Consistency(gocql.Quorum).ExecRelease(); err != nil {
		return false, fmt.Errorf("poll: insert %s: %w", kind, err)
	}
	var before []struct {
		At       int64  `db:"at"`
		Claimant string `db:"claimant"`
	}
	read := fmt.Sprintf("SELECT at, claimant FROM %s WHERE name = ? AND (at, claimant) <= (?, ?)", table)
	if err := p.s.ContextQuery(ctx, read, nil).Bind(name, at, claimant).Consistency(gocql.Quorum).SelectRelease(&before); err != nil {
		return false, fmt.Errorf("poll: read back %s: %w", kind, err)
	}
	for _, row := range before {
		if row.Claimant != claimant {
			del := fmt.Sprintf("DELETE FROM %s WHERE name = ? AND at = ? AND claimant = ?", table)
			if err := p.s.ContextQuery(ctx, del, nil).Bind(name, at, claimant).Consistency(gocql.Quorum).ExecRelease(); err != nil {
				return false, fmt.Errorf("poll: delete own %s: %w", kind, err)
			}
			return false, nil
		}
	}
	return true, nil
}

// Holders implements Pattern: by the post's rule, the earliest claimant
// left under each name.
func (p *Poll) Holders(ctx context.Context, pair Pair) (username, email []string, err error) {
	return bothHolders(pair, func(kind, name string) ([]string, error) {
		var claimants []string
		stmt := fmt.Sprintf("SELECT claimant FROM %s WHERE name = ? LIMIT 1", kindTable("poll", kind, "s"))
		err := p.s.ContextQuery(ctx, stmt, nil).Bind(name).Consistency(gocql.Quorum).SelectRelease(&claimants)
		return claimants, err
	})
}
