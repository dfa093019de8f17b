package repository

import (
	"errors"

	"github.com/gocql/gocql"
)

// scanned is a row type whose pointer lists its fields as scan
// destinations, in the order its SELECT names the columns (each row type's
// columns method sits next to its statement; TestColumnsMatchSelects
// checks the two agree). Reads scan straight into the fields: gocqlx's
// struct mapping works the mapping out again, by reflection, for every
// field of every row (measured at 16% of the API's CPU on a library
// page).
type scanned[R any] interface {
	*R
	columns() []any
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

// selectValues reads the one column every row q selects has.
func selectValues[T any](q *gocql.Query) ([]T, error) {
	defer q.Release()
	iter := q.Iter()
	var out []T
	for {
		var v T
		if !iter.Scan(&v) {
			break
		}
		out = append(out, v)
	}
	return out, iter.Close()
}

// eachRow calls fn with every row q selects, in order, until fn fails; fn's
// error comes back as is, a failed read as a database error named op.
func eachRow[R any, P scanned[R]](q *gocql.Query, op string, fn func(R) error) error {
	defer q.Release()
	iter := q.Iter()
	for {
		var r R
		if !iter.Scan(P(&r).columns()...) {
			break
		}
		if err := fn(r); err != nil {
			_ = iter.Close()
			return err
		}
	}
	return dbErrOrNil(op, iter.Close())
}
