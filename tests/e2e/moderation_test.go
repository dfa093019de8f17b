//go:build integration

package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/tests/testkit"
)

func TestSuspendAndUnsuspend(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, session := m.member(t)
	other, otherSession := m.member(t)

	// Only admins; anonymous callers 401.
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/v1/users/" + u.ID + "/suspension", map[string]any{"reason": "spam"}},
		{http.MethodGet, "/v1/users/" + u.ID + "/suspension", nil},
		{http.MethodDelete, "/v1/users/" + u.ID + "/suspension", nil},
		{http.MethodGet, "/v1/suspensions", nil},
	} {
		for _, tc := range []struct {
			who    string
			status int
		}{{"member", http.StatusForbidden}, {"anonymous", http.StatusUnauthorized}} {
			client := otherSession
			if tc.who == "anonymous" {
				client = m.api
			}
			var r = client.Do(c.method, c.path, "", nil)
			if c.body != nil {
				r = client.Send(c.method, c.path, c.body)
			}
			if r.StatusCode != tc.status {
				t.Errorf("%s %s as %s: %d %s", c.method, c.path, tc.who, r.StatusCode, r.Body)
			}
		}
	}

	// Validation.
	for _, c := range []struct {
		name  string
		id    string
		body  map[string]any
		field string
	}{
		{"empty reason", u.ID, map[string]any{"reason": "  "}, "reason"},
		{"long reason", u.ID, map[string]any{"reason": strings.Repeat("r", 501)}, "reason"},
		{"past until", u.ID, map[string]any{"reason": "x", "until": time.Now().Add(-time.Minute).Format(time.RFC3339)}, "until"},
		{"self", m.id, map[string]any{"reason": "x"}, "userId"},
	} {
		r := m.admin.Send(http.MethodPost, "/v1/users/"+c.id+"/suspension", c.body)
		if r.StatusCode != http.StatusBadRequest || len(r.Problem(t).Errors) == 0 || r.Problem(t).Errors[0].Field != c.field {
			t.Errorf("%s: %d %s", c.name, r.StatusCode, r.Body)
		}
	}
	if r := m.suspend("u_aaaaaaaaaaaaaaaaaaaaaaaaaa", "x"); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown user: %d", r.StatusCode)
	}

	r := m.suspend(u.ID, "posting spam")
	var s suspensionBody
	r.JSON(t, &s)
	if r.StatusCode != http.StatusCreated || s.UserID != u.ID || s.Username != u.Username || s.SuspendedBy != m.id || s.Reason != "posting spam" {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	if r := m.suspend(u.ID, "again"); r.StatusCode != http.StatusConflict || r.Problem(t).Code != "already_suspended" {
		t.Fatalf("second suspend: %d %s", r.StatusCode, r.Body)
	}
	// S3: the session dies at once; login is refused only with the right password.
	if r := session.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("session after suspension: %d", r.StatusCode)
	}
	if r := login(m.api, u.Username, "wrong password!"); r.StatusCode != http.StatusUnauthorized || r.Problem(t).Code != "invalid_credentials" {
		t.Fatalf("wrong password of a suspended user: %d %s", r.StatusCode, r.Body)
	}
	r = login(m.api, u.Username, testPassword)
	if r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "suspended" || !strings.Contains(string(r.Body), `"suspendedAt"`) ||
		!strings.Contains(string(r.Body), `"reason":"posting spam"`) {
		t.Fatalf("login of a suspended user: %d %s, want suspendedAt and the reason", r.StatusCode, r.Body)
	}
	// Only the admin learns of the suspension: strangers, anonymous or
	// not, see the account without a status (S3).
	_, stranger := m.member(t)
	for _, c := range []struct {
		name string
		api  *testkit.API
		want string
	}{{"anonymous", m.api, ""}, {"another member", stranger, ""}, {"an admin", m.admin, "suspended"}} {
		for _, path := range []string{"/v1/users/" + u.ID, "/v1/users/by-username/" + u.Username} {
			r := c.api.Get(path)
			var viewed userBody
			r.JSON(t, &viewed)
			if r.StatusCode != http.StatusOK || viewed.Status != c.want || (c.want == "" && strings.Contains(string(r.Body), `"status"`)) {
				t.Fatalf("%s reads %s of a suspended user: %d %s", c.name, path, r.StatusCode, r.Body)
			}
		}
	}
	var got suspensionBody
	if r := m.admin.Get("/v1/users/" + u.ID + "/suspension"); r.StatusCode != http.StatusOK {
		t.Fatalf("get suspension: %d", r.StatusCode)
	} else {
		r.JSON(t, &got)
	}
	if !got.SuspendedAt.Equal(s.SuspendedAt) {
		t.Fatalf("get suspension %+v, suspended %+v", got, s)
	}
	if list := m.listAll(t, 10); len(list) != 1 || list[0].UserID != u.ID {
		t.Fatalf("list %+v", list)
	}
	if r := m.admin.Get("/v1/users/" + other.ID + "/suspension"); r.StatusCode != http.StatusNotFound || r.Problem(t).Code != "not_suspended" {
		t.Fatalf("suspension of an active user: %d %s", r.StatusCode, r.Body)
	}
	agreement(t, m.db)

	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend: %d %s", r.StatusCode, r.Body)
	}
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNotFound || r.Problem(t).Code != "not_suspended" {
		t.Fatalf("second unsuspend: %d %s", r.StatusCode, r.Body)
	}
	mustLogin(t, m.api, u.Username)
	if list := m.listAll(t, 10); len(list) != 0 {
		t.Fatalf("list after unsuspend %+v", list)
	}
	if r := m.admin.Get("/v1/suspensions?limit=0"); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("limit 0: %d", r.StatusCode)
	}
	if r := m.admin.Get("/v1/suspensions?cursor=bogus"); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad cursor: %d", r.StatusCode)
	}
	if r := m.admin.Get("/v1/suspensions?limit="); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty limit: %d", r.StatusCode)
	}
	// Who may not list hears that before anything about the cursor.
	if r := m.api.Get("/v1/suspensions?cursor=bogus"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous, bad cursor: %d", r.StatusCode)
	}
	if r := session.Get("/v1/suspensions?cursor=bogus"); r.StatusCode != http.StatusUnauthorized && r.StatusCode != http.StatusForbidden {
		t.Fatalf("non-admin, bad cursor: %d", r.StatusCode)
	}
	agreement(t, m.db)
}

