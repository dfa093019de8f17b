//go:build storm

// Package storm runs the storm (docs/design/faults.md) against a real node
// of its own:
// rounds of concurrent, colliding signups, renames and password changes
// through the HTTP API while the Cassandra process is hung (SIGSTOP) for
// 2-8 s at random and resumed, over and over. Afterwards, past the lease:
// no two active accounts share a key, every active account's claims are
// committed and name it, every 201 signup logs in by both names, and no
// answer was a 5xx other than 503. `make storm` runs it (STORM_ROUNDS,
// default 40); it is not part of `make test` (minutes, and a hung node).
package storm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/internal/app"
	"shelf/internal/config"
	"shelf/internal/password"
	"shelf/tests/testkit"
	"shelf/tools/localcassandra"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const lease = 10 * time.Second

type client struct {
	base string
	http *http.Client
	mu   sync.Mutex
	// statuses counts answers by status.
	statuses map[int]int
	// failed are the answers that must not be: a 5xx other than 503, or
	// none (method, path, status, body).
	failed []string
}

// errorLog keeps the lines the app logs at error level (a 500's cause).
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (c *client) send(method, path, token string, body any) (int, []byte) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, c.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	status, out := 0, []byte(nil)
	if resp, err := c.http.Do(req); err == nil {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		status, out = resp.StatusCode, buf.Bytes()
	}
	c.mu.Lock()
	c.statuses[status]++
	if status >= 500 && status != http.StatusServiceUnavailable || status == 0 {
		c.failed = append(c.failed, fmt.Sprintf("%s %s: %d %s", method, path, status, out))
	}
	c.mu.Unlock()
	return status, out
}

// account is what the storm knows of an account it created.
type account struct {
	id, token string
	signedUp  string   // the username and email it signed up with
	passwords []string // every password it may have now
}

