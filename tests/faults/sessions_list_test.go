package faults

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestSessionPagesSkipEntriesWithoutASession: a user's list pages through
// exactly the sessions that exist, newest first (ties by id), each once,
// at every limit, when index entries without a session (logins whose
// session write failed after their entry) lie between them, even more in
// a row than a page refills past: such a page comes back short, with a
// cursor that goes on after the last entry it read.
func TestSessionPagesSkipEntriesWithoutASession(t *testing.T) {
	t.Parallel()
	s := newSessWorld(t)
	ctx := context.Background()
	login := func(phantom bool) {
		t.Helper()
		if phantom {
			s.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "sessions.insert" {
					return memstore.FailBefore
				}
				return memstore.None
			}
		}
		_, err := s.svc.Login(ctx, "sam", password, accounts.Client{})
		s.store.FaultAt = nil
		if (err != nil) != phantom {
			t.Fatalf("login (phantom %v): %v", phantom, err)
		}
	}
	// Live and phantom logins, some in the same millisecond (ties), and a
	// run of 40 phantoms, more than a page of one refills past.
	for i := 0; i < 30; i++ {
		login(i%3 == 1)
		if i%4 != 0 {
			s.store.Advance(time.Millisecond)
		}
	}
	for i := 0; i < 40; i++ {
		login(true)
	}
	s.store.Advance(time.Millisecond)
	login(false)
	login(false)

	entries, err := s.store.Sessions().Entries(ctx, s.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	live, err := s.store.Sessions().GetMany(ctx, hashesOf(entries))
	if err != nil {
		t.Fatal(err)
	}
	var want []domain.Session
	for _, e := range entries {
		if sess, ok := live[e.TokenHash]; ok {
			want = append(want, sess)
		}
	}
	slices.SortFunc(want, func(a, b domain.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID(), a.ID())
	})
	if len(entries)-len(want) < 40 {
		t.Fatalf("%d entries, %d sessions: the phantoms were not made", len(entries), len(want))
	}
	for _, limit := range []int{1, 2, 3, 7, 100} {
		var got []string
		cursor, pages, short := "", 0, 0
		for {
			page, err := s.svc.ListSessions(ctx, s.admin, s.user.ID, cursor, limit)
			if err != nil {
				t.Fatalf("limit %d, page %d: %v", limit, pages, err)
			}
			if len(page.Items) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page.Items))
			}
			if page.Next != "" && len(page.Items) < limit {
				short++
			}
			for _, v := range page.Items {
				got = append(got, v.ID())
			}
			pages++
			if page.Next == "" {
				break
			}
			cursor = page.Next
			if pages > 1000 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
		}
		wantIDs := make([]string, len(want))
		for i, w := range want {
			wantIDs[i] = w.ID()
		}
		if !slices.Equal(got, wantIDs) {
			t.Errorf("limit %d: listed\n%v\nwant\n%v", limit, got, wantIDs)
		}
		if limit == 1 && short == 0 {
			t.Errorf("limit 1: no page came back short past the run of phantoms")
		}
	}
}

func hashesOf(l []domain.Session) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.TokenHash
	}
	return out
}
