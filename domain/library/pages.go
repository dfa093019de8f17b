package library

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"shelf/domain"
)

// errLibraryNotFound answers for unknown principals.
var errLibraryNotFound = &domain.Error{Kind: domain.ErrNotFound, Code: "not_found", Message: "No such user or group."}

// bucketFor decides which bucket of principalID's library the caller
// reads (L1): the owner, members of the owning group and active admins
// read the private bucket (everything), other sessions the loggedin one,
// anonymous callers the public one.
func (s *Service) bucketFor(ctx context.Context, p domain.Principal, principalID string) (string, error) {
	switch {
	case domain.ValidID(principalID, domain.UserIDPrefix):
		if a := p.Account; p.UserID == principalID && a != nil && a.ID == principalID && a.Visible() {
			// The caller's own library: the session's read of the account,
			// in this request, found it visible.
			return BucketPrivate, nil
		}
		u, err := s.users.Profile(ctx, principalID)
		if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
			return "", errLibraryNotFound
		}
		if err != nil {
			return "", err
		}
		if p.UserID == principalID {
			return BucketPrivate, nil
		}
	case domain.ValidID(principalID, domain.GroupIDPrefix):
		// The group and the caller's membership are read at once, the
		// group row the record of it (Standing).
		active, role, err := s.groups.Standing(ctx, principalID, p.UserID)
		switch {
		case err != nil:
			return "", err
		case !active:
			return "", errLibraryNotFound
		case role != "":
			return BucketPrivate, nil
		}
	default:
		return "", errLibraryNotFound
	}
	if p.Anonymous() {
		return BucketPublic, nil
	}
	caller, err := s.callers.Caller(ctx, p)
	if err != nil {
		return "", err
	}
	if caller != nil && caller.IsAdmin() && caller.Status == domain.StatusActive {
		return BucketPrivate, nil
	}
	return BucketLoggedIn, nil
}

// Library returns a page of a user's or group's library as the caller may
// see it: newest first (ties by id, descending) or oldest first (ties by
// id, ascending; only items last modified before the run's first page).
// A cursor belongs to the order it was made for.
func (s *Service) Library(ctx context.Context, p domain.Principal, principalID string, order Order, cursor string, limit int) (domain.Page[Entry], error) {
	rn, after, err := s.runOf(order, cursor)
	if err != nil {
		return domain.Page[Entry]{}, err
	}
	// The page is read beside the checks that decide the bucket, in the
	// bucket most callers get (anonymous: public; the owner, and a session
	// on a group's library, whose readers are mostly its members: private;
	// another session: loggedin), so the checks cost no extra round trip.
	// The page is shown only once the checks agree; a caller whose bucket
	// is another (an admin on a user's library, a session not in the
	// group) reads it again (docs/design/cost-model.md).
	guess := BucketLoggedIn
	switch {
	case p.Anonymous():
		guess = BucketPublic
	case p.UserID == principalID, domain.ValidID(principalID, domain.GroupIDPrefix):
		guess = BucketPrivate
	}
	var bucket string
	var items []Entry
	var resume *Cursor
	var bucketErr, pageErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			bucket, bucketErr = s.bucketFor(ctx, p, principalID)
		} else {
			items, resume, pageErr = s.readPage(ctx, principalID, guess, rn, after, limit+1)
		}
	})
	if bucketErr != nil {
		return domain.Page[Entry]{}, bucketErr
	}
	if bucket != guess {
		items, resume, pageErr = s.readPage(ctx, principalID, bucket, rn, after, limit+1)
	}
	if pageErr != nil {
		return domain.Page[Entry]{}, pageErr
	}
	if len(items) <= limit && resume != nil {
		// Short, because the refills ran out among stale rows, not because
		// the library ended: the next page goes on after the last row read.
		return domain.Page[Entry]{Items: items, Next: resume.Encode()}, nil
	}
	return domain.PageOf(items, limit, func(e Entry) string { return rn.at(e).Encode() }), nil
}

// maxRefills bounds how often a page is refilled after dropping or hiding
// rows; each refill is one more slice and, when it reads rows that are not
// lean, one more round trip of checks (the index and the items).
const maxRefills = 8

