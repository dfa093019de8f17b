package repository

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"shelf/domain"
	"shelf/domain/accounts"
)

// UserSearch finds accounts through the storage-attached indexes on
// users.search_grams (migration 019, docs/design/user-search.md) and
// users.username_prefixes (migration 030, the people search). A search
// is not a partition read: the coordinator asks every token range
// of the ring, in its own rounds, for rows holding every gram, in token
// order after a position, and stops at the limit.
type UserSearch struct {
	db *DB
}

var _ accounts.UserSearch = (*UserSearch)(nil)

// NewUserSearch returns the search.
func NewUserSearch(db *DB) *UserSearch { return &UserSearch{db: db} }

// foundRow is an account row with its token: its position in a search.
type foundRow struct {
	userRow
	Token int64 `db:"row_token"`
}

func (r *foundRow) columns() []any { return append(r.userRow.columns(), &r.Token) }

// The searches, one per count of grams (domain.QueryGrams gives at most
// four): the index intersects the CONTAINS, the token range pages. A scan:
// sent again after an error, never copied.
const (
	searchFrom = `id, ` + userReadColumnNames + `, token(id) AS row_token FROM users WHERE token(id) > ? AND `
	searchOne  = `search_grams CONTAINS ?`
	searchMore = ` AND search_grams CONTAINS ?`

	userSearch1CQL scanCQL = `SELECT ` + searchFrom + searchOne + ` LIMIT ?`
	userSearch2CQL scanCQL = `SELECT ` + searchFrom + searchOne + searchMore + ` LIMIT ?`
	userSearch3CQL scanCQL = `SELECT ` + searchFrom + searchOne + searchMore + searchMore + ` LIMIT ?`
	userSearch4CQL scanCQL = `SELECT ` + searchFrom + searchOne + searchMore + searchMore + searchMore + ` LIMIT ?`
)

// userSearchCQL is the search for n grams.
var userSearchCQL = [...]scanCQL{1: userSearch1CQL, 2: userSearch2CQL, 3: userSearch3CQL, 4: userSearch4CQL}

// Search returns up to n accounts holding every gram, past the token after.
func (s *UserSearch) Search(ctx context.Context, grams []string, after int64, n int) ([]domain.Found, error) {
	if len(grams) == 0 || len(grams) >= len(userSearchCQL) {
		return nil, fmt.Errorf("search: %d grams, want 1 to %d", len(grams), len(userSearchCQL)-1)
	}
	args := []any{after}
	for _, g := range grams {
		args = append(args, g)
	}
	args = append(args, n)
	rows, err := selectRows[foundRow](s.db.scan(ctx, userSearchCQL[len(grams)], args...).PageSize(n))
	if err != nil {
		return nil, dbErr("search users", err)
	}
	out := make([]domain.Found, len(rows))
	for i, r := range rows {
		out[i] = domain.Found{User: r.toDomain(), Position: r.Token}
	}
	return out, nil
}

// peopleCQL is the people search (docs/design/people-search.md): the
// public columns of the accounts whose username starts with a prefix, in
// token order after a position. A scan: sent again after an error.
const peopleCQL scanCQL = `SELECT id, username, display_name, status, created_at, token(id) AS row_token FROM users WHERE token(id) > ? AND username_prefixes CONTAINS ? LIMIT ?`

// personRow is what the people search reads of an account: its public
// part and its position.
type personRow struct {
	profileRow
	Token int64 `db:"row_token"`
}

func (r *personRow) columns() []any { return append(r.profileRow.columns(), &r.Token) }

// People returns up to n accounts whose username prefixes hold prefix,
// past the token after.
func (s *UserSearch) People(ctx context.Context, prefix string, after int64, n int) ([]domain.FoundProfile, error) {
	rows, err := selectRows[personRow](s.db.scan(ctx, peopleCQL, after, prefix, n).PageSize(n))
	if err != nil {
		return nil, dbErr("search people", err)
	}
	out := make([]domain.FoundProfile, len(rows))
	for i, r := range rows {
		out[i] = domain.FoundProfile{Position: r.Token, Profile: domain.Profile{ID: r.ID, Username: r.Username,
			DisplayName: r.DisplayName, Status: domain.Status(r.Status), CreatedAt: r.CreatedAt}}
	}
	return out, nil
}

