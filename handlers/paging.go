package handlers

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"shelf/domain"
	"shelf/domain/library"
)

// Paging limits of every list (docs/design/api-conventions.md).
const (
	defaultPageLimit = 20
	maxPageLimit     = 100
)

// pageParams reads ?cursor= and ?limit= (default 20, 1-100). A query
// string that does not parse (a stray '%') is refused: read leniently, its
// bad pairs would be dropped and ?cursor=%%%x would quietly read the first
// page. So is a parameter given twice: who reads which one differs.
func pageParams(r *http.Request) (cursor string, limit int, err error) {
	q, err := listQuery(r, "cursor", "limit")
	if err != nil {
		return "", 0, err
	}
	return pageOf(q)
}

// libraryParams reads a library's ?order= (newest, the default, or
// oldest) beside ?cursor= and ?limit=, as strictly: given twice or empty
// it is refused naming order.
func libraryParams(r *http.Request) (order library.Order, cursor string, limit int, err error) {
	q, err := listQuery(r, "cursor", "limit", "order")
	if err != nil {
		return "", "", 0, err
	}
	if cursor, limit, err = pageOf(q); err != nil {
		return "", "", 0, err
	}
	order = library.NewestFirst
	if q.Has("order") {
		if order, err = library.ParseOrder(q.Get("order")); err != nil {
			return "", "", 0, err
		}
	}
	return order, cursor, limit, nil
}

// listQuery parses a request's query string, refusing one that does not
// parse, any of names given more than once, and a name that is one of
// names only in another case: ignored, ?Keep=current would end the
// caller's session too and ?Actor= show the whole audit, where a proxy
// in front reading names case-insensitively saw the parameter (a body's
// names are refused alike, onlyOneMeaning). Other names are left alone.
func listQuery(r *http.Request, names ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, newProblem(http.StatusBadRequest, "validation_failed", "The query string does not parse.",
			ProblemField{Field: "query", Code: "malformed", Message: "must be a valid URL query string"})
	}
	for _, sent := range slices.Sorted(maps.Keys(q)) {
		for _, name := range names {
			if sent != name && strings.EqualFold(sent, name) {
				return nil, newProblem(http.StatusBadRequest, "validation_failed",
					fmt.Sprintf("The query parameter %q is not one of this request's; names match exactly, case included (%s).", sent, name),
					ProblemField{Field: sent, Code: "unknown", Message: "is not a parameter of this request (did you mean " + name + "?)"})
			}
		}
	}
	for _, name := range names {
		if len(q[name]) > 1 {
			return nil, newProblem(http.StatusBadRequest, "validation_failed", name+" is given more than once.",
				ProblemField{Field: name, Code: "duplicate", Message: "is given more than once"})
		}
	}
	return q, nil
}

// pageOf reads cursor and limit from a parsed query. A cursor present but
// empty ("?cursor=") is refused: no list hands one out (the last page has
// no nextCursor), and read as none it quietly answered the first page
// again to a client that sent back a cursor it did not get, which then
// listed everything again without end.
func pageOf(q url.Values) (cursor string, limit int, err error) {
	if q.Has("cursor") && q.Get("cursor") == "" {
		return "", 0, newProblem(http.StatusBadRequest, "validation_failed",
			"cursor is empty; leave it out for the first page, or send the nextCursor of the page before.",
			ProblemField{Field: "cursor", Code: "invalid", Message: "is not a cursor this list returned (leave it out for the first page)"})
	}
	if !q.Has("limit") {
		return q.Get("cursor"), defaultPageLimit, nil
	}
	// Digits only, without sign or leading zero ("+5" and "05" are not how
	// the contract writes 5). Present but empty ("?limit=") is not a number
	// either.
	raw := q.Get("limit")
	n, err := strconv.Atoi(raw)
	if err != nil || raw != strconv.Itoa(n) || n < 1 || n > maxPageLimit {
		return "", 0, newProblem(http.StatusBadRequest, "validation_failed", "limit must be a whole number from 1 to 100.",
			ProblemField{Field: "limit", Code: "range", Message: "must be a whole number from 1 to 100"})
	}
	return q.Get("cursor"), n, nil
}

// pageResponse is every list: items and, except on the last page, nextCursor.
type pageResponse[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// toPage is the answer for a page of the domain, each item converted.
func toPage[T, R any](p domain.Page[T], convert func(T) R) pageResponse[R] {
	out := pageResponse[R]{Items: make([]R, len(p.Items)), NextCursor: p.Next}
	for i, item := range p.Items {
		out.Items[i] = convert(item)
	}
	return out
}
