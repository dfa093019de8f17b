package accounts

import (
	"cmp"
	"context"
	"math"
	"strconv"

	"shelf/domain"
)

// UserSearch finds accounts by the grams their rows carry
// (docs/design/user-search.md).
type UserSearch interface {
	// Search returns up to n accounts whose grams hold every one of
	// grams, each with its position (the row's token), in the order of
	// their positions, all past after (math.MinInt64: from the start). It
	// may return rows the search does not show (pending, being deleted,
	// holding the grams but not the query): the caller checks each.
	Search(ctx context.Context, grams []string, after int64, n int) ([]domain.Found, error)
	// People returns up to n accounts whose username prefixes hold the
	// folded prefix, their public part alone, as Search orders and pages
	// them (docs/design/people-search.md). It may return rows the search
	// does not show (pending, renamed since): the caller checks each.
	People(ctx context.Context, prefix string, after int64, n int) ([]domain.FoundProfile, error)
}

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
	page, err := refilled(after, limit, func(after int64, n int) ([]domain.Found, error) {
		return a.search.Search(ctx, grams, after, n)
	}, func(f domain.Found) bool { return f.User.Matches(folded) }, func(f domain.Found) int64 { return f.Position })
	if err != nil {
		return domain.Page[domain.User]{}, err
	}
	out := usersOf(page)
	// A change pending past its link's life reads as none, as in every
	// view of the account (shown).
	h := a.holdsAt(a.cfg.Now())
	for i, u := range out.Items {
		out.Items[i], _ = h.live(u)
	}
	return out, nil
}

// refilled is a page of a search over an index in position order: it reads
// limit+1 rows at a time past after, keeps those shows says the search
// shows, and reads on while the index has more and the page is not full,
// at most searchRefills times more. The rows' position says where a
// cursor goes on; a page whose refills ran out on rows left out comes
// shorter, its cursor past the last row read.
func refilled[T any](after int64, limit int, read func(after int64, n int) ([]T, error), shows func(T) bool, position func(T) int64) (domain.Page[T], error) {
	var shown []T
	for range searchRefills + 1 {
		rows, err := read(after, limit+1)
		if err != nil {
			return domain.Page[T]{}, err
		}
		for _, f := range rows {
			if shows(f) {
				shown = append(shown, f)
			}
		}
		if len(rows) <= limit || len(shown) > limit {
			// The index has no more, or the page is full (and one more
			// says whether another follows).
			return domain.PageOf(shown, limit, func(last T) string { return encodeSearchCursor(position(last)) }), nil
		}
		after = position(rows[len(rows)-1])
	}
	return domain.Page[T]{Items: shown, Next: encodeSearchCursor(after)}, nil
}

// SearchPeople lists, for any logged-in user, the visible accounts whose
// username starts with prefix (compared in lower case), their public part
// alone (no email, no status: a search says no more than a profile), in
// the index's order, limit a page. A row is shown only if it says so itself
// (Profile.HasUsernamePrefix), so a rename is never found by the name it
// left, nor a signup before it answered; a page whose refills ran out on
// rows left out comes shorter, its cursor past what it read.
func (a *Service) SearchPeople(ctx context.Context, p domain.Principal, prefix, cursor string, limit int) (domain.Page[domain.Profile], error) {
	if c, err := a.Caller(ctx, p); err != nil || c == nil {
		return domain.Page[domain.Profile]{}, cmp.Or(err, error(domain.ErrNoSession))
	}
	folded, fe := domain.FoldPrefix("prefix", prefix)
	if fe != nil {
		return domain.Page[domain.Profile]{}, domain.Invalid("The prefix is not the start of a username.", *fe)
	}
	after, err := decodeSearchCursor(cursor)
	if err != nil {
		return domain.Page[domain.Profile]{}, err
	}
	if a.search == nil {
		return domain.Page[domain.Profile]{}, domain.ErrUnavailable
	}
	page, err := refilled(after, limit, func(after int64, n int) ([]domain.FoundProfile, error) {
		return a.search.People(ctx, folded, after, n)
	}, func(f domain.FoundProfile) bool { return f.Profile.HasUsernamePrefix(folded) }, func(f domain.FoundProfile) int64 { return f.Position })
	if err != nil {
		return domain.Page[domain.Profile]{}, err
	}
	return profilesOf(page), nil
}

// profilesOf is a page of found profiles as a page of profiles.
func profilesOf(p domain.Page[domain.FoundProfile]) domain.Page[domain.Profile] {
	out := domain.Page[domain.Profile]{Items: make([]domain.Profile, len(p.Items)), Next: p.Next}
	for i, f := range p.Items {
		out.Items[i] = f.Profile
	}
	return out
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
