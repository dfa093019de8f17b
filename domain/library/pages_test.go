package library

import (
	"context"
	"slices"
	"testing"
	"time"

	"shelf/domain"
)

// rowsOnly is an EntryStore of one bucket's rows and an index: what a
// library page reads. Writes are not expected.
type rowsOnly struct {
	EntryStore
	rows  []Entry // newest first
	index map[string]Entry
}

func (r *rowsOnly) Slice(_ context.Context, _, _ string, after *Cursor, limit int) ([]Entry, error) {
	start := 0
	if after != nil {
		start = slices.IndexFunc(r.rows, func(e Entry) bool { return e.ContentID == after.ContentID }) + 1
	}
	end := min(start+limit, len(r.rows))
	return slices.Clone(r.rows[start:end]), nil
}

func (r *rowsOnly) Index(_ context.Context, _ string, ids []string) (map[string]Entry, error) {
	out := map[string]Entry{}
	for _, id := range ids {
		if e, ok := r.index[id]; ok {
			out[id] = e
		}
	}
	return out, nil
}

func (r *rowsOnly) DeleteRow(context.Context, string, Entry) error { return nil } // background cleanup

type visibleUsers struct{}

func (visibleUsers) Get(_ context.Context, id string) (domain.User, error) {
	return domain.User{ID: id, Status: domain.StatusActive}, nil
}

// TestPageBehindManyStaleRowsStillHasACursor: a page whose refills run out
// among ghost rows (a library after mass removals, before cleanup caught
// up) ends with nextCursor, so the items behind them are reached; paging
// on shows each live item exactly once (issue 10, case 9; L2, L5).
func TestPageBehindManyStaleRowsStillHasACursor(t *testing.T) {
	t.Parallel()
	store := &rowsOnly{index: map[string]Entry{}}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var live []string
	for i := 0; i < 43; i++ {
		e := Entry{PrincipalID: "u", ContentID: domain.NewID(domain.ContentIDPrefix), Visibility: VisibilityPublic,
			LastModified: at.Add(-time.Duration(i) * time.Minute), Version: 1}
		store.rows = append(store.rows, e)
		if i >= 40 { // the 40 newest rows are ghosts: no index entry
			store.index[e.ContentID] = e
			live = append(live, e.ContentID)
		}
	}
	s := New(Config{}, nil, visibleUsers{}, nil, Stores{Library: store}, nil)
	owner := domain.NewID(domain.UserIDPrefix)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		p, err := s.Library(context.Background(), domain.Principal{}, owner, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Items {
			got = append(got, e.ContentID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if !slices.Equal(got, live) {
		t.Fatalf("paged through %v, want the live items %v once each", got, live)
	}
}
