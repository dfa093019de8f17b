//go:build integration

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"shelf/internal/app"
	"shelf/tests/testkit"
)

// suspensionBody is the Suspension schema as tests read it.
type suspensionBody struct {
	UserID      string    `json:"userId"`
	Username    string    `json:"username"`
	Reason      string    `json:"reason"`
	SuspendedAt time.Time `json:"suspendedAt"`
	SuspendedBy string    `json:"suspendedBy"`
	Until       *string   `json:"until"`
}

type suspensionListBody struct {
	Items      []suspensionBody `json:"items"`
	NextCursor string           `json:"nextCursor"`
}

// moderators is an app with an admin and a session for it.
type moderators struct {
	app   *app.App
	api   *testkit.API
	admin *testkit.API
	db    *testkit.DB
	id    string
}

// newModerators serves a fresh keyspace with one admin logged in.
func newModerators(t *testing.T, env map[string]string, opts ...app.Option) *moderators {
	t.Helper()
	db := testkit.NewDB(t)
	a, api := newTestApp(t, db, env, opts...)
	return withAdmin(t, a, api, db)
}

// withAdmin signs up an admin on app a, served by api on db, and logs it in.
func withAdmin(t *testing.T, a *app.App, api *testkit.API, db *testkit.DB) *moderators {
	t.Helper()
	n := name("admin")
	u := mustSignup(t, api, n, n+"@example.org")
	if _, err := a.Accounts.SetAdmin(context.Background(), n, true); err != nil {
		t.Fatal(err)
	}
	return &moderators{app: a, api: api, admin: api.As(mustLogin(t, api, n).Token), db: db, id: u.ID}
}

// member signs up a plain user and returns it with a logged-in client.
func (m *moderators) member(t *testing.T) (userBody, *testkit.API) {
	t.Helper()
	return newUser(t, m.api, "member")
}

func (m *moderators) suspend(id, reason string) *testkit.Response {
	return m.admin.Send(http.MethodPost, "/v1/users/"+id+"/suspension", map[string]any{"reason": reason})
}

func (m *moderators) unsuspend(id string) *testkit.Response {
	return m.admin.Do(http.MethodDelete, "/v1/users/"+id+"/suspension", "", nil)
}

// listAll pages through the suspended list with limit.
func (m *moderators) listAll(t *testing.T, limit int) []suspensionBody {
	t.Helper()
	return pageAll[suspensionBody](t, m.admin, "/v1/suspensions", limit)
}

// pageAll pages through the list at path (with a query of its own or
// none) as api with limit, checking no page is longer than limit.
func pageAll[T any](t *testing.T, api *testkit.API, path string, limit int) []T {
	t.Helper()
	var all []T
	cursor, sep := "", "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for pages := 0; pages < 10000; pages++ {
		p := path + sep + "limit=" + itoa(limit)
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := api.Get(p)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.StatusCode, r.Body)
		}
		var page struct {
			Items      []T    `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		r.JSON(t, &page)
		if len(page.Items) > limit {
			t.Fatalf("GET %s: a page of %d items with limit %d", p, len(page.Items), limit)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			return all
		}
		cursor = page.NextCursor
	}
	t.Fatalf("%s never ended", path)
	return nil
}

// stopAfter runs suspend (reason "interrupted") or unsuspend of id, stopped
// after step as a crash would, and checks it answered 500.
func (m *moderators) stopAfter(t *testing.T, op, step, id string) {
	t.Helper()
	m.app.Moderation.Hooks.AfterStep = func(o, s string) error {
		if o == op && s == step {
			return errCrash
		}
		return nil
	}
	var r *testkit.Response
	if op == "suspend" {
		r = m.suspend(id, "interrupted")
	} else {
		r = m.unsuspend(id)
	}
	m.app.Moderation.Hooks.AfterStep = nil
	if r.StatusCode != http.StatusInternalServerError {
		t.Fatalf("%s stopped after %s: %d %s", op, step, r.StatusCode, r.Body)
	}
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// agreement checks S2 on the whole keyspace: an account is suspended
// exactly when its reverse lookup and its list row exist and match its
// suspension, and the bucket index holds exactly the buckets with rows.
func agreement(t *testing.T, db *testkit.DB) (suspended int) {
	t.Helper()
	ctx := context.Background()
	type susp struct {
		At     time.Time
		Bucket string
	}
	var users []struct {
		ID               string
		Status           string
		SuspendedAt      time.Time
		SuspensionBucket string
	}
	if err := db.Session.ContextQuery(ctx, "SELECT id, status, suspended_at, suspension_bucket FROM users", nil).SelectRelease(&users); err != nil {
		t.Fatal(err)
	}
	var lookups []struct {
		UserID     string
		OccurredOn time.Time
		Bucket     string
	}
	if err := db.Session.ContextQuery(ctx, "SELECT user_id, occurred_on, bucket FROM suspended_users", nil).SelectRelease(&lookups); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Bucket     string
		OccurredOn time.Time
		UserID     string
	}
	if err := db.Session.ContextQuery(ctx, "SELECT bucket, occurred_on, user_id FROM users_by_status", nil).SelectRelease(&rows); err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Bucket  string
		Emptied bool
	}
	if err := db.Session.ContextQuery(ctx, "SELECT bucket, emptied FROM status_buckets WHERE status = 'suspended'", nil).SelectRelease(&entries); err != nil {
		t.Fatal(err)
	}
	var indexed []string // the entries not marked emptied
	for _, e := range entries {
		if !e.Emptied {
			indexed = append(indexed, e.Bucket)
		}
	}
	want := map[string]susp{}
	for _, u := range users {
		if u.Status == "suspended" {
			want[u.ID] = susp{u.SuspendedAt, u.SuspensionBucket}
		} else if !u.SuspendedAt.IsZero() {
			t.Errorf("active account %s still carries a suspension", u.ID)
		}
	}
	got := map[string]susp{}
	for _, l := range lookups {
		got[l.UserID] = susp{l.OccurredOn, l.Bucket}
	}
	rowsOf := map[string][]susp{}
	bucketsWithRows := map[string]bool{}
	for _, r := range rows {
		rowsOf[r.UserID] = append(rowsOf[r.UserID], susp{r.OccurredOn, r.Bucket})
		bucketsWithRows[r.Bucket] = true
	}
	for id, w := range want {
		if l, ok := got[id]; !ok || !l.At.Equal(w.At) || l.Bucket != w.Bucket {
			t.Errorf("suspended %s: reverse lookup %+v, want %+v", id, got[id], w)
		}
		if rs := rowsOf[id]; len(rs) != 1 || !rs[0].At.Equal(w.At) || rs[0].Bucket != w.Bucket {
			t.Errorf("suspended %s: list rows %+v, want one at %+v", id, rs, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s has a reverse lookup but is not suspended", id)
		}
	}
	for id := range rowsOf {
		if _, ok := want[id]; !ok {
			t.Errorf("%s is listed but not suspended", id)
		}
	}
	idx := map[string]bool{}
	for _, b := range indexed {
		idx[b] = true
		if !bucketsWithRows[b] {
			t.Errorf("bucket %s is indexed but empty", b)
		}
	}
	for b := range bucketsWithRows {
		if !idx[b] {
			t.Errorf("bucket %s holds rows but is not indexed", b)
		}
	}
	return len(want)
}
