package repository

import (
	"context"
	"fmt"
	"slices"

	"github.com/gocql/gocql"

	"shelf/domain"
)

// casTable is a table of LWT-managed rows keyed by id (users, groups,
// content, jobs): every write is a lightweight transaction tagged with a
// fresh write id, and an ambiguous answer is settled by reading the row at
// SERIAL and comparing that tag (DB.exec). Rows whose status column says
// pending can be discarded.
type casTable[R any, P scanned[R]] struct {
	db *DB
	// name is the table's name; fault and error names start with it.
	name string
	// selectCQL reads one row by id.
	selectCQL readCQL
	// writeID, version and status read those columns of a row.
	writeID func(R) string
	version func(R) int
	status  func(R) string
}

// write runs one conditional statement (op names it: "create", "update" ...)
// whose arguments carry writeID, for the row id. target is the version the
// write gives the row (a change: IF version = target-1), or 0 for writes
// that are not compare-and-set on the version (create, activate).
//
// Reading the row back settles a lost answer by its tag and version: our
// tag means applied; the target version under another tag means another
// write took that version, so ours never applied and never will (its
// condition is false for good: versions only grow); anything else runs it
// again, and its condition decides again (DB.exec believes that run's "not
// applied" only if the row then proves it).
func (t casTable[R, P]) write(ctx context.Context, op string, stmt conditionalCQL, id, writeID string, target int, args ...any) (bool, error) {
	return t.db.exec(ctx, lwt{
		name: t.name + "." + op,
		run:  func(ctx context.Context) (bool, error) { return t.db.cas(ctx, nil, stmt, args...) },
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := t.get(ctx, id, t.db.Serial)
			switch {
			case err != nil:
				return false, false, err
			case found && t.writeID(r) == writeID:
				return true, false, nil
			case found && target > 0 && t.version(r) == target:
				return false, false, nil // another write took our version
			}
			return false, true, nil
		},
	})
}

// create inserts a row IF NOT EXISTS (ids are fresh random ids, so "exists"
// is an error, not an outcome) and answers the tag of the attempt whose
// row it is. Each attempt carries a tag of its own (args gives the
// statement's arguments for one): an attempt whose answer was lost, sent
// again, may still land once the row expired, writing it again under its
// own tag, which an activation of the tag answered never takes (IF
// write_id = ?). A read-back finding any of the tags sent settles it.
func (t casTable[R, P]) create(ctx context.Context, stmt conditionalCQL, id string, args func(writeID string) []any) (string, error) {
	var sent []string
	stood := ""
	ok, err := t.db.exec(ctx, lwt{
		name: t.name + ".create",
		attempt: func() func(context.Context) (bool, error) {
			tag := newWriteID()
			sent = append(sent, tag)
			a := args(tag)
			return func(ctx context.Context) (bool, error) { return t.db.cas(ctx, nil, stmt, a...) }
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := t.get(ctx, id, t.db.Serial)
			switch {
			case err != nil:
				return false, false, err
			case found && slices.Contains(sent, t.writeID(r)):
				stood = t.writeID(r)
				return true, false, nil
			}
			return false, true, nil
		},
	})
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", fmt.Errorf("%s.create: id %s already exists", t.name, id)
	case stood == "":
		stood = sent[len(sent)-1] // answered applied: the last attempt sent
	}
	return stood, nil
}

// discardPending deletes a row that is still pending (stmt: DELETE ... IF
// status = 'pending').
func (t casTable[R, P]) discardPending(ctx context.Context, stmt conditionalCQL, id string) error {
	_, err := t.db.exec(ctx, lwt{
		name: t.name + ".discard",
		run:  func(ctx context.Context) (bool, error) { return t.db.cas(ctx, nil, stmt, id) },
		resolve: func(ctx context.Context) (bool, bool, error) {
			r, found, err := t.get(ctx, id, t.db.Serial)
			if err != nil {
				return false, false, err
			}
			pending := found && t.status(r) == string(domain.StatusPending)
			return !pending, pending, nil
		},
	})
	return err
}

// read returns a row at the session's consistency, or at SERIAL;
// domain.ErrNotFound when there is none.
func (t casTable[R, P]) read(ctx context.Context, id string, serial bool) (R, error) {
	cl := gocql.Consistency(0)
	if serial {
		cl = t.db.Serial
	}
	r, found, err := t.get(ctx, id, cl)
	if err != nil {
		return r, dbErr(t.name+".get", err)
	}
	if !found {
		return r, domain.ErrNotFound
	}
	return r, nil
}

// get reads a row at cl (0: the session's default).
func (t casTable[R, P]) get(ctx context.Context, id string, cl gocql.Consistency) (R, bool, error) {
	return getRow[R, P](t.db.query(ctx, cl, t.selectCQL, id))
}
