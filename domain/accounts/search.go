package accounts

import (
	"context"
	"math"
	"strconv"

	"shelf/domain"
)

// UserSearch finds accounts by the grams their rows carry
// (docs/design.md#user-search).
type UserSearch interface {
	// Search returns up to n accounts whose grams hold every one of
	// grams, each with its position (the row's token), in the order of
	// their positions, all past after (math.MinInt64: from the start). It
	// may return rows the search does not show (pending, being deleted,
	// holding the grams but not the query): the caller checks each.
	Search(ctx context.Context, grams []string, after int64, n int) ([]domain.Found, error)
}

// SetSearch gives the service its search; without one, a search answers
// that it cannot (tests and tools that never search).
func (a *Service) SetSearch(s UserSearch) { a.search = s }

// searchRefills bounds the reads of one page past the first, when the
// index returned rows the search does not show: then the page is shorter
// and its cursor goes on after the last row read.
const searchRefills = 8

// SearchUsers lists, for an active admin, the visible accounts whose
// username or email holds q (compared as FoldSearch folds it), in an
// order of their own that paging keeps (the index's positions), limit a
// page. A row the index returns is shown only if it says so itself
// (User.Matches), so a rename, an email change or a deletion is never
// found by the name it left, nor a signup before it answered.
func (a *Service) SearchUsers(ctx context.Context, p domain.Principal, q, cursor string, limit int) (domain.Page[domain.User], error) {
	if _, err := a.RequireAdmin(ctx, p); err != nil {
		return domain.Page[domain.User]{}, err
	}
	folded, fe := domain.FoldSearch("q", q)
	if fe != nil {
		return domain.Page[domain.User]{}, domain.Invalid("The search query is not valid.", *fe)
	}
	after, err := decodeSearchCursor(cursor)
	if err != nil {
		return domain.Page[domain.User]{}, err
	}
	if a.search == nil {
		return domain.Page[domain.User]{}, domain.ErrUnavailable
	}
	grams := domain.QueryGrams(folded)
	var shown []domain.Found
	for range searchRefills + 1 {
		rows, err := a.search.Search(ctx, grams, after, limit+1)
		if err != nil {
			return domain.Page[domain.User]{}, err
		}
		for _, f := range rows {
			if f.User.Matches(folded) {
				shown = append(shown, f)
			}
		}
		if len(rows) <= limit || len(shown) > limit {
			// The index has no more, or the page is full (and one more
			// says whether another follows).
			return usersOf(domain.PageOf(shown, limit, func(last domain.Found) string { return encodeSearchCursor(last.Position) })), nil
		}
		after = rows[len(rows)-1].Position
	}
	// Refills spent on rows not shown: a shorter page, going on after the
	// last row read.
	return usersOf(domain.Page[domain.Found]{Items: shown, Next: encodeSearchCursor(after)}), nil
}

// usersOf is a page of found accounts as a page of accounts.
func usersOf(p domain.Page[domain.Found]) domain.Page[domain.User] {
	out := domain.Page[domain.User]{Items: make([]domain.User, len(p.Items)), Next: p.Next}
	for i, f := range p.Items {
		out.Items[i] = f.User
	}
	return out
}

// encodeSearchCursor is the cursor of a position in the index.
func encodeSearchCursor(position int64) string {
	return domain.EncodeCursor(strconv.FormatInt(position, 10))
}

// decodeSearchCursor reads a search cursor ("": the start).
func decodeSearchCursor(cursor string) (int64, error) {
	if cursor == "" {
		return math.MinInt64, nil
	}
	fields, err := domain.DecodeCursor(cursor, 1)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil || fields[0] != strconv.FormatInt(n, 10) || n == math.MinInt64 {
		return 0, domain.ErrBadCursor
	}
	return n, nil
}
