package storecontract

import (
	"context"
	"fmt"
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
	{"EntriesAtOnceAreEachKept", auditEntriesAtOnce},
	{"AnEntryReadsAsWritten", auditEntryReadsAsWritten},
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

// auditEntriesAtOnce: three admins list one account's sessions in one
// millisecond at one version (the same key), the first twice over: each
// entry is kept, in both tables, the later ones at the next milliseconds
// free, and each answers the time it was written at.
func auditEntriesAtOnce(t testing.TB, s accounts.AuditLog, _ Clock) {
	ctx := context.Background()
	user := "u_" + Key("watched")
	at := quietDay(user).Add(10*time.Hour + 123456*time.Microsecond)
	var written []domain.AuditEntry
	for _, actor := range []string{"u_" + Key("first"), "u_" + Key("first"), "u_" + Key("second"), "u_" + Key("third")} {
		e, err := s.RecordNew(ctx, domain.AuditEntry{UserID: user, At: at, Version: 5, Action: domain.AuditSessionsListed,
			Actor: actor, Via: domain.ViaAPI, From: domain.Origin{IP: "192.0.2.1"}})
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, e)
	}
	for i, e := range written {
		if want := at.Truncate(time.Millisecond).Add(time.Duration(i) * time.Millisecond); !e.At.Equal(want) {
			t.Fatalf("entry %d was written at %v, want %v (the next millisecond free)", i, e.At, want)
		}
	}
	want := func(es []domain.AuditEntry) error {
		if len(es) != len(written) {
			return fmt.Errorf("%d entries, want %d", len(es), len(written))
		}
		for i, e := range es {
			w := written[len(written)-1-i]
			if !e.At.Equal(w.At) || e.Actor != w.Actor || e.From.IP != "192.0.2.1" {
				return fmt.Errorf("entry %d: %+v, want %+v", i, e, w)
			}
		}
		return nil
	}
	own, err := s.Page(ctx, user, nil, 10)
	if err == nil {
		err = want(own)
	}
	if err != nil {
		t.Fatalf("the account's audit: %v", err)
	}
	var ours []domain.AuditEntry
	day, err := s.Day(ctx, domain.AuditDay(at), nil, 100)
	for _, e := range day {
		if e.UserID == user {
			ours = append(ours, e)
		}
	}
	if err == nil {
		err = want(ours)
	}
	if err != nil {
		t.Fatalf("the day's audit: %v", err)
	}
}

// auditEntryReadsAsWritten: an entry with every field set, recorded by
// Record and by RecordNew, reads back whole from the account's audit and
// from its day's: its origin's address, user agent and session too.
func auditEntryReadsAsWritten(t testing.TB, s accounts.AuditLog, _ Clock) {
	ctx := context.Background()
	user := "u_" + Key("whole")
	day := quietDay(user)
	from := domain.Origin{IP: "2001:db8::7", UserAgent: "curl/8.5", Session: "s_" + Key("session")}
	carried := domain.AuditEntry{UserID: user, At: day.Add(time.Hour), Version: 5, Action: domain.AuditUsernameChanged,
		Actor: "u_admin", Via: domain.ViaAPI, From: from, Old: "ann", New: "anne"}
	suspended := domain.AuditEntry{UserID: user, At: day.Add(2 * time.Hour), Version: 6, Action: domain.AuditSuspended,
		Actor: "u_admin", Via: domain.ViaAPI, From: from, Reason: "spam", Until: day.Add(48 * time.Hour)}
	if err := s.Record(ctx, []domain.AuditEntry{carried, suspended}); err != nil {
		t.Fatal(err)
	}
	listed := domain.AuditEntry{UserID: user, At: day.Add(3 * time.Hour), Version: 6, Action: domain.AuditSessionsListed,
		Actor: "u_admin", Via: domain.ViaAPI, From: from}
	listed, err := s.RecordNew(ctx, listed)
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.AuditEntry{listed, suspended, carried}
	page, err := s.Page(ctx, user, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(page, want, sameEntry) {
		t.Fatalf("the account's audit reads %+v; want %+v", page, want)
	}
	days, err := s.Day(ctx, day, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(days, want, sameEntry) {
		t.Fatalf("the day's audit reads %+v; want %+v", days, want)
	}
}

// sameEntry compares entries field by field, times as instants.
func sameEntry(a, b domain.AuditEntry) bool {
	return a.UserID == b.UserID && a.At.Equal(b.At) && a.Version == b.Version && a.Action == b.Action && a.Actor == b.Actor &&
		a.Via == b.Via && a.From == b.From && a.Old == b.Old && a.New == b.New && a.Reason == b.Reason && a.Until.Equal(b.Until)
}
