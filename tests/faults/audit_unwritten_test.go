package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAnAdminActionWhoseEntryFailedIsInTheAuditOfEveryAccountOnceSwept:
// root suspends the member, or lifts her suspension, or changes her
// display name; the compare-and-set applies, and the write of its entry
// into the day's audit fails (a node down a moment). The request answers
// success, the row carries the entry, and the attempt recorded before the
// compare-and-set must stay until the entry is written: the sweeper's
// pass then writes it from the row. A suspension and a lift ended their
// attempt whatever the write did, so GET /v1/audit, which reads no
// account row, missed root's action until someone read the member's own
// audit or an admin acted on her again.
func TestAnAdminActionWhoseEntryFailedIsInTheAuditOfEveryAccountOnceSwept(t *testing.T) {
	t.Parallel()
	for _, action := range []adminAction{suspending, unsuspending, renamingDisplay} {
		t.Run(action.name, func(t *testing.T) {
			m := newAuditModWorld(t)
			if action.setup != nil {
				if err := action.setup(m); err != nil {
					t.Fatal(err)
				}
			}
			runWithItsEntryFailing(t, m, action)
			u, err := m.store.Users().Get(context.Background(), m.member.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(u.AdminChange) != 1 || u.AdminChange[0].Action != action.want {
				t.Fatalf("the member's row carries %+v, want the %s that applied", u.AdminChange, action.want)
			}
			m.store.Advance(2 * time.Minute)
			if _, err := m.mod.FinishInterrupted(context.Background(), time.Minute); err != nil {
				t.Fatalf("the sweeper's pass: %v", err)
			}
			page, err := m.svc.AllAudit(context.Background(), m.admin, accounts.AuditFilter{Action: action.want}, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 1 || page.Items[0].ID() != u.AdminChange[0].ID() {
				t.Errorf("root's %s in the audit of every account after the sweep: %+v, want the one that applied (%s)", action.want, page.Items, u.AdminChange[0].ID())
			}
		})
	}
}

// runWithItsEntryFailing runs action with the first write of an entry
// into the day's audit after its compare-and-set failing (a node down a
// moment): the action applied, its entry's write did not.
func runWithItsEntryFailing(t *testing.T, m *modWorld, action adminAction) {
	t.Helper()
	applied, failed := false, false
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		switch {
		case name == "users.update":
			applied = true
		case applied && !failed && name == "audit_by_day.insert":
			failed = true
			return memstore.FailBefore
		}
		return memstore.None
	}
	if err := action.run(m); err != nil {
		t.Fatalf("root's %s: %v (it applied; only its entry's write failed)", action.name, err)
	}
	m.store.FaultAt = nil
	if !failed {
		t.Fatal("no write of the entry after the compare-and-set")
	}
}
