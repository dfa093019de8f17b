package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAnAdminsActionOnADeletingAccountIsInTheAuditOfEveryAccountBeforeItsJobEnds:
// root changes the member's display name, or deletes her account; the
// compare-and-set applies and the write of its entry into the audit
// fails (a node down a moment), so the row alone carries it. For the
// change, the member then deletes her own account, and the sweeper's
// pass finds the account being deleted and ends the change's intent,
// leaving the entry to the deletion. The deletion's job runs and fails
// at its groups (a node down; or a group every other member of which is
// being deleted too, for as long as theirs take): the entry was written
// only by the job's mark deleting -> deleted, its last steps, so GET
// /v1/audit, which reads no account row, missed root's action for as
// long as the job did not get there (hours for a large account, without
// end for one stuck). The job writes what the row carries before its
// steps.
func TestAnAdminsActionOnADeletingAccountIsInTheAuditOfEveryAccountBeforeItsJobEnds(t *testing.T) {
	t.Parallel()
	deleting := adminAction{name: "deletion by root", want: domain.AuditDeleted, run: func(m *modWorld) error {
		_, err := m.life.DeleteUser(context.Background(), m.admin, m.member.ID, accounts.Proof{})
		return err
	}}
	for _, action := range []adminAction{renamingDisplay, deleting} {
		t.Run(action.name, func(t *testing.T) {
			m := newAuditModWorld(t)
			wireDeletion(m.world)
			ctx := context.Background()
			runWithItsEntryFailing(t, m, action)
			if action.want != domain.AuditDeleted {
				pw := password
				if _, err := m.life.DeleteUser(ctx, as(m.member), m.member.ID, accounts.Password(pw)); err != nil {
					t.Fatalf("the member's deletion: %v", err)
				}
			}
			u, err := m.store.Users().GetSerial(ctx, m.member.ID)
			if err != nil {
				t.Fatal(err)
			}
			if u.Status != domain.StatusDeleting || len(u.AdminChange) != 1 || u.AdminChange[0].Action != action.want {
				t.Fatalf("the member's row is %q carrying %+v, want deleting with the %s that applied", u.Status, u.AdminChange, action.want)
			}
			m.store.Advance(2 * time.Minute)
			if _, err := m.mod.FinishInterrupted(ctx, time.Minute); err != nil {
				t.Fatalf("the sweeper's pass: %v", err)
			}
			m.store.FaultAt = func(_ int, name string) memstore.Fault {
				if name == "groups_by_member.list" {
					return memstore.FailBefore
				}
				return memstore.None
			}
			if _, err := m.life.WorkJobs(ctx); err == nil {
				t.Fatal("the job's pass did not fail at the member's groups")
			}
			m.store.FaultAt = nil
			page, err := m.svc.AllAudit(ctx, m.admin, accounts.AuditFilter{Action: action.want}, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 1 || page.Items[0].ID() != u.AdminChange[0].ID() {
				t.Errorf("root's %s in the audit of every account while the deletion's job goes on: %+v, want the one that applied (%s)",
					action.want, page.Items, u.AdminChange[0].ID())
			}
		})
	}
}
