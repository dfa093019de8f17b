//go:build integration

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gocql/gocql"

	"shelf/tests/faultinject"
)

// An admin's actions on another account's sessions are audited, before
// they act (docs/design/account-audit.md), and admins do not suspend
// each other (docs/design/reauthentication.md).

// TestAuditRecordsAdminSessionActions: an admin listing a user's
// sessions, ending one and ending all leaves three entries in the user's
// audit, the admin as actor; the user's own list and revocation leave
// none, nor does the admin's of their own sessions. Fails without the
// entries (the audit stayed empty).
func TestAuditRecordsAdminSessionActions(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, self := m.member(t)
	second := m.api.As(mustLogin(t, m.api, u.Username).Token)
	third := m.api.As(mustLogin(t, m.api, u.Username).Token)

	// The user's own: listed and one ended, no entry.
	mine := currentSession(t, third, u.ID)
	if r := self.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions/"+mine, "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the user ends their own session: %d %s", r.StatusCode, r.Body)
	}
	sessionsOf(t, m.admin, m.id, 100)
	m.wantActions(t, u.ID)
	m.wantActions(t, m.id, "role_granted")

	// The admin's: listed, one ended, all ended.
	listed := sessionsOf(t, m.admin, u.ID, 100)
	if len(listed) != 2 {
		t.Fatalf("the admin lists %d sessions, want 2", len(listed))
	}
	target := currentSession(t, second, u.ID)
	if r := m.admin.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions/"+target, "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the admin ends one session: %d %s", r.StatusCode, r.Body)
	}
	if r := second.Get("/v1/users/" + u.ID + "/sessions"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the ended session still works: %d", r.StatusCode)
	}
	if r := m.admin.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions", "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the admin ends every session: %d %s", r.StatusCode, r.Body)
	}
	if r := self.Get("/v1/users/" + u.ID + "/sessions"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session survived: %d", r.StatusCode)
	}
	got := m.wantActions(t, u.ID, "sessions_revoked", "session_revoked", "sessions_listed")
	ids := map[string]bool{}
	for _, it := range got {
		if it.Actor != m.id || it.Via != "api" || it.ClientIP == "" || it.Old != "" || it.New != "" {
			t.Errorf("%s: %+v, want actor %s via api from the client", it.Action, it, m.id)
		}
		if ids[it.ID] || !strings.HasSuffix(it.ID, "."+itoa(int(it.At.UnixMilli()))) {
			t.Errorf("entry id %s: repeated, or not ending with its time", it.ID)
		}
		ids[it.ID] = true
	}
	// A second list is a second entry.
	sessionsOf(t, m.admin, u.ID, 100)
	m.wantActions(t, u.ID, "sessions_listed", "sessions_revoked", "session_revoked", "sessions_listed")
	m.wantActions(t, m.id, "role_granted")
}

// TestAdminSessionActionsNeedTheirEntry: when the entry cannot be written
// the admin's list and revocations are refused 503 and do nothing (no
// entry, no action); the user's own are not held up by the audit.
func TestAdminSessionActionsNeedTheirEntry(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, self := m.member(t)
	second := m.api.As(mustLogin(t, m.api, u.Username).Token)
	secondID := currentSession(t, second, u.ID)
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		if stmt == "account_audit.claim" && at == faultinject.BeforeLWT {
			return &gocql.RequestErrUnavailable{}
		}
		return nil
	})
	id := currentSession(t, self, u.ID)
	for _, r := range []struct {
		method, path string
	}{
		{http.MethodGet, "/v1/users/" + u.ID + "/sessions"},
		{http.MethodDelete, "/v1/users/" + u.ID + "/sessions/" + id},
		{http.MethodDelete, "/v1/users/" + u.ID + "/sessions"},
	} {
		if res := m.admin.Do(r.method, r.path, "", nil); res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s %s with the audit down: %d %s, want 503", r.method, r.path, res.StatusCode, res.Body)
		}
	}
	if got := sessionsOf(t, self, u.ID, 100); len(got) != 2 || !slices.ContainsFunc(got, func(s sessionInfoBody) bool { return s.ID == id }) {
		t.Fatalf("the user's sessions after refused revocations: %+v", got)
	}
	// The user's own revocation, the audit still down.
	if r := self.Do(http.MethodDelete, "/v1/users/"+u.ID+"/sessions/"+secondID, "", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the user revokes their other session with the audit down: %d %s", r.StatusCode, r.Body)
	}
	if r := second.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the session the user revoked: %d", r.StatusCode)
	}
	if got := sessionsOf(t, self, u.ID, 100); len(got) != 1 || got[0].ID != id {
		t.Fatalf("the user's session after their own revocation: %+v", got)
	}
	faults(m.app).Set(nil)
	m.wantActions(t, u.ID)
}

