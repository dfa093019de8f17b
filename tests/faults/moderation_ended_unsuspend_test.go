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

// TestAnAdminAheadLiftsAnUnendedSuspensionAsHisOwn: an admin on time
// suspends the member for five minutes; at once an admin whose process's
// clock runs ten minutes ahead unsuspends. By the node's clock (and any
// other's) the suspension is in force for five more minutes, and logins
// are still refused (S3 counts an end passed only by the process's clock
// and the node's both): the admin's unsuspension is what ends it, so it
// must answer 204, record an "unsuspended" by him and enter the audit.
// Deciding "ended by itself" on the process's clock alone answered
// not_suspended, recorded an expiry at an until still to come, by nobody,
// and left the audit of admin actions without the lift he made.
func TestAnAdminAheadLiftsAnUnendedSuspensionAsHisOwn(t *testing.T) {
	t.Parallel()
	m := newAuditModWorld(t)
	ctx := context.Background()
	if err := m.suspend(5 * time.Minute); err != nil {
		t.Fatal(err)
	}
	skew := 10 * time.Minute
	ahead := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: func() time.Time { return m.store.Now().Add(skew) },
		Attempts: m.store.ModerationAttempts(), EmptiedKept: time.Nanosecond, Audit: m.store.AccountAudit(), Log: nopLog{}},
		m.svc, m.store.Users(), m.store.SkewedSuspensions(skew))
	if err := ahead.Unsuspend(ctx, m.admin, m.member.ID); err != nil {
		t.Fatalf("the unsuspend of a suspension five minutes from its end answered %v, want 204", err)
	}
	history, err := m.mod.History(ctx, m.admin, m.member.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(history.Items) != 2 {
		t.Fatalf("history %+v, want the suspension and its lift", history.Items)
	}
	if last := history.Items[0]; last.Kind != moderation.EventUnsuspended || last.Actor != m.admin.UserID {
		t.Errorf("the lift is recorded as %s at %v by %q, want unsuspended by the admin", last.Kind, last.At, last.Actor)
	}
	lifted := false
	for _, e := range m.store.AuditEntries(m.member.ID) {
		lifted = lifted || e.Action == domain.AuditUnsuspended
	}
	if !lifted {
		t.Errorf("the audit of admin actions does not record the admin's unsuspension")
	}
	checkModeration(t, "an admin ahead unsuspends a suspension still in force", m)
}
