package domain

import (
	"context"
	"encoding/base64"
	"errors"
)

// LibraryPage is one page of a library.
type LibraryPage struct {
	Items []LibraryEntry
	Next  string
}

// errLibraryNotFound answers for unknown principals.
var errLibraryNotFound = &Error{Kind: ErrNotFound, Code: "not_found", Message: "No such user or group."}

// bucketFor decides which bucket of principalID's library the caller
// reads (L1): the owner, members of the owning group and admins read the
// private bucket (everything), other sessions the loggedin one, anonymous
// callers the public one.
func (s *Contents) bucketFor(ctx context.Context, p Principal, principalID string) (string, error) {
	switch {
	case ValidID(principalID, UserIDPrefix):
		u, err := s.accounts.users.Get(ctx, principalID)
		if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
			return "", errLibraryNotFound
		}
		if err != nil {
			return "", err
		}
		if p.UserID == principalID {
			return BucketPrivate, nil
		}
	case ValidID(principalID, GroupIDPrefix):
		ok, err := s.groups.Exists(ctx, principalID)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", errLibraryNotFound
		}
		if !p.Anonymous() {
			if _, err := s.groups.MemberRole(ctx, principalID, p.UserID); err == nil {
				return BucketPrivate, nil
			} else if !errors.Is(err, ErrNotFound) {
				return "", err
			}
		}
	default:
		return "", errLibraryNotFound
	}
	if p.Anonymous() {
		return BucketPublic, nil
	}
	caller, err := s.accounts.caller(ctx, p)
	if err != nil {
		return "", err
	}
	if caller != nil && caller.IsAdmin() && caller.Status == StatusActive {
		return BucketPrivate, nil
	}
	return BucketLoggedIn, nil
}

// Library returns a page of a user's or group's library as the caller may
// see it, newest first (ties by id, descending).
func (s *Contents) Library(ctx context.Context, p Principal, principalID, cursor string, limit int) (LibraryPage, error) {
	var after *LibraryCursor
	if cursor != "" {
		var err error
		if after, err = DecodeLibraryCursor(cursor); err != nil {
			return LibraryPage{}, err
		}
	}
	// The page is read beside the checks that decide the bucket, in the
	// bucket most callers get (anonymous: public, the owner: private,
	// another session: loggedin), so the checks cost no extra round trip.
	// The page is shown only once the checks agree; group members and
	// admins, whose bucket is private, read it again.
	guess := BucketLoggedIn
	switch {
	case p.Anonymous():
		guess = BucketPublic
	case p.UserID == principalID:
		guess = BucketPrivate
	}
	var bucket string
	var items []LibraryEntry
	var bucketErr, pageErr error
	parallel(2, func(i int) {
		if i == 0 {
			bucket, bucketErr = s.bucketFor(ctx, p, principalID)
		} else {
			items, pageErr = s.readPage(ctx, principalID, guess, after, limit+1)
		}
	})
	if bucketErr != nil {
		return LibraryPage{}, bucketErr
	}
	if bucket != guess {
		items, pageErr = s.readPage(ctx, principalID, bucket, after, limit+1)
	}
	if pageErr != nil {
		return LibraryPage{}, pageErr
	}
	page := LibraryPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.Next = LibraryCursor{LastModified: last.LastModified, ContentID: last.ContentID}.Encode()
	}
	return page, nil
}

// maxRefills bounds how often a page is refilled after dropping stale
// rows; each refill is one more slice and one more index read.
const maxRefills = 8

// readPage reads want rows of one bucket and checks them against the
// membership index (one read with IN): a row whose item is not in the index
// (removed, deleted: a ghost) or whose version is older than the index's (a
// stale copy from a concurrent update) is dropped from the answer and
// deleted in the background, and the page is refilled (L2, L3). Costs one
// slice and one index read, more only when rows were dropped (L5).
func (s *Contents) readPage(ctx context.Context, principalID, bucket string, after *LibraryCursor, want int) ([]LibraryEntry, error) {
	out := make([]LibraryEntry, 0, want)
	seen := map[string]bool{}
	for refill := 0; refill <= maxRefills && len(out) < want; refill++ {
		need := want - len(out)
		rows, err := s.library.Slice(ctx, principalID, bucket, after, need)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			break
		}
		ids := make([]string, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.ContentID)
		}
		idx, err := s.library.Index(ctx, principalID, ids)
		if err != nil {
			return nil, err
		}
		var stale []LibraryEntry
		for _, r := range rows {
			e, ok := idx[r.ContentID]
			switch {
			case !ok || r.Version < e.Version:
				stale = append(stale, r) // a ghost, or an older copy
			case r.Version > e.Version || seen[r.ContentID]:
				// A fan-out still in flight: not shown yet, not touched.
			default:
				seen[r.ContentID] = true
				out = append(out, r)
			}
		}
		if len(stale) > 0 {
			s.cleanup(ctx, bucket, stale)
		}
		last := rows[len(rows)-1]
		after = &LibraryCursor{LastModified: last.LastModified, ContentID: last.ContentID}
		if len(rows) < need {
			break // the end of the bucket
		}
	}
	return out, nil
}

