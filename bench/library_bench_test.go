package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"shelf/domain"
	"shelf/domain/library"
)

// The library of the page benchmarks: 100 000 public items of one user,
// seeded straight into library_by_principal and its membership index.
const seededItems = 100_000

var (
	libOnce    sync.Once
	libErr     error
	libOwner   string // the library's principal
	libDeep    library.Cursor
	ownerToken string
)

// account is a fresh user with a session.
type account struct {
	username, id, token string
}

// session signs a fresh user up and logs it in.
func session(h *harness) (account, error) {
	u, e := fresh()
	if err := post(h.api.base+"/v1/users", fmt.Sprintf(`{"username":%q,"email":%q,"password":"correct horse battery"}`, u, e), http.StatusCreated); err != nil {
		return account{}, err
	}
	resp, err := httpClient.Post(h.api.base+"/v1/sessions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"login":%q,"password":"correct horse battery"}`, u)))
	if err != nil {
		return account{}, err
	}
	defer resp.Body.Close()
	var s struct {
		Token string
		User  struct{ ID string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.Token == "" {
		return account{}, fmt.Errorf("login: %d %v", resp.StatusCode, err)
	}
	return account{username: u, id: s.User.ID, token: s.Token}, nil
}

func seedLibrary(b *testing.B, h *harness) {
	b.Helper()
	libOnce.Do(func() {
		var a account
		a, libErr = session(h)
		if libErr != nil {
			return
		}
		libOwner, ownerToken = a.id, a.token
		s := h.db.Session.Session
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		work := make(chan int, 256)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					id := "c_" + seededID(i)[2:]
					lm := start.Add(-time.Duration(i) * time.Second)
					err := s.Query(`INSERT INTO library_index (principal_id, content_id, role, version, last_modified, name, visibility) VALUES (?, ?, 'viewer', 1, ?, ?, 'public') USING TIMESTAMP 1`,
						libOwner, id, lm, fmt.Sprint("item ", i)).Exec()
					for _, bucket := range library.BucketsFor(library.VisibilityPublic) {
						if err == nil {
							err = s.Query(`INSERT INTO library_by_principal (principal_id, bucket, last_modified, content_id, name, visibility, version) VALUES (?, ?, ?, ?, ?, 'public', 1) USING TIMESTAMP 1`,
								libOwner, bucket, lm, id, fmt.Sprint("item ", i)).Exec()
						}
					}
					mu.Lock()
					if err != nil && libErr == nil {
						libErr = err
					}
					if i == seededItems*9/10 {
						libDeep = library.Cursor{LastModified: lm, ContentID: id}
					}
					mu.Unlock()
				}
			}()
		}
		for i := 0; i < seededItems; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
	})
	if libErr != nil {
		b.Fatal(libErr)
	}
}

// getWith fetches url with a bearer token (or none) and wants 200.
func getWith(token, url string) error {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	return check(resp, err, url, http.StatusOK)
}

// BenchmarkLibraryDeepVsFirst: page 1 of a 100 000-item library beside a
// page 90 000 items deep, both through the API as the owner; goal:
// deep/first at most 1.5 (L5).
func BenchmarkLibraryDeepVsFirst(b *testing.B) {
	h := setup(b)
	seedLibrary(b, h)
	first := h.api.base + "/v1/users/" + libOwner + "/library?limit=20"
	deepVsFirst(b, func(url string) error { return getWith(ownerToken, url) }, first, first+"&cursor="+libDeep.Encode())
}

// BenchmarkLibraryPage: an anonymous API page of 20 (public bucket) beside
// the raw slice of the same 20 rows through gocql.
func BenchmarkLibraryPage(b *testing.B) {
	h := setup(b)
	seedLibrary(b, h)
	s := h.db.Session.Session
	raw := func() error {
		iter := s.Query(`SELECT last_modified, content_id, name, visibility, version FROM library_by_principal WHERE principal_id = ? AND bucket = 'public' LIMIT 20`, libOwner).Iter()
		n := 0
		for iter.Scan(new(time.Time), new(string), new(string), new(string), new(int)) {
			n++
		}
		if err := iter.Close(); err != nil {
			return err
		}
		if n != 20 {
			return fmt.Errorf("raw slice: %d rows", n)
		}
		return nil
	}
	url := h.api.base + "/v1/users/" + libOwner + "/library?limit=20"
	sideBySide(b, h, raw, func() error { return getWith("", url) })
}

