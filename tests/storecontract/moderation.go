package storecontract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// Suspensions runs SuspensionChecks, each on its own keys.
func Suspensions(t *testing.T, open Open[moderation.Store]) { Run(t, open, SuspensionChecks) }

// SuspensionChecks are moderation.Store's contract for one account's
// records and history.
var SuspensionChecks = []Check[moderation.Store]{
	{"RecordsFollowTheNewestVersion", suspensionVersions},
	{"HistoryPagesNewestFirst", historyPages},
}

// SuspendedList runs SuspendedListChecks in order: they read the whole
// suspended list and expiry queue, so on a real node they need tables no
// other test writes, and each leaves them empty.
func SuspendedList(t *testing.T, open Open[moderation.Store]) {
	RunInOrder(t, open, SuspendedListChecks)
}

// SuspendedListChecks are moderation.Store's contract for the suspended
// list and the expiry queue.
var SuspendedListChecks = []Check[moderation.Store]{
	{"ListPagesNewestFirst", suspendedListPages},
	{"ExpiredOldestFirst", expiredOldestFirst},
	{"ExpiredFromItsStart", expiredFromItsStart},
}

func suspensionOf(user string, at time.Time, reason string) domain.Suspension {
	return domain.Suspension{UserID: user, Username: user, Reason: reason, SuspendedAt: At(at), SuspendedBy: "admin",
		Bucket: at.UTC().Format("2006-01")}
}

// suspensionVersions: the records are written at the account's version:
// an older write landing late loses, a delete wins a tie, and a write at
// the delete's version or older stays deleted.
func suspensionVersions(t testing.TB, s moderation.Store, c Clock) {
	ctx, user, now := context.Background(), Key("user"), c.Now()
	// One moment for both: the history entry is keyed by it, so two reads
	// of a real clock a millisecond apart would be two entries.
	newer, older := suspensionOf(user, now, "newer"), suspensionOf(user, now, "older")
	lookup := func(want string) {
		t.Helper()
		got, err := s.Lookup(ctx, user)
		switch {
		case want == "" && !errors.Is(err, domain.ErrNotFound):
			t.Fatalf("lookup: %+v %v, want ErrNotFound", got, err)
		case want != "" && (err != nil || got.Reason != want):
			t.Fatalf("lookup: %+v %v, want reason %q", got, err, want)
		}
	}
	if err := s.Record(ctx, newer, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, older, 3); err != nil {
		t.Fatal(err)
	}
	lookup("newer")
	if err := s.Erase(ctx, newer, 4); err != nil {
		t.Fatal(err)
	}
	lookup("newer")
	if err := s.Erase(ctx, newer, 5); err != nil {
		t.Fatal(err)
	}
	lookup("")
	if err := s.Record(ctx, newer, 5); err != nil {
		t.Fatal(err)
	}
	lookup("")
	if err := s.Record(ctx, newer, 6); err != nil {
		t.Fatal(err)
	}
	lookup("newer")
	// A history entry is rewritten by a newer version only.
	if err := s.RecordSuspended(ctx, older, 4); err != nil {
		t.Fatal(err)
	}
	events, err := s.History(ctx, user, nil, 10)
	if err != nil || len(events) != 1 || events[0].Reason != "newer" || events[0].Kind != moderation.EventSuspended {
		t.Fatalf("history: %+v %v, want the one entry, as version 6 wrote it", events, err)
	}
}

// historyPages: an account's history pages newest first, ties (one
// moment) by kind descending, each cursor resuming after its entry.
func historyPages(t testing.TB, s moderation.Store, c Clock) {
	ctx, user := context.Background(), Key("user")
	start := At(c.Now().Add(-time.Hour))
	var want []moderation.Event
	for i := range 4 {
		sp := suspensionOf(user, start.Add(time.Duration(i)*time.Minute), fmt.Sprint(i))
		// Each suspension is lifted the moment the next begins: two
		// entries at one time.
		lift := domain.Lift{Kind: domain.LiftUnsuspended, At: sp.SuspendedAt.Add(time.Minute), By: "admin", Suspension: sp}
		if i%2 == 1 {
			lift.Kind, lift.By = domain.LiftExpired, ""
		}
		if err := s.RecordLift(ctx, lift, 10+i); err != nil {
			t.Fatal(err)
		}
		want = append(want, moderation.LiftEvents(lift)...)
	}
	slices.SortFunc(want, func(a, b moderation.Event) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(string(b.Kind), string(a.Kind))
	})
	key := func(e moderation.Event) string { return e.At.Format(time.TimeOnly) + "/" + string(e.Kind) }
	var keys []string
	for _, e := range want {
		keys = append(keys, key(e))
	}
	for _, limit := range []int{1, 3, len(want)} {
		pages(t, limit, func(last *moderation.Event, limit int) ([]moderation.Event, error) {
			var after *moderation.HistoryCursor
			if last != nil {
				after = &moderation.HistoryCursor{At: last.At, Kind: last.Kind}
			}
			return s.History(ctx, user, after, limit)
		}, key, keys)
	}
}

