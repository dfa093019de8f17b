package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
)

// hangUpAudit is the memory store's audit as a driver sends it: a write
// whose context has ended is never sent (the memory store ignores
// contexts; a Cassandra query does not).
type hangUpAudit struct{ *memstore.AccountAudit }

func (h hangUpAudit) Record(ctx context.Context, entries []domain.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.AccountAudit.Record(ctx, entries)
}

// TestAnAdminWhoHangsUpAfterHisChangeIsStillInTheAuditOfEveryAccount:
// root (or whoever holds his session) changes the member's display name,
// or suspends her, and closes the connection once his compare-and-set is
// on its way: the request's context ends, and the change applies. Its
// entries were written with that context after the compare-and-set, so
// they were never sent: the change stood in the account row alone,
// missing from GET /v1/audit (where an admin looks for what root did)
// until someone read that very account's audit, and a caller could
// leave every action of his out of it at will. The entries of an
// applied change are written whatever the caller does after it was sent.
func TestAnAdminWhoHangsUpAfterHisChangeIsStillInTheAuditOfEveryAccount(t *testing.T) {
	t.Parallel()
	for _, action := range []struct {
		name string
		want domain.AuditAction
		run  func(m *modWorld, ctx context.Context) error
	}{
		{"display name", domain.AuditDisplayNameChanged, func(m *modWorld, ctx context.Context) error {
			name := "Changed by admin"
			_, err := m.svc.UpdateUser(ctx, m.admin, m.member.ID, accounts.UpdateInput{DisplayName: &name})
			return err
		}},
		{"suspension", domain.AuditSuspended, func(m *modWorld, ctx context.Context) error {
			_, err := m.mod.Suspend(ctx, m.admin, m.member.ID, moderation.SuspendInput{Reason: "spam"})
			return err
		}},
	} {
		t.Run(action.name, func(t *testing.T) {
			m := newAuditModWorld(t)
			audit := hangUpAudit{m.store.AccountAudit()}
			m.rewire(func(_ *memstore.Store, c *accounts.Config) { c.Audit = audit })
			m.mod = moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: m.store.Now, Attempts: m.store.ModerationAttempts(),
				EmptiedKept: time.Nanosecond, Audit: audit, Log: nopLog{}}, m.svc, m.store.Users(), m.store.Suspensions())
			ctx, hangUp := context.WithCancel(context.Background())
			defer hangUp()
			m.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "users.update" {
					hangUp() // the compare-and-set is sent; its caller is gone
				}
				return memstore.None
			}
			_ = action.run(m, ctx)
			m.store.FaultAt = nil
			u, err := m.store.Users().Get(context.Background(), m.member.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(u.AdminChange) != 1 || u.AdminChange[0].Action != action.want {
				t.Fatalf("the member's row carries %+v, want the %s that applied", u.AdminChange, action.want)
			}
			page, err := m.svc.AllAudit(context.Background(), m.admin, accounts.AuditFilter{Actor: m.admin.UserID, Action: action.want}, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 1 || page.Items[0].ID() != u.AdminChange[0].ID() {
				t.Errorf("root's %s in the audit of every account: %+v, want the one that applied (%s)", action.want, page.Items, u.AdminChange[0].ID())
			}
		})
	}
}