// readPage reads want rows of one bucket in the run's order, up to the
// run's end. Lean rows are shown as they are; the others are checked
// against the membership index and the items' own rows (two reads with IN,
// at once): a row whose item is not in the index (removed, deleted: a
// ghost) or whose version is older than the index's at another place (a
// stale copy from a concurrent update) is dropped from the answer and
// deleted in the background (one at the entry's place is checked as any
// other: the fan-out rewrites it where it is); a row newer than its entry (a fan-out in flight), a second
// row of an item already shown, or a row the item's own row does not
// vouch for (agrees) is hidden and left alone; and the page is refilled
// (L1, L2, L3). Costs one slice, one round trip of checks when a row is
// not lean, more only when rows were dropped or hidden (L5), in either
// order.
//
// It returns the rows to show and, when it stopped refilling before the
// bucket ended, resume: the position after the last row it read.
func (s *Service) readPage(ctx context.Context, principalID, bucket string, rn run, after *Cursor, want int) (out []Entry, resume *Cursor, err error) {
	out = make([]Entry, 0, want)
	seen := map[string]bool{}
	for refill := 0; len(out) < want; refill++ {
		if refill > maxRefills {
			return out, after, nil // rows may follow: say where to go on
		}
		need := want - len(out)
		rows, err := s.library.Slice(ctx, principalID, bucket, rn.order, after, need)
		if err != nil {
			return nil, nil, err
		}
		end := len(rows) < need // the end of the bucket
		if past := slices.IndexFunc(rows, func(r Entry) bool { return !rn.lists(r) }); past >= 0 {
			rows, end = rows[:past], true // past the run's end: so is every later row
		}
		if len(rows) == 0 {
			break
		}
		// Lean rows are shown as they are (their items' changes remove
		// them first: see narrow); only the others are checked, so a page
		// of lean rows costs the one slice.
		var ids []string
		for _, r := range rows {
			if !r.Lean {
				ids = append(ids, r.ContentID)
			}
		}
		var idx map[string]Entry
		var live map[string]ItemState
		if len(ids) > 0 {
			if idx, live, err = s.check(ctx, principalID, ids); err != nil {
				return nil, nil, err
			}
		}
		var stale []Entry
		for _, r := range rows {
			e, ok := idx[r.ContentID]
			switch {
			case r.Lean && !seen[r.ContentID]:
				seen[r.ContentID] = true
				out = append(out, r)
			case r.Lean:
				// A second row of an item shown already: a page lists an
				// item once (L2).
			case !ok || (r.Version < e.Version && !r.LastModified.Equal(e.LastModified)):
				stale = append(stale, r) // a ghost, or an older copy
			case r.Version < e.Version:
				// Older than its entry but at its place (a fence, a share
				// or the end of lean rows writes every member's rows again
				// where they are): the fan-out writes this very row next.
				// Dropped, an item that never moved would be skipped by the
				// run (L2); shown only if its item vouches for it.
				if agrees(principalID, bucket, r, live) && !seen[r.ContentID] {
					seen[r.ContentID] = true
					out = append(out, r)
				}
			case r.Version > e.Version || seen[r.ContentID]:
				// A fan-out still in flight (the row newer than its entry),
				// or a second row of an item shown already: not shown, not
				// touched.
			case !agrees(principalID, bucket, r, live):
				// The item changed, was deleted or made private since this
				// row was written, or records this library's removal, and
				// its fan-out (or the removal) has not landed here (in
				// flight, or lost and left to the outbox worker): hidden
				// until it does. Not deleted: the row is at its index
				// entry's version, and only the fan-out may move it on.
			default:
				seen[r.ContentID] = true
				out = append(out, r)
			}
		}
		if len(stale) > 0 {
			s.cleanup(ctx, bucket, stale)
		}
		after = rn.at(rows[len(rows)-1])
		if end {
			break
		}
	}
	return out, nil, nil
}

// check reads, at once, the index entries of these items in principalID's
// library and the items' own rows: two reads with IN in one round trip.
func (s *Service) check(ctx context.Context, principalID string, ids []string) (map[string]Entry, map[string]ItemState, error) {
	var idx map[string]Entry
	var live map[string]ItemState
	var idxErr, liveErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			idx, idxErr = s.library.Index(ctx, principalID, ids)
		} else {
			live, liveErr = s.content.States(ctx, ids)
		}
	})
	if err := cmp.Or(idxErr, liveErr); err != nil {
		return nil, nil, err
	}
	return idx, live, nil
}

// agrees reports whether the item's own row vouches for library row r of
// bucket in principalID's library: the item exists, is not deleted, does
// not record principalID's removal, its visibility is one the bucket's
// viewers may see, and it shows exactly what r shows (name, visibility,
// last change). So a page never shows a deleted item, one its viewer may
// no longer see or an old name, whatever the fan-out did (L1, L3): an
// unshare answered once recorded, and the item left the library then,
// even if its removal from the library failed (the access check applies
// the same record: withPending). The version does not decide: a share or
// unshare moves the item's version on without touching what other
// members' rows show; every update moves last_modified on.
func agrees(principalID, bucket string, r Entry, live map[string]ItemState) bool {
	c, ok := live[r.ContentID]
	return ok && !c.Deleted && c.Removing != principalID && slices.Contains(BucketsFor(c.Visibility), bucket) &&
		c.Name == r.Name && c.Visibility == r.Visibility && c.LastModified.Equal(r.LastModified)
}

// cleanup deletes stale rows in the background, each at its own version,
// so nothing newer is touched.
func (s *Service) cleanup(ctx context.Context, bucket string, rows []Entry) {
	ctx = context.WithoutCancel(ctx)
	select {
	case s.background <- struct{}{}:
	default:
		return // enough cleanups running; the next reader tries again
	}
	s.cfg.Background(func() {
		defer func() { <-s.background }()
		for _, r := range rows {
			_ = s.library.DeleteRow(ctx, bucket, r)
		}
	})
}
