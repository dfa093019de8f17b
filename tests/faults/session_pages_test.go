package faults

import (
	"context"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// TestASessionPageCostsTheSameWhateverTheSessions (attackers are users
// too): a thief with the password and a few addresses can open thousands
// of sessions a day. The owner's list of her sessions and her revocation
// of one read one slice of her index and one entry by key, never the
// whole index: the same store calls, and at most a page and one more
// entries, with 2 other sessions as with 150. Paging on lists every
// session once, newest first.
func TestASessionPageCostsTheSameWhateverTheSessions(t *testing.T) {
	t.Parallel()
	const limit = 20
	type cost struct{ calls, entries int }
	costs := map[int][2]cost{}
	for _, n := range []int{2, 150} {
		w, _, tokens := samWithSessions(t, n+1)
		ctx := context.Background()
		owner, err := w.svc.Authenticate(ctx, tokens[0])
		if err != nil {
			t.Fatal(err)
		}
		calls, entries := w.store.Calls(), w.store.SessionEntriesRead()
		if _, err := w.svc.ListSessions(ctx, owner, owner.UserID, "", limit); err != nil {
			t.Fatal(err)
		}
		list := cost{w.store.Calls() - calls, w.store.SessionEntriesRead() - entries}
		victim := w.store.Sessions()
		target, err := victim.Get(ctx, accounts.HashToken(tokens[n/2+1]))
		if err != nil {
			t.Fatal(err)
		}
		calls, entries = w.store.Calls(), w.store.SessionEntriesRead()
		if err := w.svc.RevokeSession(ctx, owner, owner.UserID, target.ID()); err != nil {
			t.Fatal(err)
		}
		revoke := cost{w.store.Calls() - calls, w.store.SessionEntriesRead() - entries}
		costs[n] = [2]cost{list, revoke}
		t.Logf("with %d other sessions: the first page %+v, a revocation %+v", n, list, revoke)
		if list.entries > limit+1 || revoke.entries != 1 {
			t.Errorf("with %d other sessions: the page read %d entries, the revocation %d; want at most %d and 1", n, list.entries, revoke.entries, limit+1)
		}
		if _, err := w.svc.Authenticate(ctx, tokens[n/2+1]); err == nil {
			t.Errorf("with %d other sessions: the revoked session still works", n)
		}

		seen := map[string]bool{}
		var prev *domain.Session
		for cursor := ""; ; {
			page, err := w.svc.ListSessions(ctx, owner, owner.UserID, cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Items {
				if prev != nil && s.CreatedAt.After(prev.CreatedAt) {
					t.Fatalf("with %d other sessions: %s listed after an older session", n, s.ID())
				}
				if seen[s.ID()] || s.ID() == target.ID() {
					t.Fatalf("with %d other sessions: %s listed twice, or after its revocation", n, s.ID())
				}
				seen[s.ID()], prev = true, &s.Session
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if len(seen) != n {
			t.Errorf("with %d other sessions: %d listed after one was revoked, want %d", n, len(seen), n)
		}
	}
	if costs[150][0].calls != costs[2][0].calls || costs[150][1].calls != costs[2][1].calls {
		t.Errorf("store calls with 150 other sessions %+v, with 2 %+v: want the same", costs[150], costs[2])
	}
}