// cleanup deletes stale rows in the background, each at its own version,
// so nothing newer is touched.
func (s *Contents) cleanup(ctx context.Context, bucket string, rows []LibraryEntry) {
	ctx = context.WithoutCancel(ctx)
	select {
	case s.background <- struct{}{}:
	default:
		return // enough cleanups running; the next reader tries again
	}
	go func() {
		defer func() { <-s.background }()
		for _, r := range rows {
			_ = s.library.DeleteRow(ctx, bucket, r)
		}
	}()
}

// Rebuild regenerates a principal's library from its membership index
// (admins only) and returns how many items it holds: every index entry's
// rows are written again (at their version, so nothing newer is touched),
// then every row the index does not back is deleted (L6).
func (s *Contents) Rebuild(ctx context.Context, p Principal, principalID string) (int, error) {
	if _, err := s.accounts.RequireAdmin(ctx, p); err != nil {
		return 0, err
	}
	if !ValidID(principalID, UserIDPrefix) && !ValidID(principalID, GroupIDPrefix) {
		return 0, errLibraryNotFound
	}
	count := 0
	after := ""
	for {
		entries, err := s.library.IndexPage(ctx, principalID, after, memberPage)
		if err != nil {
			return count, err
		}
		for _, e := range entries {
			if err := s.library.Apply(ctx, e, nil); err != nil {
				return count, err
			}
			count++
		}
		if len(entries) < memberPage {
			break
		}
		after = entries[len(entries)-1].ContentID
	}
	for _, bucket := range []string{BucketPrivate, BucketLoggedIn, BucketPublic} {
		var cursor *LibraryCursor
		for {
			rows, err := s.library.Slice(ctx, principalID, bucket, cursor, memberPage)
			if err != nil {
				return count, err
			}
			if len(rows) == 0 {
				break
			}
			ids := make([]string, len(rows))
			for i, r := range rows {
				ids[i] = r.ContentID
			}
			idx, err := s.library.Index(ctx, principalID, ids)
			if err != nil {
				return count, err
			}
			for _, r := range rows {
				e, ok := idx[r.ContentID]
				if !ok || r.Version < e.Version || !inBuckets(bucket, e.Visibility) {
					if err := s.library.DeleteRow(ctx, bucket, r); err != nil {
						return count, err
					}
				}
			}
			last := rows[len(rows)-1]
			cursor = &LibraryCursor{LastModified: last.LastModified, ContentID: last.ContentID}
			if len(rows) < memberPage {
				break
			}
		}
	}
	return count, nil
}

func inBuckets(bucket string, v Visibility) bool {
	for _, b := range BucketsFor(v) {
		if b == bucket {
			return true
		}
	}
	return false
}

// MembersPage lists an item's members (managers and admins only).
func (s *Contents) MembersPage(ctx context.Context, p Principal, id, cursor string, limit int) ([]ContentMember, string, error) {
	if p.Anonymous() {
		return nil, "", errNoSession
	}
	_, a, err := s.load(ctx, p, id)
	if err != nil {
		return nil, "", err
	}
	if !a.manage && !a.admin {
		return nil, "", errForbidden
	}
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || (!ValidID(string(raw), UserIDPrefix) && !ValidID(string(raw), GroupIDPrefix)) {
			return nil, "", errBadCursor
		}
		after = string(raw)
	}
	members, err := s.members.Page(ctx, id, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(members) > limit {
		members = members[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte(members[limit-1].PrincipalID))
	}
	return members, next, nil
}
