//go:build integration

package e2e

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/internal/metrics"
	"shelf/repository"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// historyItem is the ModerationEvent schema as tests read it.
type historyItem struct {
	Kind        string     `json:"kind"`
	At          time.Time  `json:"at"`
	Actor       string     `json:"actor"`
	Reason      string     `json:"reason"`
	SuspendedAt time.Time  `json:"suspendedAt"`
	Until       *time.Time `json:"until"`
}

func historyPath(id string) string { return "/v1/users/" + id + "/moderation-history" }

// history pages through a user's moderation history with limit.
func (m *moderators) history(t *testing.T, id string, limit int) []historyItem {
	t.Helper()
	return pageAll[historyItem](t, m.admin, historyPath(id), limit)
}

// kinds lists the entries' kinds, newest first as listed.
func kinds(items []historyItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Kind
	}
	return out
}

// wantKinds checks a user's history lists exactly these kinds, newest
// first, each event once (paged one at a time and all at once alike).
func (m *moderators) wantKinds(t *testing.T, id string, want ...string) []historyItem {
	t.Helper()
	got := m.history(t, id, 100)
	if !slices.Equal(kinds(got), want) {
		t.Fatalf("history of %s: %v, want %v (%+v)", id, kinds(got), want, got)
	}
	if one := m.history(t, id, 1); !slices.EqualFunc(one, got, func(a, b historyItem) bool { return a.Kind == b.Kind && a.At.Equal(b.At) }) {
		t.Fatalf("history of %s paged one at a time: %+v, all at once %+v", id, one, got)
	}
	for i := 1; i < len(got); i++ {
		if !got[i].At.Before(got[i-1].At) {
			t.Fatalf("history of %s is not newest first: %+v", id, got)
		}
	}
	return got
}