// The backfill of the grams and prefixes (api admin index-users): the accounts in
// token ranges, and the grams and prefixes alone written by
// compare-and-set on the version read.
const (
	indexUsersCQL scanCQL        = `SELECT id, username_key, email_key, status, version, search_grams, username_prefixes FROM users WHERE token(id) > ? AND token(id) <= ?`
	indexUserCQL  readCQL        = `SELECT id, username_key, email_key, status, version, search_grams, username_prefixes FROM users WHERE id = ?`
	indexGramsCQL conditionalCQL = `UPDATE users SET search_grams = ?, username_prefixes = ? WHERE id = ? IF version = ?`
)

// gramsRow is what the backfill reads of an account.
type gramsRow struct {
	ID          string   `db:"id"`
	UsernameKey string   `db:"username_key"`
	EmailKey    string   `db:"email_key"`
	Status      string   `db:"status"`
	Version     int      `db:"version"`
	Grams       []string `db:"search_grams"`
	Prefixes    []string `db:"username_prefixes"`
}

func (r *gramsRow) columns() []any {
	return []any{&r.ID, &r.UsernameKey, &r.EmailKey, &r.Status, &r.Version, &r.Grams, &r.Prefixes}
}

// indexed says whether r's grams and prefixes are what its keys make.
func (r gramsRow) indexed() bool {
	return slices.Equal(slices.Sorted(slices.Values(r.Grams)), domain.SearchGrams(r.UsernameKey, r.EmailKey)) &&
		slices.Equal(slices.Sorted(slices.Values(r.Prefixes)), slices.Sorted(slices.Values(domain.UsernamePrefixes(r.UsernameKey))))
}

// IndexReport is what IndexAll found and did.
type IndexReport struct {
	// Read counts the accounts read; Missing those visible whose grams or
	// prefixes were not their keys'.
	Read, Missing int
	// Written counts the grams written; Moved the accounts changed since
	// they were read (their change wrote their grams).
	Written, Moved int
	// Unknown lists the accounts whose write's outcome stayed unknown
	// (the next run finds them again if it did not apply).
	Unknown []string
}

// IndexAll writes the search grams and username prefixes of every visible
// account that lacks them (rows from before migrations 019 and 030),
// walking users in token ranges;
// dryRun only counts. progress, when set, is told the share of the ring
// read after each range. Pending rows are skipped (their grams came with
// them); deleted and deleting ones are not searched.
func (s *UserSearch) IndexAll(ctx context.Context, dryRun bool, progress func(done float64)) (IndexReport, error) {
	var rep IndexReport
	err := eachInSlices[gramsRow](ctx, s.db, "index users", indexUsersCQL, "", func(r gramsRow) error {
		rep.Read++
		status := domain.Status(r.Status)
		if (status != domain.StatusActive && status != domain.StatusSuspended) || r.indexed() {
			return nil
		}
		rep.Missing++
		if dryRun {
			return nil
		}
		applied, err := s.writeGrams(ctx, r)
		switch {
		case errors.Is(err, domain.ErrOutcomeUnknown):
			rep.Unknown = append(rep.Unknown, r.ID)
		case err != nil:
			return err
		case applied:
			rep.Written++
		default:
			rep.Moved++
		}
		return nil
	}, func(_ string, done float64) {
		if progress != nil {
			progress(done)
		}
	})
	return rep, err
}

// writeGrams writes an account's grams and prefixes if it is still at the
// version read. A lost answer is settled by the row at SERIAL: at that
// version and indexed, applied; moved on, not (its own write carried them).
func (s *UserSearch) writeGrams(ctx context.Context, r gramsRow) (bool, error) {
	grams, prefixes := domain.SearchGrams(r.UsernameKey, r.EmailKey), domain.UsernamePrefixes(r.UsernameKey)
	return s.db.exec(ctx, lwt{
		name: "users.index_grams",
		run: func(ctx context.Context) (bool, error) {
			return s.db.cas(ctx, nil, indexGramsCQL, grams, prefixes, r.ID, r.Version)
		},
		resolve: func(ctx context.Context) (bool, bool, error) {
			now, found, err := getRow[gramsRow](s.db.query(ctx, s.db.Serial, indexUserCQL, r.ID))
			if err != nil || !found || now.Version != r.Version {
				return false, false, err
			}
			held := now.indexed()
			return held, !held, nil
		},
	})
}
