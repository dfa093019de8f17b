//go:build integration

package e2e

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/internal/app"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// listReads counts the statements that read the suspended list's tables.
type listReads struct{ n atomic.Int64 }

func (c *listReads) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	if strings.HasPrefix(q.Statement, "SELECT") &&
		(strings.Contains(q.Statement, "users_by_status") || strings.Contains(q.Statement, "status_buckets")) {
		c.n.Add(1)
	}
}

// TestListingAcrossBuckets suspends users at moments spread over months
// with empty months (and years) between, with a fake clock, then pages
// through the list with limits 1, 7 and 100: every suspension comes exactly
// once, newest first, ties by user id descending; and a page costs the
// bucket index read plus at most one slice per bucket it takes items from,
// plus two, whatever lies between (S4).
func TestListingAcrossBuckets(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	reads := &listReads{}
	a, api := newObservedApp(t, db, reads, nil, nil)
	m := withAdmin(t, a, api, db)

	var mu sync.Mutex
	now := time.Now()
	clockOf(t, a).set(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	base := time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)
	// Months back from base; the gaps are empty buckets, up to years long.
	offsets := []int{0, 1, 3, 4, 9, 15, 40, 41, 77}
	type suspended struct {
		at time.Time
		id string
	}
	var all []suspended
	for i, off := range offsets {
		for k := 0; k < 1+i%4; k++ {
			at := base.AddDate(0, -off, -k)
			if k == 2 {
				at = base.AddDate(0, -off, -1) // a tie with k == 1
			}
			u, _ := m.member(t)
			mu.Lock()
			now = at
			mu.Unlock()
			if r := m.suspend(u.ID, "spread"); r.StatusCode != http.StatusCreated {
				t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
			}
			all = append(all, suspended{at.Truncate(time.Millisecond), u.ID})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].at.Equal(all[j].at) {
			return all[i].at.After(all[j].at)
		}
		return all[i].id > all[j].id
	})

	for _, limit := range []int{1, 7, 100} {
		var got []suspensionBody
		cursor := ""
		for pages := 0; ; pages++ {
			path := "/v1/suspensions?limit=" + itoa(limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			// One index read, one slice per bucket with items, one more
			// slice to find the next item (or the end), one more bucket
			// slice at a bucket boundary; the fewest of up to three sends
			// (a read: sending it again changes nothing), as a driver's
			// retry of a read that timed out under -race counts one more.
			var page suspensionListBody
			var used, maxReads int64
			var buckets map[string]bool
			for range 3 {
				before := reads.n.Load()
				r := m.admin.Get(path)
				used = reads.n.Load() - before
				page = suspensionListBody{}
				r.JSON(t, &page)
				buckets = map[string]bool{}
				for _, it := range page.Items {
					buckets[it.SuspendedAt.UTC().Format("2006-01")] = true
				}
				if maxReads = int64(1 + len(buckets) + 2); used <= maxReads {
					break
				}
			}
			if used > maxReads {
				t.Errorf("limit %d page %d: %d list reads for %d items in %d buckets (max %d)", limit, pages, used, len(page.Items), len(buckets), maxReads)
			}
			got = append(got, page.Items...)
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
			if pages > len(all)+1 {
				t.Fatal("the list never ends")
			}
		}
		if len(got) != len(all) {
			t.Fatalf("limit %d: %d items, want %d", limit, len(got), len(all))
		}
		for i := range all {
			if got[i].UserID != all[i].id || !got[i].SuspendedAt.Equal(all[i].at) {
				t.Fatalf("limit %d: item %d is %s at %v, want %s at %v", limit, i, got[i].UserID, got[i].SuspendedAt, all[i].id, all[i].at)
			}
		}
	}
	agreement(t, db)
}

