package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
)

// The audit of admin actions on accounts (docs/design/account-audit.md)
// under every fault at every store call of an admin action: each action
// that took effect has exactly one entry, at the version its change
// wrote, and no entry names a change that did not happen, whatever was
// lost, held back and landed late, or crashed, and however often the
// client tried again.

// auditAction is an admin action on the member, with the set-up it needs.
type auditAction struct {
	name  string
	setup func(m *modWorld) error
	run   func(m *modWorld) error
}

func displayName(m *modWorld) error {
	name := "Changed by admin"
	_, err := m.svc.UpdateUser(context.Background(), m.admin, m.member.ID, accounts.UpdateInput{DisplayName: &name})
	return err
}

var auditActions = []auditAction{
	{name: "display-name", run: displayName},
	{name: "suspend", run: func(m *modWorld) error { return m.suspend(0) }},
	{name: "unsuspend", setup: func(m *modWorld) error { return m.suspend(0) }, run: func(m *modWorld) error { return m.unsuspend() }},
	{name: "display-name-after-suspend", setup: func(m *modWorld) error { return m.suspend(0) }, run: displayName},
}

// newAuditModWorld is newModWorld with the audit wired to both services.
func newAuditModWorld(t *testing.T) *modWorld {
	t.Helper()
	m := newModWorld(t)
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Audit = st.AccountAudit()
		c.Intents = moderation.AdminIntents{Index: st.ModerationAttempts(), Now: st.Now}
	})
	m.mod = moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: m.store.Now, Attempts: m.store.ModerationAttempts(), EmptiedKept: time.Nanosecond,
		Audit: m.store.AccountAudit(), Log: nopLog{}}, m.svc, m.store.Users(), m.store.Suspensions())
	return m
}

// done reports an answer after which the client stops trying: success,
// or the refusal that says the action is already in force.
func done(err error) bool {
	var refusal *domain.Error
	return err == nil || (errors.As(err, &refusal) && (refusal.Code == "already_suspended" || refusal.Code == "not_suspended"))
}

func TestExploreAudit(t *testing.T) {
	t.Parallel()
	schedules := 0
	for _, a := range auditActions {
		// The calls of a run without faults: every one of them gets every
		// fault (and one past the end, the run untouched).
		m := newAuditModWorld(t)
		if a.setup != nil {
			if err := a.setup(m); err != nil {
				t.Fatal(err)
			}
		}
		start := m.store.Calls()
		if err := a.run(m); err != nil {
			t.Fatalf("%s without faults: %v", a.name, err)
		}
		schedules += eachSchedule(t, a.name, m.store.Calls()-start, func(call int, f memstore.Fault, retry bool) error {
			return exploreAudit(t, a, call, f, retry)
		})
	}
	t.Logf("%d schedules", schedules)
}

// eachSchedule runs one schedule per fault at each of the calls of an
// action (and one past the end, the action untouched), each with and
// without the client's retries, and reports how many ran.
func eachSchedule(t *testing.T, name string, calls int, run func(call int, f memstore.Fault, retry bool) error) int {
	t.Helper()
	n := 0
	for call := 0; call <= calls; call++ {
		for _, f := range memstore.Faults {
			for _, retry := range []bool{true, false} {
				n++
				if err := run(call, f, retry); err != nil {
					t.Errorf("%s, %s at call %d (client retries: %v): %v", name, f, call, retry, err)
				}
			}
		}
	}
	return n
}

// exploreAudit runs one schedule and checks the member's audit. A client
// that does not retry leaves the action as the fault left it: done, or
// never done.
func exploreAudit(t *testing.T, a auditAction, call int, f memstore.Fault, retry bool) error {
	m := newAuditModWorld(t)
	if a.setup != nil {
		if err := a.setup(m); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	before, err := m.store.Users().Get(context.Background(), m.member.ID)
	if err != nil {
		return err
	}
	first := m.store.Calls() + call
	m.store.FaultAt = func(n int, _ string) memstore.Fault {
		if n == first {
			return f
		}
		return memstore.None
	}
	err = a.run(m)
	m.store.FaultAt = nil
	m.store.Recover()
	m.store.Land()
	for try := 0; retry && !done(err) && try < 4; try++ {
		err = a.run(m)
	}
	if retry && !done(err) {
		return fmt.Errorf("the client's retries never got through: %w", err)
	}
	m.store.Land()
	page, err := m.svc.Audit(context.Background(), m.admin, m.member.ID, "", 100)
	if err != nil {
		return fmt.Errorf("reading the audit: %w", err)
	}
	if err := auditMatches(page.Items, before, m.store.Changes(m.member.ID), retry); err != nil {
		return err
	}
	return sameInBothTables(page.Items, m.store.AuditDayEntries(m.member.ID), before.Version)
}

// sameInBothTables checks the audit by day holds the entries the
// account's audit showed, once its read wrote what the row carried, and
// no other (those of versions after since alone: the set-up's are left
// out).
func sameInBothTables(byAccount, byDay []domain.AuditEntry, since int) error {
	ids := func(es []domain.AuditEntry) []string {
		var out []string
		for _, e := range es {
			if e.Version > since {
				out = append(out, e.ID())
			}
		}
		slices.Sort(out)
		return out
	}
	if a, d := ids(byAccount), ids(byDay); !slices.Equal(a, d) {
		return fmt.Errorf("the account's audit shows %v, the audit by day %v", a, d)
	}
	return nil
}

// auditMatches checks the entries against the account's applied changes:
// one entry per admin action that changed the row, at its version, and
// none else.
// With retries, the action took effect once.
func auditMatches(entries []domain.AuditEntry, before domain.User, changes []domain.User, retried bool) error {
	want := map[string]bool{}
	prev := before
	for _, next := range changes {
		if next.Version <= before.Version {
			prev = next
			continue
		}
		var action domain.AuditAction
		switch {
		case next.DisplayName != prev.DisplayName:
			action = domain.AuditDisplayNameChanged
		case prev.Status == domain.StatusActive && next.Status == domain.StatusSuspended:
			action = domain.AuditSuspended
		case prev.Status == domain.StatusSuspended && next.Status == domain.StatusActive:
			action = domain.AuditUnsuspended
		}
		if action != "" {
			want[fmt.Sprintf("%d.%s", next.Version, action)] = true
		}
		prev = next
	}
	got := map[string]bool{}
	for _, e := range entries {
		if e.Version <= before.Version {
			continue // the set-up's
		}
		if got[e.ID()] {
			return fmt.Errorf("entry %s listed twice: %+v", e.ID(), entries)
		}
		got[e.ID()] = true
		if !want[e.ID()] {
			return fmt.Errorf("entry %s names no change that took effect (changes %v): %+v", e.ID(), keys(want), entries)
		}
	}
	for k := range want {
		if !got[k] {
			return fmt.Errorf("change %s has no entry (entries %v)", k, keys(got))
		}
	}
	if len(want) > 1 || (retried && len(want) != 1) {
		return fmt.Errorf("%d changes of the action took effect, want 1: %v", len(want), keys(want))
	}
	return nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