// suspendedListPages: the suspended list pages newest first across its
// buckets, ties by user id descending; an erased suspension leaves it.
func suspendedListPages(t testing.TB, s moderation.Store, c Clock) {
	ctx := context.Background()
	base := time.Date(2030, 1, 15, 12, 0, 0, 0, time.UTC)
	var all []domain.Suspension
	for i := range 8 {
		// Three buckets (months), each pair of suspensions at one moment.
		at := base.AddDate(0, (i/2)%3, 0).Add(time.Duration(i/6) * time.Hour)
		all = append(all, suspensionOf(fmt.Sprintf("%s-%d", Key("user"), i), at, "r"))
	}
	for _, sp := range all {
		if err := s.Record(ctx, sp, 1); err != nil {
			t.Fatal(err)
		}
	}
	key := func(sp domain.Suspension) string { return sp.UserID }
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b domain.Suspension) int {
		if c := b.SuspendedAt.Compare(a.SuspendedAt); c != 0 {
			return c
		}
		return strings.Compare(b.UserID, a.UserID)
	})
	var want []string
	for _, sp := range sorted {
		want = append(want, sp.UserID)
	}
	read := func(last *domain.Suspension, limit int) ([]domain.Suspension, error) {
		var after *moderation.Cursor
		if last != nil {
			after = &moderation.Cursor{Bucket: last.Bucket, SuspendedAt: last.SuspendedAt, UserID: last.UserID}
		}
		return s.Page(ctx, after, limit)
	}
	for _, limit := range []int{1, 3, len(all)} {
		pages(t, limit, read, key, want)
	}
	for _, sp := range all {
		if err := s.Erase(ctx, sp, 1); err != nil {
			t.Fatal(err)
		}
	}
	pages(t, 3, read, key, nil)
}

// expiredOldestFirst: the expiry queue lists the entries ended by t,
// oldest first (ties by user id), up to the limit; an erase at an older
// version than the entry's leaves it, at its own version removes it.
func expiredOldestFirst(t testing.TB, s moderation.Store, c Clock) {
	ctx, now := context.Background(), At(c.Now())
	var ended []domain.Suspension
	for i, ago := range []time.Duration{3, 2, 2, 1} {
		sp := suspensionOf(fmt.Sprintf("%s-%d", Key("user"), i), now.Add(-time.Hour), "r")
		sp.Until = now.Add(-ago * time.Minute)
		ended = append(ended, sp)
	}
	slices.SortFunc(ended[1:3], func(a, b domain.Suspension) int { return strings.Compare(a.UserID, b.UserID) })
	later := suspensionOf(Key("user"), now.Add(-time.Hour), "r")
	later.Until = now.Add(time.Hour)
	for _, sp := range append([]domain.Suspension{later}, ended...) {
		if err := s.Record(ctx, sp, 2); err != nil {
			t.Fatal(err)
		}
	}
	expired := func(limit int, want ...domain.Suspension) {
		t.Helper()
		got, err := s.Expired(ctx, now, limit)
		if err != nil {
			t.Fatal(err)
		}
		var g, w []string
		for _, sp := range got {
			g = append(g, sp.UserID+"@"+sp.Until.Format(time.TimeOnly))
		}
		for _, sp := range want {
			w = append(w, sp.UserID+"@"+sp.Until.Format(time.TimeOnly))
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("expired by %v, limit %d:\n got %v\nwant %v", now, limit, g, w)
		}
	}
	expired(3, ended[:3]...)
	if err := s.EraseExpiry(ctx, ended[0].UserID, ended[0].Until, 1); err != nil {
		t.Fatal(err)
	}
	expired(10, ended...)
	for _, sp := range ended[:2] {
		if err := s.EraseExpiry(ctx, sp.UserID, sp.Until, 2); err != nil {
			t.Fatal(err)
		}
	}
	expired(10, ended[2:]...)
	for _, sp := range append([]domain.Suspension{later}, ended...) {
		if err := s.Erase(ctx, sp, 2); err != nil {
			t.Fatal(err)
		}
	}
	expired(10)
}

