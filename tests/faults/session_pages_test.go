package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
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

// TestTheSessionKeptBySigningOutElsewhereIsListedInItsPlace: signing out
// everywhere else moves the password epoch and names the caller's
// session, which stays in the index of the epoch before. The list reads
// the new epoch's index and places the named session among its sessions
// by creation (here the others' clocks ran behind and ahead of it), each
// session once, newest first, page after page, past entries whose
// session write failed; the sessions the epoch stopped are not read at
// all.
func TestTheSessionKeptBySigningOutElsewhereIsListedInItsPlace(t *testing.T) {
	t.Parallel()
	w, _, tokens := samWithSessions(t, 40)
	ctx := context.Background()
	owner, err := w.svc.Authenticate(ctx, tokens[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := w.svc.RevokeSessions(ctx, owner, owner.UserID, true); err != nil {
		t.Fatal(err)
	}
	if owner, err = w.svc.Authenticate(ctx, tokens[0]); err != nil { // the next request
		t.Fatal(err)
	}
	access, err := w.store.Users().Access(ctx, owner.UserID)
	if err != nil {
		t.Fatal(err)
	}
	kept := owner.Session
	want := map[string]bool{kept.ID(): true}
	for i := range 18 {
		at := kept.CreatedAt.Add(time.Duration(i-9) * time.Second)
		s := domain.Session{TokenHash: accounts.HashToken(fmt.Sprintf("later-%d", i)), UserID: owner.UserID, CreatedAt: at,
			ExpiresAt: at.Add(time.Hour), PasswordEpoch: access.PasswordEpoch}
		if i%3 == 1 {
			// A login whose session write failed: its entries, no
			// session, which a page skips and refills after.
			w.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "sessions.insert" {
					return memstore.FailBefore
				}
				return memstore.None
			}
			if err := w.store.Sessions().Create(ctx, s); err == nil {
				t.Fatal("a session write set to fail did not")
			}
			w.store.FaultAt = nil
			continue
		}
		if err := w.store.Sessions().Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		want[s.ID()] = true
	}
	for _, limit := range []int{1, 4, 5, 20} {
		entries := w.store.SessionEntriesRead()
		var listed []accounts.SessionView
		for cursor := ""; ; {
			page, err := w.svc.ListSessions(ctx, owner, owner.UserID, cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, page.Items...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		got := map[string]bool{}
		for i, s := range listed {
			if got[s.ID()] || !want[s.ID()] {
				t.Fatalf("limit %d: %s listed twice, or not one of the admitted sessions", limit, s.ID())
			}
			got[s.ID()] = true
			if i > 0 {
				prev := listed[i-1]
				if s.CreatedAt.After(prev.CreatedAt) || (s.CreatedAt.Equal(prev.CreatedAt) && s.ID() > prev.ID()) {
					t.Fatalf("limit %d: %s (%v) listed after %s (%v)", limit, s.ID(), s.CreatedAt, prev.ID(), prev.CreatedAt)
				}
			}
		}
		if len(got) != len(want) || !got[kept.ID()] {
			t.Fatalf("limit %d: %d listed, want %d with the kept session", limit, len(got), len(want))
		}
		if read := w.store.SessionEntriesRead() - entries; limit == 20 && read != 18 {
			t.Errorf("one page read %d entries, want the 18 of the epoch: the stopped ones were read too", read)
		}
	}
}
