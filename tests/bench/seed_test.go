//go:build integration || bench

package bench

import (
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain/library"
	"shelf/domain/moderation"
	"shelf/tests/testkit"
)

// fixture is what the measured operations read: a user whose library holds
// items, a group whose library holds as many with a member, an admin, a
// suspended list, and users to log in as.
type fixture struct {
	owner, member, admin account
	group                string
	// Cursors of page 1000 (20 a page) of the two libraries, newest first
	// and (the owner's) oldest first, and of a position 90% down the
	// suspended list.
	ownerPage1000, groupPage1000, ownerOldestPage1000, suspendedDeep string
	logins                                                           []account
}

// account is a user with a session.
type account struct {
	username, id, token string
}

const testPassword = "correct horse battery"

var seq atomic.Int64

// fresh returns a username and email nobody has.
func fresh() (string, string) {
	u := fmt.Sprintf("bench%d_%d", time.Now().UnixNano()%1e9, seq.Add(1))
	return u, u + "@example.org"
}

// call sends one request with httpClient (testkit.Call).
func call(method, url, token, body string, want int, out any) error {
	return testkit.Call(httpClient, method, url, token, body, want, out)
}

// httpClient keeps a connection per concurrent client.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}

// signup creates a user through the api and logs it in.
func signup(base string) (account, error) {
	u, e := fresh()
	if err := call(http.MethodPost, base+"/v1/users", "", fmt.Sprintf(`{"username":%q,"email":%q,"password":%q}`, u, e, testPassword), http.StatusCreated, nil); err != nil {
		return account{}, err
	}
	var s struct {
		Token string
		User  struct{ ID string }
	}
	err := call(http.MethodPost, base+"/v1/sessions", "", fmt.Sprintf(`{"login":%q,"password":%q}`, u, testPassword), http.StatusCreated, &s)
	return account{username: u, id: s.User.ID, token: s.Token}, err
}

// makeAdmin grants a user admin with `api admin grant`, as an operator would.
func makeAdmin(h *harness, a account) error {
	grant := exec.Command(h.api.Bin, "admin", "grant", a.username)
	grant.Env = h.api.Env
	if out, err := grant.CombinedOutput(); err != nil {
		return fmt.Errorf("admin grant: %v: %s", err, out)
	}
	return nil
}