// TestConcurrentSuspensionsOfOneUser: 32 at once, exactly one 201 (S1).
func TestConcurrentSuspensionsOfOneUser(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, _ := m.member(t)
	codes := make([]int, 32)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = m.suspend(u.ID, "race").StatusCode
		}()
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
		default:
			t.Errorf("status %d", c)
		}
	}
	if created != 1 {
		t.Fatalf("%d suspensions answered 201", created)
	}
	agreement(t, m.db)
}

// TestSuspendUnsuspendStorms: many goroutines suspend and unsuspend the
// same users; after every round each account row, its reverse lookup and
// its list row agree, and the bucket index holds exactly the buckets with
// rows (S2, agreement).
func TestSuspendUnsuspendStorms(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	ids := make([]string, 4)
	for i := range ids {
		u, _ := m.member(t)
		ids[i] = u.ID
	}
	for round := 0; round < 10; round++ {
		var wg sync.WaitGroup
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := ids[(g+round)%len(ids)]
				var r = m.unsuspend(id)
				if g%2 == 0 {
					r = m.suspend(id, "storm")
				}
				switch r.StatusCode {
				case http.StatusCreated, http.StatusNoContent, http.StatusConflict, http.StatusNotFound:
				default:
					t.Errorf("round %d: %d %s", round, r.StatusCode, r.Body)
				}
			}()
		}
		wg.Wait()
		agreement(t, m.db)
		if t.Failed() {
			t.Fatalf("records disagree after round %d", round)
		}
	}
}

