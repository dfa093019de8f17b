package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// An admin's actions on another's sessions and factors under every fault
// at every store call (docs/design/account-audit.md): no admin lists or
// ends the member's sessions, or lists the member's second factors,
// without an entry in the member's audit naming the admin, whatever was
// lost, held back and landed late, or crashed, and however often the
// client tried again.

// sessionAction is an admin's action on the member's sessions or
// factors: its kind, and whether it answered them (a list: the sessions,
// or one for a list of factors, which answers what the account has).
type sessionAction struct {
	action domain.AuditAction
	run    func(m *modWorld, target domain.Session) (listed int, err error)
}

var sessionActions = []sessionAction{
	{action: domain.AuditSessionsListed, run: func(m *modWorld, _ domain.Session) (int, error) {
		page, err := m.svc.ListSessions(context.Background(), m.admin, m.member.ID, "", 100)
		return len(page.Items), err
	}},
	{action: domain.AuditSessionRevoked, run: func(m *modWorld, target domain.Session) (int, error) {
		return 0, m.svc.RevokeSession(context.Background(), m.admin, m.member.ID, target.ID())
	}},
	{action: domain.AuditSessionsRevoked, run: func(m *modWorld, _ domain.Session) (int, error) {
		return 0, m.svc.RevokeSessions(context.Background(), m.admin, m.member.ID, false)
	}},
	{action: domain.AuditFactorsListed, run: func(m *modWorld, _ domain.Session) (int, error) {
		if _, err := m.svc.ListFactors(context.Background(), m.admin, m.member.ID); err != nil {
			return 0, err
		}
		return 1, nil
	}},
}

// newSessionsAuditWorld is newAuditModWorld with second factors on and
// the member logged in twice; it returns the member's sessions.
func newSessionsAuditWorld(t *testing.T) (*modWorld, []domain.Session) {
	t.Helper()
	m := newAuditModWorld(t)
	m.rewire(func(st *memstore.Store, c *accounts.Config) { c.Factors = st.Factors() })
	for range 2 {
		if _, err := m.svc.Login(context.Background(), "member", password, accounts.Client{}); err != nil {
			t.Fatal(err)
		}
	}
	live := liveSessions(t, m)
	if len(live) != 2 {
		t.Fatalf("%d sessions after two logins", len(live))
	}
	return m, live
}