// seed builds the fixture: libraries of items public items each, and
// suspensions suspended users over 24 monthly buckets.
func seed(h *harness, items, suspensions int) (*fixture, error) {
	f := &fixture{}
	var err error
	for _, a := range []*account{&f.owner, &f.member, &f.admin} {
		if *a, err = signup(h.api.Base); err != nil {
			return nil, err
		}
	}
	if err := makeAdmin(h, f.admin); err != nil {
		return nil, err
	}
	for range 16 {
		a, err := signup(h.api.Base)
		if err != nil {
			return nil, err
		}
		f.logins = append(f.logins, a)
	}
	var g struct{ ID string }
	name, _ := fresh()
	if err := call(http.MethodPost, h.api.Base+"/v1/groups", f.owner.token, fmt.Sprintf(`{"name":%q}`, "g"+name), http.StatusCreated, &g); err != nil {
		return nil, err
	}
	f.group = g.ID
	if err := call(http.MethodPut, h.api.Base+"/v1/groups/"+g.ID+"/members/"+f.member.id, f.owner.token, `{"role":"member"}`, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	s := h.db.Session.Session
	if err := seedItems(s, f.owner.id, items); err != nil {
		return nil, err
	}
	if f.ownerPage1000, f.ownerOldestPage1000, err = seedLibrary(s, f.owner.id, items); err != nil {
		return nil, err
	}
	if f.groupPage1000, _, err = seedLibrary(s, f.group, items); err != nil {
		return nil, err
	}
	f.suspendedDeep, err = seedSuspended(s, suspensions)
	return f, err
}

// inBatches writes rows in single-partition unlogged batches of 100, 16 at
// once.
func inBatches(s *gocql.Session, n int, stmt func(i int) (partition string, cql string, args []any)) error {
	byPartition := map[string][]int{}
	var order []string
	for i := range n {
		p, _, _ := stmt(i)
		if _, ok := byPartition[p]; !ok {
			order = append(order, p)
		}
		byPartition[p] = append(byPartition[p], i)
	}
	var chunks [][]int
	for _, p := range order {
		rows := byPartition[p]
		for len(rows) > 0 {
			k := min(100, len(rows))
			chunks = append(chunks, rows[:k])
			rows = rows[k:]
		}
	}
	work := make(chan []int)
	errs := make(chan error, len(chunks))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for chunk := range work {
				b := s.NewBatch(gocql.UnloggedBatch)
				for _, i := range chunk {
					_, cql, args := stmt(i)
					b.Query(cql, args...)
				}
				if err := s.ExecuteBatch(b); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, c := range chunks {
		work <- c
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// seedStart is the last change of the newest seeded item; item i's was i
// seconds before.
var seedStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// seededItem is the id, last change and name of seeded item i.
func seededItem(i int) (id string, at time.Time, name string) {
	return "c_" + seededID(i)[2:], seedStart.Add(-time.Duration(i) * time.Second), fmt.Sprint("item ", i)
}

// seedItems writes n public items' own rows (by, their creator), as they
// stand once created and shared: lean (two members), as shelf writes them.
// One partition each: written one at a time, 16 at once.
func seedItems(s *gocql.Session, by string, n int) error {
	return inBatches(s, n, func(i int) (string, string, []any) {
		id, at, name := seededItem(i)
		return id, `INSERT INTO content (id, name, description, visibility, link, created_by, created_at, last_modified, deleted, members, managers, version, lean) VALUES (?, ?, '', 'public', '', ?, ?, ?, false, 2, 1, 1, true)`,
			[]any{id, name, by, at, at}
	})
}

// seedLibrary writes n public items straight into principal's library and
// its membership index, lean as shelf writes them (item 0 newest; their
// own rows are seedItems'),
// and returns the cursors of page 1000 at 20 a page, newest first (the
// position after item 19 979) and oldest first (after the 19 980th
// oldest, in a run begun after the newest), or "" when the library is
// shorter.
func seedLibrary(s *gocql.Session, principal string, n int) (newest, oldest string, err error) {
	err = inBatches(s, n, func(i int) (string, string, []any) {
		id, at, name := seededItem(i)
		return "index", `INSERT INTO library_index (principal_id, content_id, role, version, last_modified, name, visibility, lean) VALUES (?, ?, 'viewer', 1, ?, ?, 'public', true) USING TIMESTAMP 1`,
			[]any{principal, id, at, name}
	})
	buckets := library.BucketsFor(library.VisibilityPublic)
	for _, bucket := range buckets {
		if err != nil {
			break
		}
		err = inBatches(s, n, func(i int) (string, string, []any) {
			id, at, name := seededItem(i)
			return bucket, `INSERT INTO library_by_principal (principal_id, bucket, last_modified, content_id, name, visibility, version, lean) VALUES (?, ?, ?, ?, ?, 'public', 1, true) USING TIMESTAMP 1`,
				[]any{principal, bucket, at, id, name}
		})
	}
	const before = 999*20 - 1
	if err != nil || n <= before+20 {
		return "", "", err
	}
	newestID, newestAt, _ := seededItem(before)
	oldestID, oldestAt, _ := seededItem(n - 1 - before)
	return library.Cursor{LastModified: newestAt, ContentID: newestID}.Encode(),
		library.Cursor{Order: library.OldestFirst, Until: seedStart.Add(time.Second), LastModified: oldestAt, ContentID: oldestID}.Encode(), nil
}

// seedSuspended fills the suspended list with n users over 24 monthly
// buckets and returns the cursor of a position 90% down it.
func seedSuspended(s *gocql.Session, n int) (string, error) {
	const buckets = 24
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	perBucket := max(n/buckets, 1)
	place := func(i int) (string, time.Time) {
		at := start.AddDate(0, -(i / perBucket), 0).Add(time.Duration(i%perBucket) * time.Minute)
		return moderation.BucketOf(at, moderation.BucketMonth), at
	}
	err := inBatches(s, n, func(i int) (string, string, []any) {
		bucket, at := place(i)
		return bucket, `INSERT INTO users_by_status (bucket, status, occurred_on, user_id, username, reason, actor) VALUES (?, 'suspended', ?, ?, ?, 'seeded', 'u_bench') USING TIMESTAMP 1`,
			[]any{bucket, at, seededID(i), fmt.Sprint("user", i)}
	})
	for i := 0; err == nil && i < n; i += perBucket {
		bucket, _ := place(i)
		err = s.Query(`INSERT INTO status_buckets (status, bucket) VALUES ('suspended', ?)`, bucket).Exec()
	}
	deep := n * 9 / 10
	bucket, at := place(deep)
	return moderation.Cursor{Bucket: bucket, SuspendedAt: at, UserID: seededID(deep)}.Encode(), err
}

// seededID is a well-formed user id made from i (base32 digits, padded).
func seededID(i int) string {
	const digits = "abcdefghijklmnopqrstuvwxyz234567"
	id := []byte("u_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	for p := len(id) - 1; i > 0; p-- {
		id[p] = digits[i%32]
		i /= 32
	}
	return string(id)
}