// expiredFromItsStart: the queue is read from a start that follows what
// it read, up to a couple of minutes behind now, so an entry written
// later with an end further behind is never read (whoever writes the
// records of a suspension that ended already lifts it itself:
// moderation's liftIfEnded), while one a minute behind now is.
func expiredFromItsStart(t testing.TB, s moderation.Store, c Clock) {
	ctx, now := context.Background(), At(c.Now())
	if got, err := s.Expired(ctx, now, 10); err != nil || len(got) != 0 {
		t.Fatalf("expired before any entry: %+v %v", got, err)
	}
	behind := suspensionOf(Key("user"), now.Add(-2*time.Hour), "r")
	behind.Until = now.Add(-time.Hour)
	within := suspensionOf(Key("user"), now.Add(-2*time.Hour), "r")
	within.Until = now.Add(-time.Minute)
	for _, sp := range []domain.Suspension{behind, within} {
		if err := s.Record(ctx, sp, 2); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Expired(ctx, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].UserID != within.UserID {
		t.Fatalf("expired after the start moved on: %+v, want only %s (ended a minute ago), not %s (an hour ago)", got, within.UserID, behind.UserID)
	}
	for _, sp := range []domain.Suspension{behind, within} {
		if err := s.Erase(ctx, sp, 2); err != nil {
			t.Fatal(err)
		}
	}
}

// SkewedSuspensions is a moderation store and the same store as processes
// whose clocks disagree with it see it.
type SkewedSuspensions struct {
	Store moderation.Store
	// Skewed is the store on a process clock d ahead of Store's.
	Skewed func(d time.Duration) moderation.Store
}

// ExpiryStart runs ExpiryStartChecks in order, after SuspendedList's
// (they read the expiry queue whole too, and leave it empty).
func ExpiryStart(t *testing.T, open Open[SkewedSuspensions]) { RunInOrder(t, open, ExpiryStartChecks) }

// ExpiryStartChecks are the contract of the expiry reader's start on
// clocks that disagree.
var ExpiryStartChecks = []Check[SkewedSuspensions]{
	{"AReaderAheadKeepsToTheNodesClock", expiryReaderAhead},
}

// expiryReaderAhead: a reader whose clock runs 10 minutes ahead bounds its
// reads and the start it moves by the node's clock: an entry written after
// its pass, ended a minute before the node's clock, is still read (by it
// and by a reader on time), and one ending 5 minutes after the node's
// clock, ended by its own, is not read yet.
func expiryReaderAhead(t testing.TB, s SkewedSuspensions, c Clock) {
	ctx, now := context.Background(), At(c.Now())
	ahead := s.Skewed(10 * time.Minute)
	if _, err := ahead.Expired(ctx, now.Add(10*time.Minute), 10); err != nil {
		t.Fatal(err)
	}
	ended := suspensionOf(Key("user"), now.Add(-time.Hour), "r")
	ended.Until = now.Add(-time.Minute)
	ending := suspensionOf(Key("user"), now.Add(-time.Hour), "r")
	ending.Until = now.Add(5 * time.Minute)
	for _, sp := range []domain.Suspension{ended, ending} {
		if err := s.Store.Record(ctx, sp, 2); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		name   string
		reader moderation.Store
		t      time.Time
	}{{"the reader ahead", ahead, At(c.Now()).Add(10 * time.Minute)}, {"the reader on time", s.Store, At(c.Now())}} {
		got, err := r.reader.Expired(ctx, r.t, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].UserID != ended.UserID {
			t.Fatalf("%s read %+v, want only %s (ended a minute before the node's clock), not %s (ends 5 minutes after it)",
				r.name, got, ended.UserID, ending.UserID)
		}
	}
	for _, sp := range []domain.Suspension{ended, ending} {
		if err := s.Store.Erase(ctx, sp, 2); err != nil {
			t.Fatal(err)
		}
	}
}

// ListStores are the suspended list's store and the repair's audit of it
// on one keyspace: the bucket index is written by the one and pruned,
// checked and dropped by both.
type ListStores struct {
	Store moderation.Store
	Audit moderation.Audit
}

// BucketIndex runs BucketIndexChecks in order (they read the whole index,
// as SuspendedList's checks do).
func BucketIndex(t *testing.T, open Open[ListStores]) { RunInOrder(t, open, BucketIndexChecks) }

// BucketIndexChecks are the contract of the suspended list's bucket index.
var BucketIndexChecks = []Check[ListStores]{
	{"EmptiedBucketsAreSkippedThenDropped", emptiedBuckets},
	{"PagesSkipRunsOfEmptiedBuckets", pagesSkipEmptied},
}

// pagesSkipEmptied: the list pages across runs of buckets marked emptied
// longer than a read of the index takes beyond the page (40 months, 35 of
// them emptied, in runs of up to 20), newest first, whatever the limit.
func pagesSkipEmptied(t testing.TB, s ListStores, c Clock) {
	ctx := context.Background()
	base := time.Date(2032, 1, 15, 12, 0, 0, 0, time.UTC)
	kept := map[int]bool{0: true, 1: true, 22: true, 23: true, 39: true}
	var all []domain.Suspension
	var want []string
	for m := range 40 {
		sp := suspensionOf(Key("user"), base.AddDate(0, -m, 0), "r")
		if err := s.Store.Record(ctx, sp, 1); err != nil {
			t.Fatal(err)
		}
		all = append(all, sp)
		if kept[m] {
			want = append(want, sp.UserID) // newest first: m ascending
		}
	}
	for m, sp := range all {
		if !kept[m] {
			if err := s.Store.Erase(ctx, sp, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(last *domain.Suspension, limit int) ([]domain.Suspension, error) {
		var after *moderation.Cursor
		if last != nil {
			after = &moderation.Cursor{Bucket: last.Bucket, SuspendedAt: last.SuspendedAt, UserID: last.UserID}
		}
		return s.Store.Page(ctx, after, limit)
	}
	key := func(sp domain.Suspension) string { return sp.UserID }
	for _, limit := range []int{1, 2, 3, 10} {
		pages(t, limit, read, key, want)
	}
	for m, sp := range all {
		if kept[m] {
			if err := s.Store.Erase(ctx, sp, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Pass(time.Second)
	if _, err := s.Audit.TidyIndex(ctx, 0); err != nil {
		t.Fatal(err)
	}
	pages(t, 3, read, key, nil)
}

// emptiedBuckets: a bucket whose last row is erased is no longer indexed
// (the list skips it, the audit does not count it); the drop deletes its
// entry only once it is older than the age asked for; a suspension in the
// bucket after the drop, or before it, is indexed and listed again.
func emptiedBuckets(t testing.TB, s ListStores, c Clock) {
	ctx := context.Background()
	base := time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC)
	bucket := base.Format("2006-01")
	listed := func(want ...domain.Suspension) {
		t.Helper()
		page, err := s.Store.Page(ctx, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		indexed, withRows, err := s.Audit.Buckets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantIDs []string
		for _, sp := range page {
			got = append(got, sp.UserID)
		}
		for _, sp := range want {
			wantIDs = append(wantIDs, sp.UserID)
		}
		inIndex, inRows := slices.Contains(indexed, bucket), slices.Contains(withRows, bucket)
		if !slices.Equal(got, wantIDs) || inIndex != (len(want) > 0) || inRows != (len(want) > 0) {
			t.Fatalf("listed %v (want %v); bucket %s indexed %v, holds rows %v", got, wantIDs, bucket, inIndex, inRows)
		}
	}
	drop := func(age time.Duration) int {
		t.Helper()
		n, err := s.Audit.TidyIndex(ctx, age)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// cycle suspends someone new in the bucket and lifts it again.
	cycle := func(at time.Time) {
		t.Helper()
		sp := suspensionOf(Key("user"), at, "r")
		if err := s.Store.Record(ctx, sp, 1); err != nil {
			t.Fatal(err)
		}
		listed(sp)
		if err := s.Store.Erase(ctx, sp, 1); err != nil {
			t.Fatal(err)
		}
		listed()
	}
	// Round 1 begins on the entry round 0 dropped: indexed again.
	for round := range 2 {
		cycle(base)
		if n := drop(Long); n != 0 {
			t.Fatalf("round %d: dropped %d entries marked less than an hour ago", round, n)
		}
		if round == 0 {
			cycle(base.Add(time.Hour)) // marked, not dropped: indexed again
		}
		c.Pass(time.Second)
		if n := drop(0); n < 1 {
			t.Fatalf("round %d: the emptied entry was not dropped (%d)", round, n)
		}
		listed()
	}
}