// TestModerationHistory: suspensions, unsuspensions and an expiry are
// listed per user, newest first, with who did it, why and until when;
// paging with any limit lists each once; and the route answers like the
// other admin routes to everyone else.
func TestModerationHistory(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, session := m.member(t)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)

	// Never moderated: an empty page, no cursor.
	if r := m.admin.Get(historyPath(u.ID)); r.StatusCode != http.StatusOK || strings.Contains(string(r.Body), "nextCursor") {
		t.Fatalf("empty history: %d %s", r.StatusCode, r.Body)
	}
	var first, second suspensionBody
	r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]any{"reason": "spam", "until": until.Format(time.RFC3339Nano)})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	r.JSON(t, &first)
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend: %d", r.StatusCode)
	}
	r = m.suspend(u.ID, "spam again")
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend again: %d %s", r.StatusCode, r.Body)
	}
	r.JSON(t, &second)
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend again: %d", r.StatusCode)
	}
	// Refused actions are not events.
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unsuspend of an active user: %d", r.StatusCode)
	}

	got := m.wantKinds(t, u.ID, "unsuspended", "suspended", "unsuspended", "suspended")
	for i, it := range got {
		s := second
		if i >= 2 {
			s = first
		}
		if it.Actor != m.id || it.Reason != s.Reason || !it.SuspendedAt.Equal(s.SuspendedAt) {
			t.Errorf("entry %d: %+v, want actor %s and the suspension %+v", i, it, m.id, s)
		}
		if it.Kind == "suspended" && !it.At.Equal(s.SuspendedAt) {
			t.Errorf("entry %d: a suspension at %v, suspended at %v", i, it.At, s.SuspendedAt)
		}
		if it.Kind == "unsuspended" && !it.At.After(s.SuspendedAt) {
			t.Errorf("entry %d: lifted at %v, before its suspension at %v", i, it.At, s.SuspendedAt)
		}
		if wantUntil := i >= 2; (it.Until != nil) != wantUntil || (wantUntil && !it.Until.Equal(until)) {
			t.Errorf("entry %d: until %v, want %v (set: %v)", i, it.Until, until, wantUntil)
		}
	}
	for _, limit := range []int{2, 3} {
		if n := len(m.history(t, u.ID, limit)); n != 4 {
			t.Fatalf("paging by %d: %d entries, want 4", limit, n)
		}
	}

	// An expiry: the sweeper lifts it, by nobody, at its end (3 s on: the
	// suspend must get past its check of a future end under -race).
	v, _ := m.member(t)
	end := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	if r := m.admin.Send(http.MethodPost, "/v1/users/"+v.ID+"/suspension", map[string]any{"reason": "cool off", "until": end.Format(time.RFC3339Nano)}); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend until: %d %s", r.StatusCode, r.Body)
	}
	time.Sleep(time.Until(end) + 100*time.Millisecond)
	if lifted, err := m.app.Moderation.SweepExpired(context.Background(), 100); err != nil || lifted != 1 {
		t.Fatalf("sweep lifted %d, %v", lifted, err)
	}
	got = m.wantKinds(t, v.ID, "expired", "suspended")
	if e := got[0]; e.Actor != "" || !e.At.Equal(end) || e.Until == nil || !e.Until.Equal(end) || e.Reason != "cool off" {
		t.Fatalf("expiry entry %+v, want no actor, at and until %v", e, end)
	}
	if strings.Contains(string(m.admin.Get(historyPath(v.ID)).Body), `"actor":""`) {
		t.Fatal("an expiry's actor is written out empty, not left out")
	}

	// Everyone else, and bad input.
	for _, c := range []struct {
		who    *testkit.API
		path   string
		status int
		field  string
	}{
		{m.api, historyPath(u.ID), http.StatusUnauthorized, ""},
		{session, historyPath(u.ID), http.StatusUnauthorized, ""}, // suspended users' sessions ended
		{m.api, historyPath(u.ID) + "?cursor=bogus", http.StatusUnauthorized, ""},
		{m.admin, historyPath(domain.NewID(domain.UserIDPrefix)), http.StatusNotFound, ""},
		{m.admin, historyPath("nobody"), http.StatusNotFound, ""},
		{m.admin, historyPath(u.ID) + "?cursor=bogus", http.StatusBadRequest, "cursor"},
		{m.admin, historyPath(u.ID) + "?cursor=" + domain.EncodeCursor("x", "suspended"), http.StatusBadRequest, "cursor"},
		{m.admin, historyPath(u.ID) + "?cursor=" + domain.EncodeCursor("1", "banned"), http.StatusBadRequest, "cursor"},
		{m.admin, historyPath(u.ID) + "?limit=0", http.StatusBadRequest, "limit"},
		{m.admin, historyPath(u.ID) + "?limit=101", http.StatusBadRequest, "limit"},
	} {
		r := c.who.Get(c.path)
		if r.StatusCode != c.status {
			t.Errorf("GET %s: %d %s, want %d", c.path, r.StatusCode, r.Body, c.status)
			continue
		}
		if c.field != "" {
			if p := r.Problem(t); len(p.Errors) != 1 || p.Errors[0].Field != c.field {
				t.Errorf("GET %s: %+v, want the field %s named", c.path, p, c.field)
			}
		}
	}
	w, other := m.member(t)
	for _, path := range []string{historyPath(u.ID), historyPath(u.ID) + "?cursor=bogus", historyPath("nobody"), historyPath(w.ID)} {
		// Who may not look learns that first.
		if r := other.Get(path); r.StatusCode != http.StatusForbidden {
			t.Errorf("non-admin GET %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
}

// TestInterruptedEventsAreRecordedOnce: suspend and unsuspend stop after
// their compare-and-set (and unsuspend after writing its history), as a
// crash would. Whoever comes next records the event, exactly once: the
// retry, the opposite action, or the repair; an expiry stopped the same
// way is recorded by the next sweep (S5).
func TestInterruptedEventsAreRecordedOnce(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for _, c := range []struct {
		op, step, fix string
		want          []string
	}{
		{"suspend", "cas", "retry", []string{"suspended"}},
		{"suspend", "cas", "repair", []string{"suspended"}},
		{"suspend", "cas", "opposite", []string{"unsuspended", "suspended"}},
		{"suspend", "records", "retry", []string{"suspended"}},
		{"unsuspend", "cas", "retry", []string{"unsuspended", "suspended"}},
		{"unsuspend", "cas", "repair", []string{"unsuspended", "suspended"}},
		{"unsuspend", "cas", "opposite", []string{"suspended", "unsuspended", "suspended"}},
		{"unsuspend", "history", "retry", []string{"unsuspended", "suspended"}},
		{"unsuspend", "history", "opposite", []string{"suspended", "unsuspended", "suspended"}},
	} {
		u, _ := m.member(t)
		if c.op == "unsuspend" {
			if r := m.suspend(u.ID, "setup"); r.StatusCode != http.StatusCreated {
				t.Fatalf("setup: %d", r.StatusCode)
			}
		}
		m.stopAfter(t, c.op, c.step, u.ID)
		switch {
		case c.fix == "repair":
			if out, err := runAdmin(t, m, "repair-suspensions"); err != nil || !strings.Contains(out, u.ID) {
				t.Fatalf("repair after %s/%s: %v\n%s", c.op, c.step, err, out)
			}
		case (c.op == "suspend") == (c.fix == "retry"):
			if r := m.suspend(u.ID, "next"); r.StatusCode != http.StatusCreated && r.StatusCode != http.StatusConflict {
				t.Fatalf("suspend after %s/%s: %d %s", c.op, c.step, r.StatusCode, r.Body)
			}
		default:
			if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent && r.StatusCode != http.StatusNotFound {
				t.Fatalf("unsuspend after %s/%s: %d %s", c.op, c.step, r.StatusCode, r.Body)
			}
		}
		m.wantKinds(t, u.ID, c.want...)
	}

	// An expiry stopped after its compare-and-set: the sweep after it
	// finds the expiry entry still there and records the expiry. (3 s on:
	// the suspend must get past its check of a future end under -race.)
	u, _ := m.member(t)
	end := time.Now().Add(3 * time.Second).UTC()
	if r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]any{"reason": "short", "until": end.Format(time.RFC3339Nano)}); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend until: %d %s", r.StatusCode, r.Body)
	}
	time.Sleep(time.Until(end) + 100*time.Millisecond)
	m.app.Moderation.Hooks.AfterStep = func(op, step string) error {
		if op == "unsuspend" && step == "cas" {
			return errCrash
		}
		return nil
	}
	if _, err := m.app.Moderation.SweepExpired(context.Background(), 100); err == nil {
		t.Fatal("the stopped sweep reported no error")
	}
	m.app.Moderation.Hooks.AfterStep = nil
	m.wantKinds(t, u.ID, "suspended")
	if _, err := m.app.Moderation.SweepExpired(context.Background(), 100); err != nil {
		t.Fatalf("the next sweep: %v", err)
	}
	m.wantKinds(t, u.ID, "expired", "suspended")

	agreement(t, m.db)
	if out, err := runAdmin(t, m, "repair-suspensions", "--dry-run"); err != nil || !strings.Contains(out, "all records agree") {
		t.Fatalf("a final dry run found problems: %v\n%s", err, out)
	}
}