func TestStorm(t *testing.T) {
	rounds := 40
	if s := os.Getenv("STORM_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	l, err := testkit.Launcher()
	if err != nil {
		t.Fatal(err)
	}
	l.DataDir = t.TempDir()
	node := localcassandra.Node{Name: "storm", Address: "127.0.0.7", Cluster: "shelf-storm",
		Seeds: []string{"127.0.0.7"}, Token: "0", Durable: true}
	ctx := context.Background()
	if err := l.Start(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop(node) })
	db := testkit.NewDBOn(t, []string{node.Address})
	env := map[string]string{"SHELF_ARGON2_MEMORY_KIB": "1024", "SHELF_ARGON2_TIME": "1",
		"SHELF_RATE_LIMIT_PER_MINUTE": "0", "SHELF_CLAIM_LEASE": lease.String()}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	errs := &errorLog{}
	a, err := app.New(cfg, zerolog.New(errs).Level(zerolog.ErrorLevel), db.Session, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Router)
	t.Cleanup(srv.Close)
	c := &client{base: srv.URL, http: &http.Client{Timeout: 30 * time.Second}, statuses: map[int]int{}}

	// The hanger: SIGSTOP for 2-8 s, SIGCONT, 1-3 s of peace, again.
	stop := make(chan struct{})
	hangs := 0
	var hung sync.WaitGroup
	hung.Add(1)
	go func() {
		defer hung.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(1000+rand.IntN(2000)) * time.Millisecond):
			}
			if err := l.Signal(node, syscall.SIGSTOP); err != nil {
				t.Error(err)
				return
			}
			hangs++
			select {
			case <-stop:
			case <-time.After(time.Duration(2000+rand.IntN(6000)) * time.Millisecond):
			}
			if err := l.Signal(node, syscall.SIGCONT); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	var mu sync.Mutex
	var accounts []*account
	started := time.Now()
	for round := 0; round < rounds; round++ {
		names := make([]string, 4)
		for i := range names {
			names[i] = fmt.Sprintf("s%dn%d", round, i)
		}
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, e := names[i%4], names[i/4]+"@example.org"
				status, body := c.send(http.MethodPost, "/v1/users", "", map[string]string{"username": u, "email": e, "password": "storm password 1"})
				if status != http.StatusCreated {
					return
				}
				var created struct{ ID string }
				_ = json.Unmarshal(body, &created)
				acc := &account{id: created.ID, signedUp: u + " " + e, passwords: []string{"storm password 1"}}
				if status, body := c.send(http.MethodPost, "/v1/sessions", "", map[string]string{"login": u, "password": "storm password 1"}); status == http.StatusCreated {
					var s struct {
						Token string
						User  struct{ ID string }
					}
					_ = json.Unmarshal(body, &s)
					acc.token = s.Token
					if s.User.ID != acc.id {
						t.Errorf("U1: signup %s answered 201 with %s / %s, and a login as %s right after opened a session of %s", acc.id, u, e, u, s.User.ID)
					}
				}
				mu.Lock()
				accounts = append(accounts, acc)
				mu.Unlock()
			}()
		}
		// Renames and password changes of earlier accounts, racing.
		mu.Lock()
		earlier := append([]*account(nil), accounts...)
		mu.Unlock()
		for j := 0; j < 4 && len(earlier) > 0; j++ {
			acc := earlier[rand.IntN(len(earlier))]
			if acc.token == "" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if j%2 == 0 {
					// A new username takes the current password (U9).
					mu.Lock()
					current := acc.passwords[len(acc.passwords)-1]
					mu.Unlock()
					c.send(http.MethodPatch, "/v1/users/"+acc.id, acc.token,
						map[string]string{"username": fmt.Sprintf("r%dn%d", round, rand.IntN(3)), "currentPassword": current})
					return
				}
				next := fmt.Sprintf("storm password %d", round+2)
				mu.Lock()
				current := acc.passwords[len(acc.passwords)-1]
				acc.passwords = append(acc.passwords, next) // it may apply whatever the answer
				mu.Unlock()
				c.send(http.MethodPut, "/v1/users/"+acc.id+"/password", acc.token,
					map[string]string{"currentPassword": current, "newPassword": next})
			}()
		}
		wg.Wait()
		// Rounds spread over the hangs: some land in one, some around one.
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
	}
	close(stop)
	hung.Wait()
	_ = l.Signal(node, syscall.SIGCONT)
	t.Logf("%d rounds in %.0fs, node hung %d times; answers by status: %v", rounds, time.Since(started).Seconds(), hangs, c.statuses)
	time.Sleep(lease + 2*time.Second) // held attempts land, leases run out

	for _, f := range c.failed {
		t.Errorf("an answer that must not be: %s", f)
	}
	if len(c.failed) > 0 {
		errs.mu.Lock()
		t.Logf("the app's error log:\n%s", strings.Join(errs.lines, ""))
		errs.mu.Unlock()
	}
	checkTables(t, db)
	byID := map[string][]*account{}
	for _, acc := range accounts {
		byID[acc.id] = append(byID[acc.id], acc)
	}
	for id, accs := range byID {
		if len(accs) > 1 {
			for _, a := range accs {
				t.Errorf("U1: %s answered 201 to more than one signup: %s (passwords %v)", id, a.signedUp, a.passwords)
			}
		}
	}
	// Each account logs in by both names with the password it has now:
	// the one of those it may have (every change it was sent, applied or
	// not) that its stored hash verifies. Trying them all in turn would
	// meet the login's throttle: five wrong passwords and the sixth try,
	// the right one, is refused (429), as it must be.
	hasher := password.New(password.Params{MemoryKiB: 1024, Time: 1, Threads: 1}, 0)
	for _, acc := range accounts {
		var u struct{ Username, Email, PasswordHash string }
		if err := db.Session.ContextQuery(ctx, "SELECT username, email, password_hash FROM users WHERE id = ?", nil).Bind(acc.id).GetRelease(&u); err != nil {
			t.Errorf("201 signup %s: %v", acc.id, err)
			continue
		}
		current := ""
		for _, pw := range acc.passwords {
			if ok, _, err := hasher.Verify(ctx, pw, u.PasswordHash); err == nil && ok {
				current = pw
			}
		}
		if current == "" {
			t.Errorf("201 signup %s has a password it was never given (it may have %v)", acc.id, acc.passwords)
			continue
		}
		for _, login := range []string{u.Username, u.Email} {
			if status, body := c.send(http.MethodPost, "/v1/sessions", "", map[string]string{"login": login, "password": current}); status != http.StatusCreated {
				t.Errorf("U3: 201 signup %s cannot log in as %q with its password: %d %s", acc.id, login, status, body)
			}
		}
	}
	t.Logf("%d accounts answered 201 and log in by both names", len(accounts))
}

// checkTables: no two active accounts share a key; every active account's
// claims are committed and name it.
func checkTables(t *testing.T, db *testkit.DB) {
	ctx := context.Background()
	var users []struct {
		ID, UsernameKey, EmailKey, Status string
	}
	if err := db.Session.ContextQuery(ctx, "SELECT id, username_key, email_key, status FROM users", nil).SelectRelease(&users); err != nil {
		t.Fatal(err)
	}
	claims := map[string]struct{ UserID, State string }{}
	for _, table := range []string{"usernames", "emails"} {
		var rows []struct{ Key, UserID, State string }
		if err := db.Session.ContextQuery(ctx, "SELECT key, user_id, state FROM "+table, nil).SelectRelease(&rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			claims[table+"/"+r.Key] = struct{ UserID, State string }{r.UserID, r.State}
		}
	}
	held := map[string]string{}
	active := 0
	for _, u := range users {
		if u.Status != "active" {
			continue
		}
		active++
		for _, key := range []string{"usernames/" + u.UsernameKey, "emails/" + u.EmailKey} {
			if other, ok := held[key]; ok {
				t.Errorf("U1: %s is held by %s and %s", key, other, u.ID)
			}
			held[key] = u.ID
			if c := claims[key]; c.UserID != u.ID || c.State != "committed" {
				t.Errorf("U1: %s holds %s, whose claim is %+v", u.ID, key, c)
			}
		}
	}
	t.Logf("%d active accounts, %d claims: no key held twice, every held key committed to its holder", active, len(claims))
}
