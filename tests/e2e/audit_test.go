//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// The audit of admin actions on accounts (S6;
// docs/design/account-audit.md).

// auditItem is the AuditEntry schema as tests read it.
type auditItem struct {
	ID        string     `json:"id"`
	UserID    string     `json:"userId"`
	Action    string     `json:"action"`
	At        time.Time  `json:"at"`
	Actor     string     `json:"actor"`
	Via       string     `json:"via"`
	ClientIP  string     `json:"clientIp"`
	UserAgent string     `json:"userAgent"`
	SessionID string     `json:"sessionId"`
	Old       string     `json:"old"`
	New       string     `json:"new"`
	Reason    string     `json:"reason"`
	Until     *time.Time `json:"until"`
}

func auditPath(id string) string { return "/v1/users/" + id + "/audit" }

// auditOf pages through a user's audit as the admin, with limit.
func (m *moderators) auditOf(t *testing.T, id string, limit int) []auditItem {
	t.Helper()
	return pageAll[auditItem](t, m.admin, auditPath(id), limit)
}

func actions(items []auditItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Action
	}
	return out
}

// wantActions checks a user's audit lists exactly these actions, newest
// first, paged one at a time and all at once alike.
func (m *moderators) wantActions(t *testing.T, id string, want ...string) []auditItem {
	t.Helper()
	got := m.auditOf(t, id, 100)
	if !slices.Equal(actions(got), want) {
		t.Fatalf("audit of %s: %v, want %v (%+v)", id, actions(got), want, got)
	}
	if one := m.auditOf(t, id, 1); !slices.EqualFunc(one, got, func(a, b auditItem) bool { return a.ID == b.ID && a.At.Equal(b.At) }) {
		t.Fatalf("audit of %s paged one at a time: %+v, all at once %+v", id, one, got)
	}
	return got
}

// patchAs changes the user's account as api, from a client behind the
// trusted proxy.
func patchAs(api *testkit.API, id string, body map[string]any) *testkit.Response {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return api.Do(http.MethodPatch, "/v1/users/"+id, "application/json", b,
		"X-Forwarded-For", "198.51.100.7, 203.0.113.9", "User-Agent", "audit-test/1.0")
}

// newAuditWorld serves a fresh keyspace behind a trusted proxy (the
// tests' client), with an admin logged in.
func newAuditWorld(t *testing.T) *moderators {
	t.Helper()
	return newModerators(t, map[string]string{"SHELF_TRUSTED_PROXIES": "127.0.0.1/32"})
}