// TestHistoryWritesUnderFaults: a history entry's write fails before it
// is sent, or applies and loses its answer, in a suspension, an
// unsuspension and a suspension after a lift whose entries were lost. The
// operation answers 503; its retry finishes it; the history lists every
// event once (S5).
func TestHistoryWritesUnderFaults(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for _, at := range []faultinject.Point{faultinject.BeforeWrite, faultinject.AfterWrite} {
		u, _ := m.member(t)
		faults(m.app).Set(func(name string, p faultinject.Point) error {
			if name == "moderation_history.insert" && p == at {
				return &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}
			}
			return nil
		})
		r := m.suspend(u.ID, "faulty")
		faults(m.app).Set(nil)
		if r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("suspend whose history write failed at %v: %d %s", at, r.StatusCode, r.Body)
		}
		if r := m.suspend(u.ID, "retry"); r.StatusCode != http.StatusConflict {
			t.Fatalf("the retry: %d %s", r.StatusCode, r.Body)
		}
		m.wantKinds(t, u.ID, "suspended")

		// Every write of the unsuspension's entries fails: the lift stands
		// (204 is not answered), and the retry records it.
		faults(m.app).Set(func(name string, p faultinject.Point) error {
			if name == "moderation_history.insert" && p == at {
				return &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}
			}
			return nil
		})
		r = m.unsuspend(u.ID)
		if r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("unsuspend whose history writes failed at %v: %d %s", at, r.StatusCode, r.Body)
		}
		// The next suspension cannot go ahead while the lift's entries
		// cannot be written: it would lead to a lift overwriting this one.
		if r := m.suspend(u.ID, "next"); r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("suspend over an unrecorded lift, writes failing: %d %s", r.StatusCode, r.Body)
		}
		faults(m.app).Set(nil)
		if r := m.suspend(u.ID, "next"); r.StatusCode != http.StatusCreated {
			t.Fatalf("suspend over an unrecorded lift: %d %s", r.StatusCode, r.Body)
		}
		m.wantKinds(t, u.ID, "suspended", "unsuspended", "suspended")
	}
	agreement(t, m.db)
}

