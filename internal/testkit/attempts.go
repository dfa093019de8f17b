package testkit

import (
	"context"
	"slices"
	"testing"
	"time"

	"shelf/domain/accounts"
)

// CheckAttemptStore holds an attempt store to the contract the throttle
// counts on (docs/design.md#throttle), on a scope of its own: rows are
// listed oldest first, up to the number asked for; a removal deletes only
// its own attempt's row, and a write of it that lands after the removal
// (a retry, a copy, a hinted write) stays deleted. repository.Attempts
// (on Cassandra) and memstore.Attempts (the explorers' fake) both pass it,
// so the fault explorer's throttle tests hold for the real store.
func CheckAttemptStore(t *testing.T, s accounts.AttemptStore, scope string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	now = now.UTC().Truncate(time.Millisecond)
	rows := []accounts.Attempt{
		{ID: "c", At: now.Add(-2 * time.Second)},
		{ID: "a", At: now.Add(-time.Second)},
		{ID: "b", At: now.Add(-time.Second)},
		{ID: "d", At: now},
	}
	for _, i := range []int{3, 1, 0, 2} {
		if err := s.Add(ctx, scope, rows[i], time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	list := func(max int) []string {
		t.Helper()
		got, err := s.List(ctx, scope, max)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, a := range got {
			ids[i] = a.ID
			if want := rowByID(rows, a.ID); !a.At.Equal(want.At) {
				t.Fatalf("attempt %s listed at %v, written at %v", a.ID, a.At, want.At)
			}
		}
		return ids
	}
	if got := list(10); !slices.Equal(got, []string{"c", "a", "b", "d"}) {
		t.Fatalf("listed %v, want oldest first: c a b d", got)
	}
	if got := list(2); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("listed %v with max 2, want c a", got)
	}
	if err := s.Remove(ctx, scope, rows[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, scope, rows[1], time.Hour); err != nil { // landing late
		t.Fatal(err)
	}
	if got := list(10); !slices.Equal(got, []string{"c", "b", "d"}) {
		t.Fatalf("after removing a and a late write of it, listed %v, want c b d", got)
	}
	if got, err := s.List(ctx, scope+"-other", 10); err != nil || len(got) != 0 {
		t.Fatalf("another scope listed %v (%v)", got, err)
	}
}

func rowByID(rows []accounts.Attempt, id string) accounts.Attempt {
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	return accounts.Attempt{}
}
