package bench

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

var seq atomic.Int64

// fresh returns a username and email nobody has.
func fresh() (string, string) {
	n := seq.Add(1)
	u := fmt.Sprintf("bench%d_%d", time.Now().UnixNano()%1e9, n)
	return u, u + "@example.org"
}

// rawSignup runs the statements of a signup straight through gocql, in the
// same three phases the service uses: [claim username ∥ claim email ∥
// create pending account], [commit ∥ commit], activate.
func rawSignup(s *gocql.Session) func() error {
	return func() error {
		u, e := fresh()
		id := fmt.Sprintf("u_raw%d", seq.Add(1))
		now := time.Now().UTC()
		cas := func(stmt string, args ...any) error {
			applied, err := s.Query(stmt, args...).RetryPolicy(nil).MapScanCAS(map[string]any{})
			if err == nil && !applied {
				err = fmt.Errorf("not applied: %s", stmt)
			}
			return err
		}
		phase := func(fns ...func() error) error {
			errs := make([]error, len(fns))
			var wg sync.WaitGroup
			for i, fn := range fns {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = fn() }()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		}
		if err := phase(
			func() error {
				return cas(`INSERT INTO usernames (key, user_id, op, state, claimed_at) VALUES (?, ?, ?, 'pending', ?) IF NOT EXISTS USING TTL 30`, u, id, id, now)
			},
			func() error {
				return cas(`INSERT INTO emails (key, user_id, op, state, claimed_at) VALUES (?, ?, ?, 'pending', ?) IF NOT EXISTS USING TTL 30`, e, id, id, now)
			},
			func() error {
				return cas(`INSERT INTO users (id, username, username_key, email, email_key, display_name, password_hash, roles, status, created_at, updated_at, version, write_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, 1, ?) IF NOT EXISTS USING TTL 30`,
					id, u, u, e, e, u, "$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$aGFzaA", nil, now, now, "w1")
			},
		); err != nil {
			return err
		}
		if err := phase(
			func() error {
				return cas(`UPDATE usernames USING TTL 0 SET user_id = ?, op = ?, state = 'committed', claimed_at = ? WHERE key = ? IF user_id = ? AND op = ?`, id, id, now, u, id, id)
			},
			func() error {
				return cas(`UPDATE emails USING TTL 0 SET user_id = ?, op = ?, state = 'committed', claimed_at = ? WHERE key = ? IF user_id = ? AND op = ?`, id, id, now, e, id, id)
			},
		); err != nil {
			return err
		}
		return cas(`UPDATE users USING TTL 0 SET username = ?, username_key = ?, email = ?, email_key = ?, display_name = ?, password_hash = ?, roles = ?, status = 'active', created_at = ?, updated_at = ?, version = 1, write_id = ? WHERE id = ? IF status = 'pending'`,
			u, u, e, e, u, "$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$aGFzaA", nil, now, now, "w2", id)
	}
}

// apiSignup signs up a fresh user through the API.
func apiSignup(h *harness) func() error {
	return func() error {
		u, e := fresh()
		body := fmt.Sprintf(`{"username":%q,"email":%q,"password":"correct horse battery"}`, u, e)
		return post(h.api.base+"/v1/users", body, http.StatusCreated)
	}
}

// BenchmarkSignup: a whole signup through the API (argon2 set cheap) beside
// the same lightweight transactions through gocql.
func BenchmarkSignup(b *testing.B) {
	h := setup(b)
	sideBySide(b, h, rawSignup(h.db.Session.Session), apiSignup(h))
}

// BenchmarkSignupParallel is the same with 16 concurrent callers.
func BenchmarkSignupParallel(b *testing.B) {
	h := setup(b)
	sideBySideParallel(b, h, 16, rawSignup(h.db.Session.Session), apiSignup(h))
}

// BenchmarkLookupByUsername: the login lookup without the password hash
// (GET /v1/users/by-username/{u}: claim read, account read) beside the two
// reads through gocql.
func BenchmarkLookupByUsername(b *testing.B) {
	h := setup(b)
	u, _ := fresh()
	if err := post(h.api.base+"/v1/users", fmt.Sprintf(`{"username":%q,"email":"%s@example.org","password":"correct horse battery"}`, u, u), http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	s := h.db.Session.Session
	raw := func() error {
		var id, state string
		if err := s.Query(`SELECT user_id, state FROM usernames WHERE key = ?`, u).Scan(&id, &state); err != nil {
			return err
		}
		var name, status string
		return s.Query(`SELECT username, status FROM users WHERE id = ?`, id).Scan(&name, &status)
	}
	url := h.api.base + "/v1/users/by-username/" + u
	sideBySide(b, h, raw, func() error { return get(url, http.StatusOK) })
}

// BenchmarkLWTvsPlainInsert documents what a lightweight transaction costs
// on this node (Paxos v2) against a plain insert of the same row: p50 and
// p99 of each, and the ratio of the medians.
func BenchmarkLWTvsPlainInsert(b *testing.B) {
	h := setup(b)
	s := h.db.Session.Session
	ctx := context.Background()
	lwt := make([]time.Duration, 0, b.N)
	plain := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k1, _ := fresh()
		k2, _ := fresh()
		t0 := time.Now()
		if _, err := s.Query(`INSERT INTO usernames (key, user_id, op, state) VALUES (?, 'u', 'o', 'pending') IF NOT EXISTS USING TTL 60`, k1).
			WithContext(ctx).MapScanCAS(map[string]any{}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		// A plain write to a scratch key of the same table, for comparison
		// only: the service itself never writes claims without a condition.
		if err := s.Query(`INSERT INTO usernames (key, user_id, op, state) VALUES (?, 'u', 'o', 'bench') USING TTL 60`, k2).
			WithContext(ctx).Exec(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		lwt = append(lwt, t1.Sub(t0))
		plain = append(plain, t2.Sub(t1))
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(q*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(p(lwt, 0.5), "lwt-p50-µs")
	b.ReportMetric(p(lwt, 0.99), "lwt-p99-µs")
	b.ReportMetric(p(plain, 0.5), "plain-p50-µs")
	b.ReportMetric(p(plain, 0.99), "plain-p99-µs")
	b.ReportMetric(p(lwt, 0.5)/p(plain, 0.5), "lwt/plain-p50")
}