// liveSessions are the member's sessions as the store holds them.
func liveSessions(t *testing.T, m *modWorld) []domain.Session {
	t.Helper()
	ctx := context.Background()
	entries, err := m.store.Sessions().Entries(ctx, m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.store.Sessions().GetMany(ctx, hashesOf(entries))
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.Session
	for _, e := range entries {
		if s, ok := got[e.TokenHash]; ok {
			out = append(out, s)
		}
	}
	return out
}

func TestExploreAuditOfSessionActions(t *testing.T) {
	t.Parallel()
	schedules := 0
	for _, a := range sessionActions {
		m, live := newSessionsAuditWorld(t)
		start := m.store.Calls()
		if _, err := a.run(m, live[0]); err != nil {
			t.Fatalf("%s without faults: %v", a.action, err)
		}
		schedules += eachSchedule(t, string(a.action), m.store.Calls()-start, func(call int, f memstore.Fault, retry bool) error {
			return exploreSessionAudit(t, a, call, f, retry)
		})
	}
	t.Logf("%d schedules", schedules)
}

// exploreSessionAudit runs one schedule: when the action listed sessions
// or ended one, the member's audit holds an entry of it by the admin; no
// entry is of anything else; a refused list answers no session.
func exploreSessionAudit(t *testing.T, a sessionAction, call int, f memstore.Fault, retry bool) error {
	m, live := newSessionsAuditWorld(t)
	first := m.store.Calls() + call
	m.store.FaultAt = func(n int, _ string) memstore.Fault {
		if n == first {
			return f
		}
		return memstore.None
	}
	listed, err := a.run(m, live[0])
	m.store.FaultAt = nil
	m.store.Recover()
	if err != nil && listed > 0 {
		return fmt.Errorf("a refused list answered %d sessions: %w", listed, err)
	}
	served := err == nil && listed > 0
	for try := 0; retry && err != nil && try < 4; try++ {
		m.store.Land()
		listed, err = a.run(m, live[0])
		served = served || (err == nil && listed > 0)
	}
	if retry && err != nil && !(a.action == domain.AuditSessionRevoked && errors.Is(err, accounts.ErrSessionNotFound)) {
		return fmt.Errorf("the client's retries never got through: %w", err)
	}
	m.store.Land()
	ended := len(liveSessions(t, m)) < len(live)
	entries := m.store.AuditEntries(m.member.ID)
	var of int
	for _, e := range entries {
		// A revocation of every session moves the account's version on
		// (a new password epoch): a retry after it applied reads, and
		// audits, the version it made.
		version := e.Version == m.member.Version || (a.action == domain.AuditSessionsRevoked && e.Version > m.member.Version)
		if e.Action != a.action || e.Actor != m.admin.UserID || e.Via != domain.ViaAPI || !version {
			return fmt.Errorf("entry %+v: not the admin's %s at the version read", e, a.action)
		}
		of++
	}
	if (served || ended) && of == 0 {
		return fmt.Errorf("sessions listed (%v) or ended (%v) without an entry: %+v", served, ended, entries)
	}
	return nil
}

// TestAdminSessionActionsWithoutAudit: with every write to the audit
// failing, an admin's list and revocations of the member's sessions, and
// list of the member's factors, are refused as unavailable and leave
// every session as it was (no entry, no action); the member's own lists
// go ahead, audited nowhere.
func TestAdminSessionActionsWithoutAudit(t *testing.T) {
	t.Parallel()
	m, live := newSessionsAuditWorld(t)
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "account_audit.claim" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	for _, a := range sessionActions {
		listed, err := a.run(m, live[0])
		if !errors.Is(err, domain.ErrUnavailable) || listed != 0 {
			t.Errorf("%s with the audit down: %d sessions, %v; want unavailable and none", a.action, listed, err)
		}
	}
	if got := liveSessions(t, m); len(got) != len(live) {
		t.Fatalf("%d sessions left of %d", len(got), len(live))
	}
	own := domain.Principal{UserID: m.member.ID, Session: live[0]}
	if page, err := m.svc.ListSessions(context.Background(), own, m.member.ID, "", 100); err != nil || len(page.Items) != len(live) {
		t.Fatalf("the member's own list: %d sessions, %v", len(page.Items), err)
	}
	if _, err := m.svc.ListFactors(context.Background(), own, m.member.ID); err != nil {
		t.Fatalf("the member's own list of factors: %v", err)
	}
	m.store.FaultAt = nil
	if got := m.store.AuditEntries(m.member.ID); len(got) != 0 {
		t.Fatalf("entries with the audit down: %+v", got)
	}
}

// TestTwoAdminsAtOnceAreBothAudited: two admins list the member's sessions
// and revoke one in the same millisecond (the store's clock stands
// still), so each pair of entries has one key: every entry is kept, each
// naming its admin (before, the later write took the row, and the
// member's audit named one admin of the two).
func TestTwoAdminsAtOnceAreBothAudited(t *testing.T) {
	t.Parallel()
	m, live := newSessionsAuditWorld(t)
	ctx := context.Background()
	if err := m.signup("root2", "root2@example.org"); err != nil {
		t.Fatal(err)
	}
	second, err := m.svc.SetAdmin(ctx, "root2", true)
	if err != nil {
		t.Fatal(err)
	}
	admins := []domain.Principal{m.admin, {UserID: second.ID}}
	for _, p := range admins {
		if _, err := m.svc.ListSessions(ctx, p, m.member.ID, "", 100); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range admins {
		if err := m.svc.RevokeSession(ctx, p, m.member.ID, live[i].ID()); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	for _, e := range m.store.AuditEntries(m.member.ID) {
		got[string(e.Action)+" by "+e.Actor]++
	}
	for _, p := range admins {
		for _, a := range []domain.AuditAction{domain.AuditSessionsListed, domain.AuditSessionRevoked} {
			if k := string(a) + " by " + p.UserID; got[k] != 1 {
				t.Errorf("%s: %d entries, want 1 (the audit: %v)", k, got[k], got)
			}
		}
	}
}
