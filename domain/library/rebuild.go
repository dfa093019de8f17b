package library

import (
	"context"
	"slices"

	"shelf/domain"
)

// ValidPrincipal reports whether id can name a library (a user's or a
// group's): anything else is 404 without a read.
func ValidPrincipal(id string) bool {
	return domain.ValidID(id, domain.UserIDPrefix) || domain.ValidID(id, domain.GroupIDPrefix)
}

// ErrLibraryNotFound answers a library id that names no user or group.
var ErrLibraryNotFound = errLibraryNotFound

// Rebuild regenerates a principal's library from its membership index and
// returns how many items it holds: every index entry's rows are written
// again (at their version, so nothing newer is touched), then every row
// the index does not back is deleted (L6). It is a job's work
// (domain/lifecycle: the admin's request answers 202 with the job), and
// grows with the library: report is told after each page of entries how
// many were written ("items"), and after each page of each bucket's rows
// ("rows": TestALibrarysRowsPhasesReportEachPage). Every write is at the
// version of what it writes, so a run stopped part-way and run again
// (another worker's) changes nothing the first did not.
func (s *Service) Rebuild(ctx context.Context, principalID string, report func(phase string, done int) error) (int, error) {
	count, err := s.rewriteFromIndex(ctx, principalID, report)
	if err != nil {
		return count, err
	}
	rows := func() error { return report("rows", count) }
	for _, bucket := range Buckets() {
		if err := s.dropUnbacked(ctx, principalID, bucket, rows); err != nil {
			return count, err
		}
	}
	return count, nil
}

// rewriteFromIndex writes every index entry's rows again, each at its
// version, and counts them, reporting each page.
func (s *Service) rewriteFromIndex(ctx context.Context, principalID string, report func(phase string, done int) error) (int, error) {
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
		if err := report("items", count); err != nil {
			return count, err
		}
		if len(entries) < memberPage {
			return count, nil
		}
		after = entries[len(entries)-1].ContentID
	}
}

// dropUnbacked walks one bucket and deletes every row the index does not
// back: a ghost, an older copy, or a visibility that bucket may not show;
// page is called after each page of rows (a job reports to its lease).
func (s *Service) dropUnbacked(ctx context.Context, principalID, bucket string, page func() error) error {
	var cursor *Cursor
	for {
		rows, err := s.library.Slice(ctx, principalID, bucket, NewestFirst, cursor, memberPage)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return page()
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ContentID
		}
		idx, err := s.library.Index(ctx, principalID, ids)
		if err != nil {
			return err
		}
		for _, r := range rows {
			e, ok := idx[r.ContentID]
			if !ok || r.Version < e.Version || !slices.Contains(BucketsFor(e.Visibility), bucket) {
				if err := s.library.DeleteRow(ctx, bucket, r); err != nil {
					return err
				}
			}
		}
		if err := page(); err != nil {
			return err
		}
		if len(rows) < memberPage {
			return nil
		}
		last := rows[len(rows)-1]
		cursor = &Cursor{LastModified: last.LastModified, ContentID: last.ContentID}
	}
}

// IndexPage lists a principal's library index after content id after:
// with Drop, Unshare, Delete and Purge, what the workflows that delete an
// account or close a group (domain/lifecycle) need of content.
func (s *Service) IndexPage(ctx context.Context, principalID, after string, limit int) ([]Entry, error) {
	return s.library.IndexPage(ctx, principalID, after, limit)
}

// CountIndex counts a principal's index entries: what a workflow going
// through them has to do.
func (s *Service) CountIndex(ctx context.Context, principalID string) (int, error) {
	return s.library.CountIndex(ctx, principalID)
}

// Purge empties the library of a principal that is gone (a deleted
// account, once its items were deleted or left through the change path,
// which removed their entries): every index entry still there is removed
// at its own version (an item already gone whose fan-out has not reached
// this library yet; anything newer stays), then every row the index no
// longer backs. page is called after each page of either (a job reports
// to its lease: TestALibrarysRowsPhasesReportEachPage).
func (s *Service) Purge(ctx context.Context, principalID string, page func() error) error {
	after := ""
	for {
		entries, err := s.library.IndexPage(ctx, principalID, after, memberPage)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := s.library.Remove(ctx, principalID, e.ContentID, &e, e.Version); err != nil {
				return err
			}
		}
		if err := page(); err != nil {
			return err
		}
		if len(entries) < memberPage {
			break
		}
		after = entries[len(entries)-1].ContentID
	}
	for _, bucket := range Buckets() {
		if err := s.dropUnbacked(ctx, principalID, bucket, page); err != nil {
			return err
		}
	}
	return nil
}