// TestAPruneAheadNeverHidesASuspensionLandingDuringIt: a prune reads the
// bucket's index entry and rows, then marks the entry emptied; a
// suspension in the same bucket, made by another process while the prune
// is between its reads and its mark, stays listed at once, though the
// pruning process's clock runs an hour ahead of the other's: the mark is
// timed by the entry's own write time, not by a clock
// (docs/design/suspension.md, "Buckets").
func TestAPruneAheadNeverHidesASuspensionLandingDuringIt(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	pruner, _ := newTestApp(t, m.db, nil, app.ClockOffset(time.Hour))
	// Both suspensions in one bucket, whatever day the test runs on.
	now := time.Now().UTC()
	at := time.Date(now.Year(), now.Month(), 15, 12, 0, 0, 0, time.UTC)
	clockOf(t, m.app).set(func() time.Time { return at })
	gone, _ := m.member(t)
	landing, _ := m.member(t)
	if r := m.suspend(gone.ID, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	raced := false
	faults(pruner).Set(func(name string, at faultinject.Point) error {
		if name == "suspension_buckets.empty" && at == faultinject.BeforeWrite && !raced {
			raced = true
			if r := m.suspend(landing.ID, "spam"); r.StatusCode != http.StatusCreated {
				t.Errorf("the suspension during the prune: %d %s", r.StatusCode, r.Body)
			}
		}
		return nil
	})
	if err := pruner.Moderation.Unsuspend(context.Background(), domain.Principal{UserID: m.id}, gone.ID); err != nil {
		t.Fatal(err)
	}
	faults(pruner).Set(nil)
	if !raced {
		t.Fatal("the unsuspension never marked the bucket emptied")
	}
	if list := m.listAll(t, 10); len(list) != 1 || list[0].UserID != landing.ID {
		t.Fatalf("listed after the prune: %+v, want the suspension that landed during it", list)
	}
	// The sweepers' passes agree, on either clock.
	for _, a := range []*app.App{m.app, pruner} {
		if n, err := a.Moderation.IndexBuckets(context.Background(), repository.NewAudit(a.DB)); err != nil || n != 0 {
			t.Fatalf("the sweeper's pass fixed %d entries (%v), want none", n, err)
		}
	}
	if list := m.listAll(t, 10); len(list) != 1 || list[0].UserID != landing.ID {
		t.Fatalf("listed after the sweepers' passes: %+v", list)
	}
}

// suspendedMember signs up a member, suspends it, and returns it with its
// suspension's bucket.
func (m *moderators) suspendedMember(t *testing.T) (userBody, string) {
	t.Helper()
	u, _ := m.member(t)
	if r := m.suspend(u.ID, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	var bucket string
	if err := m.db.Session.Query(`SELECT bucket FROM suspended_users WHERE user_id = ?`, nil).Bind(u.ID).Scan(&bucket); err != nil {
		t.Fatal(err)
	}
	return u, bucket
}

// TestTheSweeperMarksEntriesFromBeforeTheMark: an index entry written
// before schema 034 has no mark, and a prune would delete it by its
// clock; the sweeper's pass marks it live (at a write time of its own),
// so every later prune goes by write times.
func TestTheSweeperMarksEntriesFromBeforeTheMark(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, bucket := m.suspendedMember(t)
	marked := func() *int64 {
		t.Helper()
		var w *int64
		if err := m.db.Session.Query(`SELECT WRITETIME(emptied) FROM status_buckets WHERE status = 'suspended' AND bucket = ?`, nil).
			Bind(bucket).Scan(&w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if marked() == nil {
		t.Fatal("a suspension's entry has no mark")
	}
	// As the release before wrote it: the row alone, no mark.
	for _, stmt := range []string{`DELETE FROM status_buckets WHERE status = 'suspended' AND bucket = ?`,
		`INSERT INTO status_buckets (status, bucket) VALUES ('suspended', ?)`} {
		if err := m.db.Session.Query(stmt, nil).Bind(bucket).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	if w := marked(); w != nil {
		t.Fatalf("the entry as the release before wrote it has a mark at %d", *w)
	}
	if list := m.listAll(t, 10); len(list) != 1 || list[0].UserID != u.ID {
		t.Fatalf("an entry without a mark is not listed: %+v", list)
	}
	if _, err := m.app.Moderation.IndexBuckets(context.Background(), repository.NewAudit(m.app.DB)); err != nil {
		t.Fatal(err)
	}
	if marked() == nil {
		t.Fatal("the sweeper's pass left the entry without a mark")
	}
	if list := m.listAll(t, 10); len(list) != 1 || list[0].UserID != u.ID {
		t.Fatalf("listed after the pass: %+v", list)
	}
}

// TestTheSweeperListsABucketAPruneShadowed: a process of the release
// before schema 034 pruned an emptied bucket with a delete stamped by its
// own clock; one whose clock ran 3 s ahead could shadow the entry of a
// suspension that landed in the bucket just after its read, and the
// suspended account dropped out of the list. The sweeper's pass over the
// index (moderation.IndexBuckets, every process every minute) lists it
// again once the skew has passed, with no operator.
func TestTheSweeperListsABucketAPruneShadowed(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, bucket := m.suspendedMember(t)
	if list := m.listAll(t, 10); len(list) != 1 {
		t.Fatalf("listed before the prune: %+v", list)
	}
	ahead := time.Now().Add(3 * time.Second).UnixMicro()
	if err := m.db.Session.Query(`DELETE FROM status_buckets USING TIMESTAMP ? WHERE status = 'suspended' AND bucket = ?`, nil).
		Bind(ahead, bucket).Exec(); err != nil {
		t.Fatal(err)
	}
	if list := m.listAll(t, 10); len(list) != 0 {
		t.Fatalf("the shadowed bucket is still listed: %+v", list)
	}
	audit := repository.NewAudit(m.app.DB)
	deadline := time.Now().Add(10 * time.Second)
	for len(m.listAll(t, 10)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper's passes over the index never listed the suspended account again")
		}
		if _, err := m.app.Moderation.IndexBuckets(context.Background(), audit); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if list := m.listAll(t, 10); len(list) != 1 || list[0].UserID != u.ID {
		t.Fatalf("listed again: %+v", list)
	}
}