// TestAuditRecordsAdminActions: every kind of admin action on an account
// is listed, newest first, with who, what, when and from where; what the
// user does to their own account is not; and the route answers like the
// other admin routes to everyone else. Fails without the audit (no
// route, nothing recorded).
func TestAuditRecordsAdminActions(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, self := m.member(t)
	other, _ := m.member(t)

	// Nothing yet: an empty page, no cursor.
	if r := m.admin.Get(auditPath(u.ID)); r.StatusCode != http.StatusOK || strings.Contains(string(r.Body), "nextCursor") ||
		!strings.Contains(string(r.Body), `"items":[]`) {
		t.Fatalf("empty audit: %d %s", r.StatusCode, r.Body)
	}
	// The user's own change is no admin action.
	if r := patchAs(self, u.ID, map[string]any{"displayName": "Mine"}); r.StatusCode != http.StatusOK {
		t.Fatalf("own change: %d %s", r.StatusCode, r.Body)
	}
	before := time.Now().Add(-time.Second)
	newName, newEmail := name("renamed"), name("moved")+"@example.org"
	if r := patchAs(m.admin, u.ID, map[string]any{"displayName": "By Admin", "username": newName}); r.StatusCode != http.StatusOK {
		t.Fatalf("admin change: %d %s", r.StatusCode, r.Body)
	}
	if r := patchAs(m.admin, u.ID, map[string]any{"email": newEmail}); r.StatusCode != http.StatusOK {
		t.Fatalf("admin email change: %d %s", r.StatusCode, r.Body)
	}
	if r := m.suspend(u.ID, "spam"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspend: %d %s", r.StatusCode, r.Body)
	}
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend: %d %s", r.StatusCode, r.Body)
	}
	if _, err := m.app.Accounts.SetAdmin(context.Background(), newName, true); err != nil {
		t.Fatal(err)
	}
	if _, err := m.app.Accounts.SetAdmin(context.Background(), newName, false); err != nil {
		t.Fatal(err)
	}

	got := m.wantActions(t, u.ID, "role_revoked", "role_granted", "unsuspended", "suspended", "email_changed",
		"username_changed", "display_name_changed")
	for i, it := range got {
		if it.At.Before(before) || (i > 0 && it.At.After(got[i-1].At)) {
			t.Errorf("entry %d at %v: not newest first, or before the test", i, it.At)
		}
		if strings.HasPrefix(it.Action, "role_") {
			if it.Via != "cli" || it.Actor != "" || it.ClientIP != "" {
				t.Errorf("a role change by the command line: %+v", it)
			}
			continue
		}
		if it.Via != "api" || it.Actor != m.id {
			t.Errorf("entry %d: %+v, want actor %s via api", i, it, m.id)
		}
		if strings.HasSuffix(it.Action, "_changed") && (it.ClientIP != "203.0.113.9" || it.UserAgent != "audit-test/1.0") {
			t.Errorf("entry %d: from %q %q, want the client behind the proxy", i, it.ClientIP, it.UserAgent)
		}
	}
	want := map[string][2]string{
		"email_changed":        {u.Email, newEmail},
		"username_changed":     {u.Username, newName},
		"display_name_changed": {"Mine", "By Admin"},
	}
	for _, it := range got {
		if w, ok := want[it.Action]; ok && (it.Old != w[0] || it.New != w[1]) {
			t.Errorf("%s: %q -> %q, want %q -> %q", it.Action, it.Old, it.New, w[0], w[1])
		}
		if (it.Action == "suspended" || it.Action == "unsuspended") && it.Reason != "spam" {
			t.Errorf("%s: reason %q", it.Action, it.Reason)
		}
		if strings.Contains(strings.ToLower(it.Old+it.New), "password") {
			t.Errorf("%s carries a password: %+v", it.Action, it)
		}
	}

	// Who may not look: anonymous 401; the user themself, another user 403
	// (before anything about the id: a non-admin learns nothing of it).
	if r := m.api.Get(auditPath(u.ID)); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", r.StatusCode)
	}
	// (The suspension ended the user's sessions: a new one.)
	self = m.api.As(mustLogin(t, m.api, newName).Token)
	for _, c := range []*testkit.API{self, m.api.As(mustLogin(t, m.api, other.Username).Token)} {
		for _, path := range []string{auditPath(u.ID), auditPath("usr_nope"), auditPath(u.ID) + "?cursor=bad"} {
			if r := c.Get(path); r.StatusCode != http.StatusForbidden {
				t.Errorf("a non-admin's GET %s: %d %s", path, r.StatusCode, r.Body)
			}
		}
	}
	// An admin: 404 for no such user, 400 for a cursor the list did not make.
	if r := m.admin.Get(auditPath(domain.NewID(domain.UserIDPrefix))); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown user: %d %s", r.StatusCode, r.Body)
	}
	if r := m.admin.Get(auditPath("nope")); r.StatusCode != http.StatusNotFound {
		t.Errorf("malformed id: %d %s", r.StatusCode, r.Body)
	}
	if r := m.admin.Get(auditPath(u.ID) + "?cursor=bad"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("bad cursor: %d %s", r.StatusCode, r.Body)
	}

	// A deletion by an admin is the last entry, and the audit outlives the
	// account.
	if r := adminDeleteAndFinish(t, m.admin, u.ID); r.StatusCode != http.StatusAccepted {
		t.Fatalf("admin deletes: %d %s", r.StatusCode, r.Body)
	}
	got = m.auditOf(t, u.ID, 100)
	if len(got) != 8 || got[0].Action != "deleted" || got[0].Actor != m.id {
		t.Fatalf("after the deletion: %+v", got)
	}
	// The deleted row no longer carries the entries (they held emails).
	if n := adminChangeOf(t, m.db, u.ID); n != "" {
		t.Errorf("the deleted row still carries %s", n)
	}
}

// adminChangeOf reads the admin_change column of the account.
func adminChangeOf(t *testing.T, db *testkit.DB, id string) string {
	t.Helper()
	var v *string
	if err := db.Session.Query(`SELECT admin_change FROM users WHERE id = ?`, nil).Bind(id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return ""
	}
	return *v
}

