package repository

import (
	"context"
	"errors"

	"github.com/gocql/gocql"
)

// scanned is a row type whose pointer lists its fields as scan
// destinations, in the order its SELECT names the columns (each row type's
// columns method sits next to its statement; TestColumnsMatchSelects
// checks the two agree). Reads scan straight into the fields: gocqlx's
// struct mapping worked the mapping out again, by reflection, for every
// field of every row (16% of the API's CPU on a library page).
type scanned[R any] interface {
	*R
	columns() []any
}

// query is stmt with its arguments on ctx, read at cl (0: the session's).
func (db *DB) query(ctx context.Context, cl gocql.Consistency, stmt string, args ...any) *gocql.Query {
	q := db.Session.Session.Query(stmt, args...).WithContext(ctx)
	if cl != 0 {
		q = q.Consistency(cl)
	}
	return q
}

// getRow reads the one row q selects; found is false when there is none.
func getRow[R any, P scanned[R]](q *gocql.Query) (r R, found bool, err error) {
	defer q.Release()
	err = q.Scan(P(&r).columns()...)
	if errors.Is(err, gocql.ErrNotFound) {
		return r, false, nil
	}
	return r, err == nil, err
}

// selectRows reads every row q selects.
func selectRows[R any, P scanned[R]](q *gocql.Query) ([]R, error) {
	defer q.Release()
	iter := q.Iter()
	var out []R
	for {
		var r R
		if !iter.Scan(P(&r).columns()...) {
			break
		}
		out = append(out, r)
	}
	return out, iter.Close()
}
