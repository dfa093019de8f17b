// Package seeds runs the uniqueness patterns of the seeds beside shelf's own
// claim protocol, each claiming a username+email pair for one of several
// racing claimants on a real cluster. Each pattern is written the way its
// seed describes it, flaws included: the point is to see which of them keep
// a key to one claimant (U1) and a pair to one claimant (U2) under
// contention and a hung node, and what that costs. It is benchmark code,
// never imported by the product; `make bench-seeds` runs it (seeds_test.go,
// build tag seeds).
package seeds

import (
	"context"
	"fmt"

	"github.com/scylladb/gocqlx/v2"
)

// Pair is what one round's claimants race for: a username and an email,
// both fresh.
type Pair struct {
	Username string
	Email    string
}

// Won is what a claimant believes it holds once its attempt returned.
type Won struct {
	Username bool
	Email    bool
}

// Pattern is one way of making a username and an email unique.
type Pattern interface {
	// Name is the pattern's name in the table.
	Name() string
	// Setup creates the pattern's tables in the session's keyspace.
	Setup(ctx context.Context) error
	// Claim runs one claimant's attempt at the pair. Won says what the
	// claimant believes it holds afterwards, also when err is not nil (a
	// pattern may have won one key before failing on the other).
	Claim(ctx context.Context, p Pair, claimant string) (Won, error)
	// Holders reads who the database says holds each key, by the pattern's
	// own rule for reading it; usually one claimant or none.
	Holders(ctx context.Context, p Pair) (username, email []string, err error)
}

// createTables runs each CREATE TABLE and waits until every node agrees on
// the schema.
func createTables(ctx context.Context, s gocqlx.Session, stmts ...string) error {
	for _, stmt := range stmts {
		if err := s.ContextQuery(ctx, stmt, nil).ExecRelease(); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return s.AwaitSchemaAgreement(ctx)
}

// kindTable names a pattern's table for one kind of key, e.g.
// gist_username_locks. Kinds are the two constants below, never input.
func kindTable(prefix, kind, suffix string) string { return prefix + "_" + kind + suffix }

// The two kinds of key of a pair.
const (
	kindUsername = "username"
	kindEmail    = "email"
)

// oneAtATime claims a pair the way the seeds that claim one value would:
// the username, then, if that was won, the email; a username won stays won
// whatever becomes of the email, as those seeds have no way to give it back.
func oneAtATime(ctx context.Context, p Pair, claimant string, claim func(ctx context.Context, kind, key, claimant string) (bool, error)) (Won, error) {
	var won Won
	var err error
	if won.Username, err = claim(ctx, kindUsername, p.Username, claimant); !won.Username {
		return won, err
	}
	won.Email, err = claim(ctx, kindEmail, p.Email, claimant)
	return won, err
}

// bothHolders reads the holders of the pair's username, then its email.
func bothHolders(p Pair, read func(kind, key string) ([]string, error)) (username, email []string, err error) {
	if username, err = read(kindUsername, p.Username); err != nil {
		return nil, nil, err
	}
	email, err = read(kindEmail, p.Email)
	return username, email, err
}