// TestLateHistoryWritesChangeNothing: the writes of earlier events land
// again, late, after later events (as a hung node's held writes would),
// each at the version it was sent with (a suspension's entry alone at a
// later one too, as a deletion writes it): the history is unchanged, no
// entry twice, none changed (S5). A history entry is keyed by its event
// and never deleted, so a late write has nothing to resurrect.
func TestLateHistoryWritesChangeNothing(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	ctx := context.Background()
	u, _ := m.member(t)
	users := repository.NewUsers(m.app.DB)
	records := repository.NewSuspensions(m.app.DB)
	var states []domain.User
	step := func(r *testkit.Response, want int) {
		t.Helper()
		if r.StatusCode != want {
			t.Fatalf("%d %s, want %d", r.StatusCode, r.Body, want)
		}
		a, err := users.GetSerial(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, a)
	}
	step(m.suspend(u.ID, "first"), http.StatusCreated)
	step(m.unsuspend(u.ID), http.StatusNoContent)
	step(m.suspend(u.ID, "second"), http.StatusCreated)
	step(m.unsuspend(u.ID), http.StatusNoContent)
	before := m.wantKinds(t, u.ID, "unsuspended", "suspended", "unsuspended", "suspended")
	// Each state's writes, landing now at the version they were sent with:
	// a lift's (both its entries) at the lift's version, a suspension's
	// entry at the suspension's (the next state's lift carries it).
	for i, s := range states {
		var l *domain.Lift
		if s.LastLift != nil {
			l = s.LastLift
		} else if i+1 < len(states) {
			l = states[i+1].LastLift
		}
		if err := records.RecordLift(ctx, *l, s.Version); err != nil {
			t.Fatal(err)
		}
		// A suspension's entry alone (RecordSuspended, as a deletion or
		// the repair writes it), at its version and at a later one.
		if sp := s.Suspension; sp != nil {
			for _, v := range []int{s.Version, s.Version + 10} {
				if err := records.RecordSuspended(ctx, *sp, v); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if after := m.wantKinds(t, u.ID, kinds(before)...); !slices.Equal(after, before) {
		t.Fatalf("late writes changed the history:\n%+v\nwas\n%+v", after, before)
	}
	agreement(t, m.db)
}

// TestHistoryPageCostsTwoRoundTrips: pages of a long history, first or
// deep, wait for the two round trips the cost model says (the session's
// read, then the account and the one slice at once), by the api's own
// count: every page exactly two at the best of three sends (fewestTrips):
// none fewer (the model is not pessimistic), none more.
func TestHistoryPageCostsTwoRoundTrips(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	mt := metrics.New()
	a, api := newObservedApp(t, db, mt, mt, mt)
	m := withAdmin(t, a, api, db)
	u, _ := m.member(t)
	for range 12 {
		if r := m.suspend(u.ID, "again"); r.StatusCode != http.StatusCreated {
			t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
		}
		if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
			t.Fatalf("unsuspend: %d", r.StatusCode)
		}
	}
	path, pages := historyPath(u.ID)+"?limit=3", 0
	for {
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		trips, r := fewestTrips(t, api, "/v1/users/{id}/moderation-history", func() *testkit.Response { return m.admin.Get(path) })
		if trips != 2 {
			t.Fatalf("history page %d (%s): %d round trips at best of three sends, want 2", pages+1, path, trips)
		}
		pages++
		r.JSON(t, &page)
		if page.NextCursor == "" {
			break
		}
		path = historyPath(u.ID) + "?limit=3&cursor=" + page.NextCursor
	}
	if pages != 8 {
		t.Fatalf("%d pages of 3, want 8", pages)
	}
}

// fewestTrips sends the read send makes (a read: sending it again changes
// nothing) three times and returns the fewest round trips the api counted
// for it on route, and the last answer (200, or the test fails).
// Statements the code sends together count once however late a goroutine
// sends its own (domain.Parallel; domain.Trips), but a driver's retry of
// a read that failed (a timeout on a busy two-core machine under -race) is
// a round trip more: the fewest of three sends is the code's cost, and a
// single send may overstate it.
func fewestTrips(t *testing.T, api *testkit.API, route string, send func() *testkit.Response) (int, *testkit.Response) {
	t.Helper()
	fewest, last := math.MaxInt, (*testkit.Response)(nil)
	for range 3 {
		before := roundTripBuckets(t, api, route)
		last = send()
		if last.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", route, last.StatusCode, last.Body)
		}
		fewest = min(fewest, tripsBetween(t, before, roundTripBuckets(t, api, route)))
	}
	return fewest, last
}

// tripsBetween reads the round trips of the one request observed between
// two readings of a route's cumulative buckets: the smallest bound whose
// count grew.
func tripsBetween(t *testing.T, before, after map[string]float64) int {
	t.Helper()
	fewest := math.MaxInt
	for le, n := range after {
		if n <= before[le] {
			continue
		}
		if le == "+Inf" {
			fewest = min(fewest, math.MaxInt-1)
			continue
		}
		bound, err := strconv.Atoi(le)
		if err != nil {
			t.Fatalf("bucket bound %q", le)
		}
		fewest = min(fewest, bound)
	}
	if fewest == math.MaxInt {
		t.Fatal("no request observed between two readings of the metrics")
	}
	return fewest
}

// roundTripBuckets reads the api's own count of the round trips its
// requests of one route waited for: how many requests took at most each
// bound ("1", "2", ..., "+Inf"), cumulative.
func roundTripBuckets(t *testing.T, api *testkit.API, route string) map[string]float64 {
	t.Helper()
	buckets := map[string]float64{}
	for _, line := range strings.Split(string(api.Get("/metrics").Body), "\n") {
		if !strings.HasPrefix(line, "shelf_http_request_round_trips_bucket{") || !strings.Contains(line, `route="`+route+`"`) {
			continue
		}
		le := line[strings.Index(line, `le="`)+4:]
		f := strings.Fields(line)
		n, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatal(err)
		}
		buckets[le[:strings.Index(le, `"`)]] = n
	}
	return buckets
}
