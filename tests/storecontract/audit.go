package storecontract

import (
	"context"
	"hash/fnv"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
)

// Audit runs AuditChecks.
func Audit(t *testing.T, open Open[accounts.AuditLog]) { Run(t, open, AuditChecks) }

// AuditChecks are accounts.AuditLog's contract for the audit of every
// account (its days).
var AuditChecks = []Check[accounts.AuditLog]{
	{"ADayListsEveryAccountNewestFirstEachOnce", auditDayOrder},
	{"SinceIsNoLaterThanToday", auditSince},
}

// quietDay is a day of 2001-2020 of this check's own (from its key): a
// real keyspace's days of now hold other tests' entries.
func quietDay(key string) time.Time {
	h := fnv.New32a()
	h.Write([]byte(key))
	return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(h.Sum32()%7000))
}

// auditDayOrder: entries of two accounts over a day and the day before,
// recorded twice, are listed by day newest first (at, then account,
// version and action, descending), each once, alike read whole or a
// position after another; each account's own audit has its own.
func auditDayOrder(t testing.TB, s accounts.AuditLog, _ Clock) {
	ctx := context.Background()
	ann, bob := "u_"+Key("ann"), "u_"+Key("bob")
	day := quietDay(ann)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	entry := func(user string, when time.Time, version int, action domain.AuditAction) domain.AuditEntry {
		return domain.AuditEntry{UserID: user, At: when, Version: version, Action: action, Actor: "u_admin", Via: domain.ViaAPI, Reason: "spam"}
	}
	entries := []domain.AuditEntry{
		entry(ann, at(9, 0), 3, domain.AuditSuspended),
		entry(bob, at(9, 0), 7, domain.AuditSuspended),
		entry(ann, at(23, 59), 4, domain.AuditUnsuspended),
		entry(bob, at(0, 0), 6, domain.AuditRoleGranted),
		entry(ann, at(-1, 0), 2, domain.AuditRoleGranted), // the day before
	}
	for range 2 {
		if err := s.Record(ctx, entries); err != nil {
			t.Fatal(err)
		}
	}
	ours := func(es []domain.AuditEntry) []domain.AuditPosition {
		var out []domain.AuditPosition
		for _, e := range es {
			if e.UserID == ann || e.UserID == bob {
				out = append(out, e.PositionOf())
			}
		}
		return out
	}
	want := []domain.AuditPosition{entries[2].PositionOf(), entries[1].PositionOf(), entries[0].PositionOf(), entries[3].PositionOf()}
	got, err := s.Day(ctx, day, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(ours(got), want, samePosition) {
		t.Fatalf("the day: %+v, want %+v", ours(got), want)
	}
	var walked []domain.AuditEntry
	var after *domain.AuditPosition
	for range 10 {
		page, err := s.Day(ctx, day, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, page...)
		after = new(page[0].PositionOf())
	}
	if !slices.EqualFunc(ours(walked), want, samePosition) {
		t.Fatalf("the day one entry at a time: %+v, want %+v", ours(walked), want)
	}
	before, err := s.Day(ctx, day.AddDate(0, 0, -1), nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := ours(before); len(got) != 1 || !samePosition(got[0], entries[4].PositionOf()) || before[0].Reason != "spam" {
		t.Fatalf("the day before: %+v", before)
	}
	own, err := s.Page(ctx, bob, nil, 100)
	if err != nil || len(own) != 2 {
		t.Fatalf("bob's own audit: %+v %v", own, err)
	}
}

func samePosition(a, b domain.AuditPosition) bool {
	return a.At.Equal(b.At) && a.UserID == b.UserID && a.Version == b.Version && a.Action == b.Action
}

// auditSince: the first day kept is a day (midnight UTC), and not after
// today.
func auditSince(t testing.TB, s accounts.AuditLog, c Clock) {
	since, err := s.Since(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !since.Equal(domain.AuditDay(since)) || since.After(domain.AuditDay(c.Now())) {
		t.Fatalf("since %v (now %v)", since, c.Now())
	}
}
