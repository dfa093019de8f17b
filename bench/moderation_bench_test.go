package bench

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"shelf/domain/moderation"
)

// The suspended list of the benchmarks: 100 000 users over 24 monthly
// buckets, seeded straight into the list's tables (the list reads nothing
// else).
const (
	seededSuspensions = 100_000
	seededBuckets     = 24
)

var (
	seedOnce sync.Once
	seedErr  error
	adminTok string
	deepAt   moderation.Cursor // a position about 90% down the list
)

// seedSuspended fills the list and makes an admin session.
func seedSuspended(b *testing.B, h *harness) {
	b.Helper()
	seedOnce.Do(func() {
		s := h.db.Session.Session
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		perBucket := seededSuspensions / seededBuckets
		work := make(chan int, 256)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					month := i / perBucket
					at := start.AddDate(0, -month, 0).Add(time.Duration(i%perBucket) * time.Minute)
					bucket := moderation.BucketOf(at, moderation.BucketMonth)
					id := seededID(i)
					err := s.Query(`INSERT INTO users_by_status (bucket, status, occurred_on, user_id, username, reason, actor) VALUES (?, 'suspended', ?, ?, ?, 'seeded', 'u_bench') USING TIMESTAMP 1`,
						bucket, at, id, fmt.Sprint("user", i)).Exec()
					if err == nil && i%perBucket == 0 {
						err = s.Query(`INSERT INTO status_buckets (status, bucket) VALUES ('suspended', ?)`, bucket).Exec()
					}
					mu.Lock()
					if err != nil && seedErr == nil {
						seedErr = err
					}
					if i == seededSuspensions*9/10 {
						deepAt = moderation.Cursor{Bucket: bucket, SuspendedAt: at, UserID: id}
					}
					mu.Unlock()
				}
			}()
		}
		for i := 0; i < perBucket*seededBuckets; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		if seedErr != nil {
			return
		}
		adminTok, seedErr = makeAdmin(h)
	})
	if seedErr != nil {
		b.Fatal(seedErr)
	}
}

// makeAdmin logs a fresh user in and makes it an admin with `api admin
// grant`, as an operator would.
func makeAdmin(h *harness) (string, error) {
	a, err := session(h)
	if err != nil {
		return "", err
	}
	grant := exec.Command(h.api.bin, "admin", "grant", a.username)
	grant.Env = h.api.env
	if out, err := grant.CombinedOutput(); err != nil {
		return "", fmt.Errorf("admin grant: %v: %s", err, out)
	}
	return a.token, nil
}

// getAs fetches url as the admin and wants 200.
func getAs(url string) error { return getWith(adminTok, url) }

// BenchmarkSuspendedListDeepVsFirst: a page 90 000 items down the list
// (cursor) beside the first page, both through the API; goal: deep/first
// at most 1.5 (a page costs the same wherever it is).
func BenchmarkSuspendedListDeepVsFirst(b *testing.B) {
	h := setup(b)
	seedSuspended(b, h)
	first := h.api.base + "/v1/suspensions?limit=20"
	deepVsFirst(b, getAs, first, first+"&cursor="+deepAt.Encode())
}

// BenchmarkSuspendedListPage: the API's first page of 20 beside the raw
// slice of the newest bucket through gocql.
func BenchmarkSuspendedListPage(b *testing.B) {
	h := setup(b)
	seedSuspended(b, h)
	s := h.db.Session.Session
	bucket := moderation.BucketOf(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), moderation.BucketMonth)
	raw := func() error {
		iter := s.Query(`SELECT bucket, occurred_on, user_id, username, reason, actor, until FROM users_by_status WHERE bucket = ? AND status = 'suspended' LIMIT 20`, bucket).
			WithContext(context.Background()).Iter()
		n := 0
		for iter.Scan(new(string), new(time.Time), new(string), new(string), new(string), new(string), new(time.Time)) {
			n++
		}
		if err := iter.Close(); err != nil {
			return err
		}
		if n != 20 {
			return fmt.Errorf("raw slice returned %d rows", n)
		}
		return nil
	}
	url := h.api.base + "/v1/suspensions?limit=20"
	sideBySide(b, h, raw, func() error { return getAs(url) })
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