// TestASuspensionWhoseProcessDiedIsInTheAuditOfEveryAccountOnceSwept:
// root suspends the member, or lifts her suspension, or changes her
// display name or username, or the operator grants her the admin role,
// and the process dies just after the compare-and-set applied, before
// the entry is written. The account row carries it, and the sweeper's
// pass finishes the interrupted attempt from that row (its records, its
// history): it writes the entry too, so that GET /v1/audit, which reads
// no account row, lists what was done without anyone reading the
// member's own audit first. A change other than a suspension's reached
// it only once someone read that audit or an admin acted on her again,
// until each of its rounds recorded its intent in the same index.
func TestASuspensionWhoseProcessDiedIsInTheAuditOfEveryAccountOnceSwept(t *testing.T) {
	t.Parallel()
	for _, action := range []adminAction{suspending, unsuspending, renamingDisplay, renaming, granting} {
		t.Run(action.name, func(t *testing.T) {
			m := newAuditModWorld(t)
			if action.setup != nil {
				if err := action.setup(m); err != nil {
					t.Fatal(err)
				}
			}
			m.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "users.update" {
					return memstore.Crash
				}
				return memstore.None
			}
			_ = action.run(m)
			m.store.FaultAt = nil
			m.store.Recover()
			u, err := m.store.Users().Get(context.Background(), m.member.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(u.AdminChange) != 1 || u.AdminChange[0].Action != action.want {
				t.Fatalf("the member's row carries %+v, want the %s that applied", u.AdminChange, action.want)
			}
			all := func() []domain.AuditEntry {
				page, err := m.svc.AllAudit(context.Background(), m.admin, accounts.AuditFilter{Action: action.want}, "", 10)
				if err != nil {
					t.Fatal(err)
				}
				return page.Items
			}
			if items := all(); len(items) != 0 {
				t.Fatalf("before the sweep the audit of every account lists %+v: the process died before writing it", items)
			}
			m.store.Advance(2 * time.Minute)
			if _, err := m.mod.FinishInterrupted(context.Background(), time.Minute); err != nil {
				t.Fatalf("the sweeper's pass: %v", err)
			}
			if items := all(); len(items) != 1 || items[0].ID() != u.AdminChange[0].ID() {
				t.Errorf("root's %s in the audit of every account after the sweep: %+v, want the one that applied (%s)", action.want, items, u.AdminChange[0].ID())
			}
		})
	}
}

// TestAnAdminChangeLeavesNoIntentBehind: an admin's changes that applied,
// one refused (a username another account holds) and a grant whose
// write failed before it was sent each end the intent their rounds
// recorded, so the sweeper fences no account for them.
func TestAnAdminChangeLeavesNoIntentBehind(t *testing.T) {
	t.Parallel()
	m := newAuditModWorld(t)
	ctx := context.Background()
	name, taken := "Changed by admin", "root"
	if _, err := m.svc.UpdateUser(ctx, m.admin, m.member.ID, accounts.UpdateInput{DisplayName: &name}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.UpdateUser(ctx, m.admin, m.member.ID, accounts.UpdateInput{Username: &taken}); err == nil {
		t.Fatal("renaming the member to the admin's username was not refused")
	}
	// A grant whose compare-and-set fails before it is sent can never
	// apply: its intent ends too.
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "users.update" {
			return memstore.FailBefore
		}
		return memstore.None
	}
	if _, err := m.svc.SetAdmin(ctx, m.member.Username, true); err == nil {
		t.Fatal("a grant whose write was never sent answered success")
	}
	m.store.FaultAt = nil
	if _, err := m.svc.SetAdmin(ctx, m.member.Username, true); err != nil {
		t.Fatal(err)
	}
	left := 0
	if err := m.store.ModerationAttempts().InProgress(ctx, func(moderation.Attempt, time.Time) error { left++; return nil }); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d entries left in the index of attempts in progress; want none", left)
	}
}

// adminAction is an admin's action on the member, with the action its
// audit entry records and what it needs first (nil: nothing).
type adminAction struct {
	name  string
	want  domain.AuditAction
	setup func(m *modWorld) error
	run   func(m *modWorld) error
}

// The admin actions the audit's tests run.
var (
	suspending   = adminAction{"suspension", domain.AuditSuspended, nil, func(m *modWorld) error { return m.suspend(0) }}
	unsuspending = adminAction{"unsuspension", domain.AuditUnsuspended, func(m *modWorld) error { return m.suspend(0) },
		func(m *modWorld) error { return m.unsuspend() }}
	renamingDisplay = adminAction{"display name", domain.AuditDisplayNameChanged, nil, func(m *modWorld) error {
		name := "Changed by admin"
		_, err := m.svc.UpdateUser(context.Background(), m.admin, m.member.ID, accounts.UpdateInput{DisplayName: &name})
		return err
	}}
	renaming = adminAction{"username", domain.AuditUsernameChanged, nil, func(m *modWorld) error {
		name := "renamed_by_admin"
		_, err := m.svc.UpdateUser(context.Background(), m.admin, m.member.ID, accounts.UpdateInput{Username: &name})
		return err
	}}
	granting = adminAction{"grant", domain.AuditRoleGranted, nil, func(m *modWorld) error {
		_, err := m.svc.SetAdmin(context.Background(), m.member.Username, true)
		return err
	}}
)
