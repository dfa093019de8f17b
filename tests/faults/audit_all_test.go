package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestTheAuditOfEveryAccountWalksBackDayByDay: entries of several
// accounts and actors over 45 days, read through GET /v1/audit's
// service a page at a time, come back newest first, each once, through
// days without an entry (a page reads at most 31 days: it may be empty
// and still go on); filters keep one actor's or one action's; a user who
// is no admin is refused.
func TestTheAuditOfEveryAccountWalksBackDayByDay(t *testing.T) {
	w := newWorld()
	for _, n := range []string{"ann", "bob", "root"} {
		if err := w.signup(n, n+"@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	w.rewire(func(st *memstore.Store, c *accounts.Config) { c.Audit = st.AccountAudit() })
	ctx := context.Background()
	root, err := w.svc.SetAdmin(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	ann, bob := w.created[0], w.created[1]
	now := w.store.Now()
	var want []domain.AuditEntry
	for i, ago := range []time.Duration{0, time.Minute, time.Minute, 3 * time.Hour, 26 * time.Hour, 26 * time.Hour, 10 * 24 * time.Hour, 44 * 24 * time.Hour} {
		who, action := ann, domain.AuditSuspended
		if i%2 == 1 {
			who, action = bob, domain.AuditUnsuspended
		}
		e := domain.AuditEntry{UserID: who.ID, At: now.Add(-ago), Version: 10 + i, Action: action, Actor: root.ID, Via: domain.ViaAPI}
		if i == 5 {
			e.Actor = bob.ID
		}
		want = append(want, e)
	}
	if err := w.store.AccountAudit().Record(ctx, want); err != nil {
		t.Fatal(err)
	}
	// The role's grant is in the audit too.
	want = append(want, w.store.AuditEntries(root.ID)...)
	slices.SortFunc(want, func(a, b domain.AuditEntry) int {
		if b.PositionOf().Before(a.PositionOf()) {
			return -1
		}
		return 1
	})
	admin := domain.Principal{UserID: root.ID}

	keys := func(es []domain.AuditEntry) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = fmt.Sprintf("%s@%s#%d", e.UserID, e.At.Format(time.RFC3339), e.Version)
		}
		return out
	}
	walk := func(f accounts.AuditFilter, limit int) []domain.AuditEntry {
		t.Helper()
		var got []domain.AuditEntry
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 50 {
				t.Fatalf("%+v: more than 50 pages", f)
			}
			p, err := w.svc.AllAudit(ctx, admin, f, cursor, limit)
			if err != nil {
				t.Fatalf("%+v: page %d: %v", f, pages, err)
			}
			got = append(got, p.Items...)
			if p.Next == "" {
				return got
			}
			cursor = p.Next
		}
	}
	got := walk(accounts.AuditFilter{}, 2)
	if !slices.Equal(keys(got), keys(want)) {
		t.Fatalf("every entry, newest first:\n got %v\nwant %v", keys(got), keys(want))
	}
	// From a day without entries, a page reads 31 days: none there, and
	// a cursor to go on, which finds the entry 44 days back.
	quiet := domain.GlobalAuditCursor{Day: domain.AuditDay(now.Add(-11 * 24 * time.Hour))}.Encode()
	p, err := w.svc.AllAudit(ctx, admin, accounts.AuditFilter{}, quiet, 10)
	if err != nil || len(p.Items) != 0 || p.Next == "" {
		t.Fatalf("31 quiet days: %d items, next %q, %v; want none and a cursor", len(p.Items), p.Next, err)
	}
	if p, err = w.svc.AllAudit(ctx, admin, accounts.AuditFilter{}, p.Next, 10); err != nil || len(p.Items) != 1 || p.Next != "" {
		t.Fatalf("after the quiet days: %v next %q %v", keys(p.Items), p.Next, err)
	}
	byBob := walk(accounts.AuditFilter{Actor: bob.ID}, 10)
	if len(byBob) != 1 || byBob[0].Actor != bob.ID {
		t.Errorf("bob's entries: %v", keys(byBob))
	}
	lifted := walk(accounts.AuditFilter{Action: domain.AuditUnsuspended}, 10)
	if len(lifted) != 4 || slices.ContainsFunc(lifted, func(e domain.AuditEntry) bool { return e.Action != domain.AuditUnsuspended }) {
		t.Errorf("the unsuspensions: %v", keys(lifted))
	}
	if _, err := w.svc.AllAudit(ctx, domain.Principal{UserID: ann.ID}, accounts.AuditFilter{}, "", 10); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("a user who is no admin: %v, want forbidden", err)
	}
}
