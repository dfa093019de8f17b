package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
)

// slowSlices is the library rows where each slice read takes step of the
// store's clock (a node answering a page in its usual time, many times
// over).
type slowSlices struct {
	library.EntryStore
	w    *world
	step time.Duration
}

func (s slowSlices) Slice(ctx context.Context, principalID, bucket string, order library.Order, after *library.Cursor, limit int) ([]library.Entry, error) {
	s.w.store.Advance(s.step)
	return s.EntryStore.Slice(ctx, principalID, bucket, order, after, limit)
}

// TestALibrarysRowsPhasesReportEachPage: ann owns 1 600 private items, so
// her private bucket holds four pages of rows (500 a page), and each page
// takes 12 s to read. A rebuild of her library, and the purge a deletion
// or a closing ends with, walk that bucket; a job's lease (30 s) is kept
// only by its reports, so one that reported once a bucket (the rebuild)
// or not at all (the purge) went 48 s silent and another worker took the
// job over and began it again. Each page must be reported: no two reports
// (nor the start and the first) more than 30 s apart by the store's clock.
func TestALibrarysRowsPhasesReportEachPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld()
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	ann := w.created[0]
	grp := groups.New(groups.Config{ClaimLease: lease, Now: w.store.Now, Closings: w.store.Closings(), Changes: w.store.GroupChanges()}, w.svc, w.store.Users(),
		w.store.Claims(), groupRows(w.store), w.store.GroupMembers(), nopLog{})
	stores := w.store.Contents()
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce}, w.svc, w.store.Users(), grp, stores, nopLog{})
	private := string(library.VisibilityPrivate)
	for i := range 1600 {
		name := fmt.Sprintf("item %d", i)
		if _, err := lib.Create(ctx, as(ann), library.Input{Name: &name, Visibility: &private}); err != nil {
			t.Fatal(err)
		}
	}
	stores.Library = slowSlices{EntryStore: stores.Library, w: w, step: 12 * time.Second}
	slow := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: w.store.Now, Background: atOnce}, w.svc, w.store.Users(), grp, stores, nopLog{})
	for _, run := range []struct {
		what string
		do   func(report func() error) error
	}{
		{"a rebuild", func(report func() error) error {
			_, err := slow.Rebuild(ctx, ann.ID, func(string, int) error { return report() })
			return err
		}},
		{"a purge", func(report func() error) error { return slow.Purge(ctx, ann.ID, report) }},
	} {
		last, longest := w.store.Now(), time.Duration(0)
		report := func() error {
			longest = max(longest, w.store.Now().Sub(last))
			last = w.store.Now()
			return nil
		}
		if err := run.do(report); err != nil {
			t.Fatal(err)
		}
		if longest > lifecycle.DefaultJobLease {
			t.Errorf("%s went %v without a report, past a job's lease (%v)", run.what, longest, lifecycle.DefaultJobLease)
		}
	}
}