// TestAuditPaging: many entries, paged with every limit, list each once,
// newest first.
func TestAuditPaging(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, _ := m.member(t)
	const n = 23
	for i := range n {
		if r := patchAs(m.admin, u.ID, map[string]any{"displayName": "Name " + itoa(i)}); r.StatusCode != http.StatusOK {
			t.Fatalf("change %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	all := m.auditOf(t, u.ID, 100)
	if len(all) != n {
		t.Fatalf("%d entries, want %d", len(all), n)
	}
	for i, it := range all {
		if it.New != "Name "+itoa(n-1-i) {
			t.Fatalf("entry %d: %+v, want the change to Name %d (newest first)", i, it, n-1-i)
		}
	}
	for _, limit := range []int{1, 2, 5, 22, 23} {
		got := m.auditOf(t, u.ID, limit)
		if !slices.EqualFunc(got, all, func(a, b auditItem) bool { return a.ID == b.ID }) {
			t.Fatalf("limit %d: %v, want %v", limit, auditIDs(got), auditIDs(all))
		}
	}
}

func auditIDs(items []auditItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// TestAuditRetriesMakeOneEntry: a client's retry of an admin action that
// applied (the same change sent again, a suspension answered 409, an
// unsuspension answered 404) adds no entry; neither does a retry of the
// change whose compare-and-set's answer was lost.
func TestAuditRetriesMakeOneEntry(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, _ := m.member(t)
	body := map[string]any{"displayName": "Once"}
	for range 3 {
		if r := patchAs(m.admin, u.ID, body); r.StatusCode != http.StatusOK {
			t.Fatalf("change: %d %s", r.StatusCode, r.Body)
		}
	}
	m.suspend(u.ID, "once")
	if r := m.suspend(u.ID, "once"); r.StatusCode != http.StatusConflict {
		t.Fatalf("suspend again: %d", r.StatusCode)
	}
	m.unsuspend(u.ID)
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNotFound {
		t.Fatalf("unsuspend again: %d", r.StatusCode)
	}
	// The change's compare-and-set applies and its answer is lost: the
	// read-back settles it, and the entry is written once.
	faults(m.app).Set(onceFault("users.update", faultinject.AfterLWT))
	if r := patchAs(m.admin, u.ID, map[string]any{"displayName": "Lost"}); r.StatusCode != http.StatusOK {
		t.Fatalf("change with a lost answer: %d %s", r.StatusCode, r.Body)
	}
	faults(m.app).Set(nil)
	if r := patchAs(m.admin, u.ID, map[string]any{"displayName": "Lost"}); r.StatusCode != http.StatusOK {
		t.Fatalf("its retry: %d %s", r.StatusCode, r.Body)
	}
	m.wantActions(t, u.ID, "display_name_changed", "unsuspended", "suspended", "display_name_changed")
}

// TestAuditWriteLostOrLate: the entry's own write fails after the change
// applied (the change stands, and the next read of the audit writes the
// entry from the account row), or is held back and lands after that read
// (the same row again: still one entry); an admin action whose entry
// write failed leaves it to the next admin action too.
func TestAuditWriteLostOrLate(t *testing.T) {
	t.Parallel()
	m := newAuditWorld(t)
	u, _ := m.member(t)
	failed := errors.New("the audit write failed (test)")
	var mu sync.Mutex
	mode, seen, pass := "", 0, 0
	faults(m.app).Set(func(stmt string, at faultinject.Point) error {
		mu.Lock()
		defer mu.Unlock()
		if stmt != "account_audit.insert" || at != faultinject.BeforeWrite {
			return nil
		}
		// The first pass writes are of the entries the row carried (the
		// last admin action's), before the compare-and-set: the action's
		// own come after.
		if seen++; seen <= pass {
			return nil
		}
		switch mode {
		case "fail":
			return failed
		case "hold":
			return faultinject.ErrHoldWrite
		}
		return nil
	})
	set := func(s string, carried int) { mu.Lock(); mode, seen, pass = s, 0, carried; mu.Unlock() }

	set("fail", 0)
	if r := patchAs(m.admin, u.ID, map[string]any{"displayName": "Failed write"}); r.StatusCode != http.StatusOK {
		t.Fatalf("change whose entry write failed: %d %s", r.StatusCode, r.Body)
	}
	set("", 0)
	m.wantActions(t, u.ID, "display_name_changed")

	set("hold", 1)
	if r := m.suspend(u.ID, "held"); r.StatusCode != http.StatusCreated {
		t.Fatalf("suspension whose entry write is held: %d %s", r.StatusCode, r.Body)
	}
	set("", 0)
	m.wantActions(t, u.ID, "suspended", "display_name_changed")
	if err := faults(m.app).LandHeld(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.wantActions(t, u.ID, "suspended", "display_name_changed")

	// Failed again, then another admin action: it writes the entries the
	// row carried before its own.
	set("fail", 1)
	if r := m.unsuspend(u.ID); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspension whose entry write failed: %d %s", r.StatusCode, r.Body)
	}
	set("", 0)
	if r := patchAs(m.admin, u.ID, map[string]any{"displayName": "Next"}); r.StatusCode != http.StatusOK {
		t.Fatalf("next change: %d %s", r.StatusCode, r.Body)
	}
	var rows int
	if err := m.db.Session.Query(`SELECT COUNT(*) FROM account_audit WHERE user_id = ?`, nil).Bind(u.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 4 {
		t.Fatalf("%d rows in the audit before any read of it, want 4 (the unsuspension's written by the next action)", rows)
	}
	m.wantActions(t, u.ID, "display_name_changed", "unsuspended", "suspended", "display_name_changed")
}

// TestTheAuditOfEveryAccount: GET /v1/audit lists every account's
// entries, each naming its account, newest first and paged alike one at
// a time or all at once; ?action= and ?actor= keep one kind or one
// admin's; a bad filter is 400 naming it, and a user who is no admin is
// refused.
func TestTheAuditOfEveryAccount(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	ann, _ := newUser(t, m.api, "audited")
	bob, _ := newUser(t, m.api, "audited")
	_, asCarl := newUser(t, m.api, "auditor")
	for _, u := range []userBody{ann, bob} {
		if r := m.admin.Send(http.MethodPost, "/v1/users/"+u.ID+"/suspension", map[string]any{"reason": "spam"}); r.StatusCode != http.StatusCreated {
			t.Fatalf("suspend %s: %d %s", u.Username, r.StatusCode, r.Body)
		}
	}
	if r := m.admin.Send(http.MethodDelete, "/v1/users/"+ann.ID+"/suspension", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuspend: %d %s", r.StatusCode, r.Body)
	}
	all := pageAll[auditItem](t, m.admin, "/v1/audit", 100)
	var mine []string
	for _, e := range all {
		if e.UserID == ann.ID || e.UserID == bob.ID {
			mine = append(mine, e.UserID+":"+e.Action)
		}
	}
	want := []string{ann.ID + ":unsuspended", bob.ID + ":suspended", ann.ID + ":suspended"}
	if !slices.Equal(mine, want) {
		t.Fatalf("the audit of every account: %v, want %v", mine, want)
	}
	if one := pageAll[auditItem](t, m.admin, "/v1/audit", 1); !slices.EqualFunc(one, all, func(a, b auditItem) bool { return a.ID == b.ID && a.UserID == b.UserID }) {
		t.Fatalf("paged one at a time: %+v, all at once %+v", one, all)
	}
	suspended := pageAll[auditItem](t, m.admin, "/v1/audit?action=suspended", 100)
	if len(suspended) != 2 || suspended[0].UserID != bob.ID || suspended[1].Actor != m.id {
		t.Fatalf("?action=suspended: %+v", suspended)
	}
	// Each entry names the session that made it, as the admin's list of
	// sessions shows it (the one he can end).
	var own sessionListBody
	m.admin.Get("/v1/users/"+m.id+"/sessions").JSON(t, &own)
	current := ""
	for _, s := range own.Items {
		if s.Current {
			current = s.ID
		}
	}
	for _, e := range suspended {
		if current == "" || e.SessionID != current {
			t.Fatalf("the suspension of %s names the session %q, want the admin's current one %q", e.UserID, e.SessionID, current)
		}
	}
	if byAdmin := pageAll[auditItem](t, m.admin, "/v1/audit?actor="+m.id, 100); len(byAdmin) < 3 {
		t.Fatalf("?actor=<the admin>: %+v", byAdmin)
	}
	if none := pageAll[auditItem](t, m.admin, "/v1/audit?actor="+bob.ID, 100); len(none) != 0 {
		t.Fatalf("?actor=<bob, who did nothing>: %+v", none)
	}
	for _, bad := range []struct{ query, field string }{{"?actor=bob", "actor"}, {"?action=danced", "action"}, {"?cursor=nonsense", "cursor"}} {
		r := m.admin.Get("/v1/audit" + bad.query)
		if r.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", bad.query, r.StatusCode, r.Body)
		}
		if p := r.Problem(t); len(p.Errors) != 1 || p.Errors[0].Field != bad.field {
			t.Fatalf("%s: the 400 names %+v, want the field %s alone", bad.query, p.Errors, bad.field)
		}
	}
	if r := asCarl.Get("/v1/audit"); r.StatusCode != http.StatusForbidden {
		t.Fatalf("a user who is no admin: %d %s", r.StatusCode, r.Body)
	}
}