// TestSuspensionEnds: an ended suspension no longer blocks login, and the
// sweeper lifts it. The suspension lasts long enough for the suspend and
// the login during it to fit under -race on two busy cores.
func TestSuspensionEnds(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, _ := m.member(t)
	until := time.Now().Add(5 * time.Second).UTC()
	r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]any{"reason": "cool off", "until": until.Format(time.RFC3339Nano)})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	r = login(m.api, u.Username, testPassword)
	if r.StatusCode != http.StatusForbidden || !strings.Contains(string(r.Body), `"until"`) {
		t.Fatalf("login during: %d %s", r.StatusCode, r.Body)
	}
	time.Sleep(time.Until(until) + 200*time.Millisecond)
	mustLogin(t, m.api, u.Username)
	lifted, err := m.app.Moderation.SweepExpired(context.Background(), 100)
	if err != nil || lifted != 1 {
		t.Fatalf("sweep lifted %d, %v", lifted, err)
	}
	if list := m.listAll(t, 10); len(list) != 0 {
		t.Fatalf("list after the sweep %+v", list)
	}
	var viewed userBody
	m.admin.Get("/v1/users/"+u.ID).JSON(t, &viewed)
	if viewed.Status != "active" {
		t.Fatalf("status after the sweep %q", viewed.Status)
	}
	if lifted, err := m.app.Moderation.SweepExpired(context.Background(), 100); err != nil || lifted != 0 {
		t.Fatalf("second sweep lifted %d, %v", lifted, err)
	}
	agreement(t, m.db)
}

// TestLoginRacingASuspension: logins running while the user is suspended
// never leave a working session behind (S3).
func TestLoginRacingASuspension(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for round := 0; round < 5; round++ {
		u, _ := m.member(t)
		var tokens []string
		var mu sync.Mutex
		r := suspendWhile(m, u.ID, func() bool {
			r := login(m.api, u.Username, testPassword)
			if r.StatusCode == http.StatusCreated {
				var s sessionBody
				r.JSON(t, &s)
				mu.Lock()
				tokens = append(tokens, s.Token)
				mu.Unlock()
			}
			return true
		})
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("suspend: %d", r.StatusCode)
		}
		for _, tok := range tokens {
			if r := m.api.As(tok).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("round %d: a session of a suspended user works (%d of %d tokens)", round, r.StatusCode, len(tokens))
			}
		}
	}
}

// TestAUserSigningOutOverAndOverIsStillSuspended (attackers are users
// too), on the node: a member signs out everywhere else from four clients
// at once, without a pause, while an admin suspends him, five times. Each
// sign-out moves the account's version, which the suspension's
// compare-and-set is on; once a round lost, the member's changes give way
// (409 concurrent_change with Retry-After), so every suspension answers
// 201 and no session of the member works after it.
func TestAUserSigningOutOverAndOverIsStillSuspended(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	for round := 0; round < 5; round++ {
		u, member := m.member(t)
		var went, held atomic.Int64
		r := suspendWhile(m, u.ID, func() bool {
			r := member.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions?keep=current", "", nil)
			switch {
			case r.StatusCode == http.StatusNoContent:
				went.Add(1)
			case r.StatusCode == http.StatusConflict && r.Header.Get("Retry-After") != "" && strings.Contains(string(r.Body), "admin"):
				held.Add(1)
			case r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden:
				return false // suspended: the session ended
			}
			return true
		})
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("round %d: the suspension while the member signs out over and over: %d %s (his sign-outs: %d went, %d held back)",
				round, r.StatusCode, r.Body, went.Load(), held.Load())
		}
		if got := member.Get("/v1/me"); got.StatusCode != http.StatusUnauthorized {
			t.Fatalf("round %d: the member's session after his suspension: %d", round, got.StatusCode)
		}
		t.Logf("round %d: the member's sign-outs: %d went, %d held back", round, went.Load(), held.Load())
	}
}

// suspendWhile suspends user id while four clients run do over and over
// (from 50 ms before, until the suspension answered or do says to stop),
// and answers the suspension's answer once they stopped.
func suspendWhile(m *moderators, id string, do func() bool) *testkit.Response {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !do() {
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	r := m.suspend(id, "race")
	close(stop)
	wg.Wait()
	return r
}