// TestAdminCannotSuspendAnotherAdmin: a suspension of another admin is
// refused 403, like every other admin's change of another admin's
// account, and leaves their sessions and account as they were; an admin
// suspending themselves stays 400. Fails when the suspension went ahead
// (201) and ended the other admin's sessions.
func TestAdminCannotSuspendAnotherAdmin(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	other, _ := m.member(t)
	if _, err := m.app.Accounts.SetAdmin(context.Background(), other.Username, true); err != nil {
		t.Fatal(err)
	}
	otherAPI := m.api.As(mustLogin(t, m.api, other.Username).Token)
	r := m.suspend(other.ID, "rival")
	if r.StatusCode != http.StatusForbidden || !strings.Contains(string(r.Body), `"forbidden"`) {
		t.Fatalf("suspending another admin: %d %s, want 403 forbidden", r.StatusCode, r.Body)
	}
	if got := sessionsOf(t, otherAPI, other.ID, 100); len(got) != 2 {
		t.Fatalf("the other admin's sessions: %+v", got)
	}
	if r := m.admin.Get("/v1/users/" + other.ID + "/suspension"); r.StatusCode != http.StatusNotFound {
		t.Fatalf("the other admin's suspension: %d %s", r.StatusCode, r.Body)
	}
	if r := otherAPI.Send(http.MethodPost, "/v1/users/"+m.id+"/suspension", map[string]any{"reason": "back"}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("and the other way: %d %s", r.StatusCode, r.Body)
	}
	if r := m.suspend(m.id, "self"); r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), `"self"`) {
		t.Fatalf("suspending oneself: %d %s, want 400 self", r.StatusCode, r.Body)
	}
	// The role granted and nothing else.
	m.wantActions(t, other.ID, "role_granted")
	// The role revoked, the account is suspended like any other.
	if _, err := m.app.Accounts.SetAdmin(context.Background(), other.Username, false); err != nil {
		t.Fatal(err)
	}
	if r := m.suspend(other.ID, "no longer an admin"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspending a former admin: %d %s", r.StatusCode, r.Body)
	}
}

// TestAnAdminsSessionEntryIsSettledByItsTag: the compare-and-set of an
// admin's entry (account_audit.claim) loses its answer after it applied,
// or is held back and lands after the read at SERIAL, just before the
// next attempt (whose condition then fails on our own row). Either way
// the list answers and the user's audit holds one entry of it: the row's
// tag says it is ours, so it is neither taken for another admin's (which
// would write a second entry a millisecond on) nor left unknown.
func TestAnAdminsSessionEntryIsSettledByItsTag(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, _ := m.member(t)
	lostOnce := func() faultinject.Func {
		var once sync.Once
		return func(name string, at faultinject.Point) error {
			fire := false
			if name == "account_audit.claim" && at == faultinject.AfterLWT {
				once.Do(func() { fire = true })
			}
			if fire {
				return lostAnswer
			}
			return nil
		}
	}
	var want []string
	for _, fault := range []faultinject.Func{lostOnce(), landLateOnce("account_audit.claim")} {
		faults(m.app).Set(fault)
		if listed := sessionsOf(t, m.admin, u.ID, 100); len(listed) != 1 {
			t.Fatalf("the admin lists %d sessions, want 1", len(listed))
		}
		faults(m.app).WaitLate()
		faults(m.app).Set(nil)
		want = append(want, "sessions_listed")
		m.wantActions(t, u.ID, want...)
	}
}

// TestAnAdminsUserAgentOfNoUTF8IsAuditedAsText: HTTP lets a header carry
// bytes that are no UTF-8, and the audit's entry, written before an
// admin lists another's sessions, kept the User-Agent as sent: the node
// refused it ("String didn't validate") and the admin's list answered
// 500 from that client. The entry holds text: each run of bad bytes a
// replacement character (TestAnOriginsUserAgentIsText).
func TestAnAdminsUserAgentOfNoUTF8IsAuditedAsText(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, _ := m.member(t)
	if r := m.admin.Do(http.MethodGet, "/v1/users/"+u.ID+"/sessions", "", nil, "User-Agent", "curl/8 \xff\xfe"); r.StatusCode != http.StatusOK {
		t.Fatalf("an admin's list from a client whose User-Agent is no UTF-8: %d %s", r.StatusCode, r.Body)
	}
	if got := m.wantActions(t, u.ID, "sessions_listed"); got[0].UserAgent != "curl/8 \uFFFD" {
		t.Fatalf("the entry's user agent reads %q, want the bad bytes as one replacement character", got[0].UserAgent)
	}
}