// fanoutItem is an item of a fresh user shared (straight in the source of
// truth) with n principals.
func fanoutItem(b *testing.B, h *harness, n int) (contentID, token string, members []string) {
	b.Helper()
	a, err := session(h)
	if err != nil {
		b.Fatal(err)
	}
	token = a.token
	req, _ := http.NewRequest(http.MethodPost, h.api.base+"/v1/content", strings.NewReader(`{"name":"fan-out","visibility":"public"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var c struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	s := h.db.Session.Session
	members = make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range members {
		members[i] = domain.NewID(domain.UserIDPrefix)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_ = s.Query(`INSERT INTO content_members (content_id, principal_id, role) VALUES (?, ?, 'viewer') USING TIMESTAMP 1`, c.ID, members[i]).Exec()
		}()
	}
	wg.Wait()
	if err := s.Query(`UPDATE content SET members = ? WHERE id = ? IF version = 1`, n+1, c.ID).Exec(); err != nil {
		b.Fatal(err)
	}
	return c.ID, token, members
}

// rawFanout writes what the service writes for one update of a public item
// to every member: the index entry, then per bucket one batch (delete the
// old row, insert the new), the three at once; 16 members at once.
func rawFanout(s *gocql.Session, contentID string, members []string, version int, prevLM, lm time.Time) error {
	sem := make(chan struct{}, 16)
	errs := make(chan error, 4*len(members))
	var wg sync.WaitGroup
	ts := int64(version)
	for _, m := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := s.Query(`INSERT INTO library_index (principal_id, content_id, role, version, last_modified, name, visibility) VALUES (?, ?, 'viewer', ?, ?, 'raw', 'public') USING TIMESTAMP ?`,
				m, contentID, version, lm, ts).Exec()
			if err != nil {
				errs <- err
				return
			}
			// Then the three bucket batches at once, as the service does.
			var bw sync.WaitGroup
			for _, bucket := range library.BucketsFor(library.VisibilityPublic) {
				bw.Add(1)
				go func() {
					defer bw.Done()
					batch := s.NewBatch(gocql.UnloggedBatch)
					batch.Query(`DELETE FROM library_by_principal USING TIMESTAMP ? WHERE principal_id = ? AND bucket = ? AND last_modified = ? AND content_id = ?`, ts, m, bucket, prevLM, contentID)
					batch.Query(`INSERT INTO library_by_principal (principal_id, bucket, last_modified, content_id, name, visibility, version) VALUES (?, ?, ?, ?, 'raw', 'public', ?) USING TIMESTAMP ?`, m, bucket, lm, contentID, version, ts)
					if err := s.ExecuteBatch(batch); err != nil {
						errs <- err
					}
				}()
			}
			bw.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// BenchmarkFanout: member libraries updated per second for one update of a
// public item with 100, 1 000 and 10 000 members, through the API (the
// answer comes after the fan-out: the bench API runs with a sync limit of
// 20 000) beside gocql writing the same rows with the same concurrency.
// Write amplification: 4 partition writes per member (index + 3 buckets).
func BenchmarkFanout(b *testing.B) {
	h := setup(b)
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			contentID, token, members := fanoutItem(b, h, n)
			s := h.db.Session.Session
			var apiT, rawT time.Duration
			// The raw side writes a twin item of its own, so the two never
			// touch each other's rows.
			twin := domain.NewID(domain.ContentIDPrefix)
			version := 1
			prevLM := time.Now().UTC().Truncate(time.Millisecond)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				req, _ := http.NewRequest(http.MethodPatch, h.api.base+"/v1/content/"+contentID, strings.NewReader(fmt.Sprintf(`{"name":"v%d"}`, i)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := httpClient.Do(req)
				if err := check(resp, err, req.URL.String(), http.StatusOK); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				lm := prevLM.Add(time.Millisecond)
				version++
				if err := rawFanout(s, twin, members, version, prevLM, lm); err != nil {
					b.Fatal(err)
				}
				prevLM = lm
				rawT += time.Since(t1)
				apiT += t1.Sub(t0)
			}
			b.StopTimer()
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(n*b.N)/apiT.Seconds(), "api-libraries/s")
			b.ReportMetric(float64(n*b.N)/rawT.Seconds(), "raw-libraries/s")
			b.ReportMetric(float64(rawT)/float64(apiT), "api/raw-throughput")
			b.ReportMetric(4, "writes/member")
		})
	}
}
