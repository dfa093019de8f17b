package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/moderation"
)

// TestAnAdminsUnsuspendOfAnEndedSuspensionRecordsItsExpiry: an admin
// suspends the member for a minute; two minutes on, before any sweeper's
// pass, an admin unsuspends. The suspension had ended by itself at its
// `until` (logins go through from then), so the admin lifted nothing:
// the history must say it expired at its end, and the audit of admin
// actions must name no admin who unsuspended. Before, the lift recorded
// an "unsuspended" by the admin, two minutes after the suspension was
// over, and answered 204 for an action that did nothing. The unsuspend
// lifts it as the sweeper would (an expiry, by nobody) and answers
// not_suspended.
func TestAnAdminsUnsuspendOfAnEndedSuspensionRecordsItsExpiry(t *testing.T) {
	t.Parallel()
	m := newAuditModWorld(t)
	ctx := context.Background()
	if err := m.suspend(time.Minute); err != nil {
		t.Fatal(err)
	}
	u, err := m.store.Users().Get(ctx, m.member.ID)
	if err != nil || u.Suspension == nil {
		t.Fatalf("after the suspension: %+v, %v", u.Suspension, err)
	}
	until := u.Suspension.Until
	m.store.Advance(2 * time.Minute)

	var refusal *domain.Error
	if err := m.unsuspend(); !errors.As(err, &refusal) || refusal.Code != "not_suspended" {
		t.Fatalf("the unsuspend of a suspension over a minute ago answered %v, want not_suspended", err)
	}
	history, err := m.mod.History(ctx, m.admin, m.member.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(history.Items) != 2 {
		t.Fatalf("history %+v, want the suspension and its end", history.Items)
	}
	if last := history.Items[0]; last.Kind != moderation.EventExpired || !last.At.Equal(until) || last.Actor != "" {
		t.Errorf("the suspension's end is recorded as %s at %v by %q, want expired at its until %v by nobody", last.Kind, last.At, last.Actor, until)
	}
	for _, e := range m.store.AuditEntries(m.member.ID) {
		if e.Action == domain.AuditUnsuspended {
			t.Errorf("the audit names %s as lifting a suspension that had ended: %+v", e.Actor, e)
		}
	}
	if u, err := m.store.Users().Get(ctx, m.member.ID); err != nil || u.Status != domain.StatusActive {
		t.Fatalf("the member after the unsuspend: %s, %v", u.Status, err)
	}
	checkModeration(t, "an admin's unsuspend of an ended suspension", m)
}
