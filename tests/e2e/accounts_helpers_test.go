//go:build integration

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"shelf/tests/testkit"
)

// userBody is the User schema as tests read it.
type userBody struct {
	ID          string   `json:"id"`
	Username    string   `json:"username"`
	DisplayName string   `json:"displayName"`
	Email       string   `json:"email"`
	Status      string   `json:"status"`
	Roles       []string `json:"roles"`
}

// sessionBody is the Session schema as tests read it.
type sessionBody struct {
	Token     string   `json:"token"`
	ExpiresAt string   `json:"expiresAt"`
	User      userBody `json:"user"`
}

const testPassword = "correct horse battery"

var uniq atomic.Int64

// name returns a fresh name with prefix, unique in the test process.
func name(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, uniq.Add(1))
}

func signup(api *testkit.API, username, email string) *testkit.Response {
	return api.Send(http.MethodPost, "/v1/users", map[string]string{
		"username": username, "email": email, "password": testPassword,
	})
}

// mustSignup signs up and fails the test unless it answers 201.
func mustSignup(t *testing.T, api *testkit.API, username, email string) userBody {
	t.Helper()
	r := signup(api, username, email)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("signup %s/%s: %d %s", username, email, r.StatusCode, r.Body)
	}
	var u userBody
	r.JSON(t, &u)
	return u
}

// newUser signs up a fresh user named after prefix and returns it with a
// client logged in as it.
func newUser(t *testing.T, api *testkit.API, prefix string) (userBody, *testkit.API) {
	t.Helper()
	n := name(prefix)
	u := mustSignup(t, api, n, n+"@example.org")
	return u, api.As(mustLogin(t, api, n).Token)
}

func login(api *testkit.API, login, password string) *testkit.Response {
	return api.Send(http.MethodPost, "/v1/sessions", map[string]string{"login": login, "password": password})
}

// mustLogin logs in and returns the session, failing unless it answers 201.
func mustLogin(t *testing.T, api *testkit.API, loginName string) sessionBody {
	t.Helper()
	r := login(api, loginName, testPassword)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("login %s: %d %s", loginName, r.StatusCode, r.Body)
	}
	var s sessionBody
	r.JSON(t, &s)
	return s
}

// claimRow is a row of a claim table, read straight from Cassandra.
type claimRow struct {
	Key    string
	UserID string
	Op     string
	State  string
}

// allClaims reads a whole claim table of the test's keyspace.
func allClaims(t *testing.T, db *testkit.DB, table string) []claimRow {
	t.Helper()
	var rows []claimRow
	err := db.Session.ContextQuery(context.Background(), "SELECT key, user_id, op, state FROM "+table, nil).SelectRelease(&rows)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// userRow is the part of a users row the tests check.
type userRow struct {
	ID          string
	UsernameKey string
	EmailKey    string
	Status      string
	// PendingEmailKey and RecoveryEmailKey are emails the account holds
	// beside its own (docs/design/email-change.md): one asked for, one a
	// change replaced.
	PendingEmailKey  string
	RecoveryEmailKey string
	// HeldUsernameKey is a username the owner's rename left, held for the
	// account (docs/design/renames.md).
	HeldUsernameKey string
}

// allUsers reads the whole users table of the test's keyspace.
func allUsers(t *testing.T, db *testkit.DB) map[string]userRow {
	t.Helper()
	var rows []userRow
	err := db.Session.ContextQuery(context.Background(), "SELECT id, username_key, email_key, status, pending_email_key, recovery_email_key, held_username_key FROM users", nil).SelectRelease(&rows)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]userRow{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

// checkClaimsConsistent asserts U1/U2 on the whole keyspace: every claim
// is committed and owned by an active account that holds exactly that key
// (for an email: its own, or the one it asks for or holds for a revert;
// for a username: its own, or the one its rename left),
// and every active account's username, email and pending email are
// claimed by it; it returns the number of active accounts. A committed
// claim whose account row is gone (a signup that died before activation)
// passes: freeDeadClaims checks those.
func checkClaimsConsistent(t *testing.T, db *testkit.DB) (accounts int) {
	t.Helper()
	users := allUsers(t, db)
	for _, kind := range []struct{ table, field string }{{"usernames", "username"}, {"emails", "email"}} {
		claimed := map[string]bool{}
		for _, c := range allClaims(t, db, kind.table) {
			u, ok := users[c.UserID]
			switch {
			case !ok && c.State == "committed":
				// A signup that died before activation: its account expired
				// with the lease; the next claimant takes the key over (U4,
				// checked by freeDeadClaims where a test can leave these).
			case c.State != "committed":
				t.Errorf("%s %q is still %s (owner %s)", kind.table, c.Key, c.State, c.UserID)
			case !ok || u.Status != "active":
				t.Errorf("%s %q is held by %s, which is not an active account (%+v)", kind.table, c.Key, c.UserID, u)
			case (kind.field == "username" && u.UsernameKey != c.Key && u.HeldUsernameKey != c.Key) ||
				(kind.field == "email" && u.EmailKey != c.Key && u.PendingEmailKey != c.Key && u.RecoveryEmailKey != c.Key):
				t.Errorf("%s %q is held by %s, whose %s is something else", kind.table, c.Key, c.UserID, kind.field)
			}
			claimed[c.UserID+"/"+c.Key] = true
		}
		for _, u := range users {
			if u.Status != "active" {
				continue
			}
			keys := []string{u.UsernameKey}
			if kind.field == "email" {
				keys = []string{u.EmailKey, u.PendingEmailKey}
			}
			for _, key := range keys {
				if key != "" && !claimed[u.ID+"/"+key] {
					t.Errorf("active account %s holds %s %q without a claim", u.ID, kind.field, key)
				}
			}
		}
	}
	for _, u := range users {
		if u.Status == "active" {
			accounts++
		}
	}
	return accounts
}

// freeDeadClaims asserts U4 for keys left committed by signups that died
// before activation (their account expired): each is free for the next
// signup, which takes it over.
func freeDeadClaims(t *testing.T, api *testkit.API, db *testkit.DB) (freed int) {
	t.Helper()
	for _, table := range []string{"usernames", "emails"} {
		// Read per table: the heirs of the usernames are new accounts whose
		// emails the second pass must not take for dead signups.
		users := allUsers(t, db)
		for _, c := range allClaims(t, db, table) {
			if _, ok := users[c.UserID]; ok {
				continue
			}
			u, e := name("heir"), name("heir")+"@example.org"
			if table == "usernames" {
				u = c.Key
			} else {
				e = c.Key
			}
			if r := signup(api, u, e); r.StatusCode != http.StatusCreated {
				t.Errorf("%s %q, held by the dead signup %s, is not free: %d %s", table, c.Key, c.UserID, r.StatusCode, r.Body)
			}
			freed++
		}
	}
	return freed
}

// burst runs send(0..n-1) on n goroutines released at the same moment, so
// the requests really race, and returns their answers in order.
func burst(n int, send func(i int) *testkit.Response) []*testkit.Response {
	out := make([]*testkit.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = send(i)
		}()
	}
	close(start)
	wg.Wait()
	return out
}
