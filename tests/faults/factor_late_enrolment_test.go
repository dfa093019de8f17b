package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed: ann
// begins an authenticator's enrolment; its insert's first attempt goes
// unanswered, held at a node, and the one sent again applies. Nobody
// confirms it within its ten minutes, and the pending row expires. Then
// the held first attempt lands: the same insert, its row pending again
// with a TTL of its own from then. A confirmation with a code of that
// secret went through, adding a factor begun long ago (whoever began it,
// a thief with her session too, had only ten minutes to prove it). An
// enrolment is confirmed only within its ten minutes, by its own start.
func TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	ctx := context.Background()
	p := domain.Principal{UserID: m.ann.ID}
	e, begun := enrolPhone(t, m)
	m.store.Advance(11 * time.Minute)
	if left, _, err := m.store.Factors().Read(ctx, m.ann.ID); err != nil || len(left) != 0 {
		t.Fatalf("ten minutes on the enrolment's row is still there: %+v %v", left, err)
	}
	// The held first attempt lands: the same statement, its TTL from now.
	if err := m.store.Factors().Begin(ctx, begun, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	code, err := totp.Code(begun.Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, code)
	var refusal *domain.Error
	if !errors.As(err, &refusal) {
		t.Fatalf("a confirmation eleven minutes after the enrolment began answered %v; want it refused as gone", err)
	}
	if left, _, _ := m.store.Factors().Read(ctx, m.ann.ID); len(left) > 0 && left[0].Confirmed() {
		t.Fatalf("the late enrolment was confirmed: %+v", left[0])
	}
}

// TestAnEnrolmentWrittenAgainIsNotConfirmedByAProcessBehind: as
// TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed, ann's
// enrolment's held first attempt lands a second after the pending row's
// ten minutes, writing it pending anew; the confirmation with a code of
// its secret reaches a process whose clock runs two seconds behind (the
// skew tests/nemesis/skewedapi gives one API). By that clock alone the
// enrolment is 9m59s old, by the node's (which expired the row) over
// ten minutes: it is gone, and confirming it adds a factor begun over
// ten minutes ago.
func TestAnEnrolmentWrittenAgainIsNotConfirmedByAProcessBehind(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	ctx := context.Background()
	p := domain.Principal{UserID: m.ann.ID}
	e, begun := enrolPhone(t, m)
	m.store.Advance(10*time.Minute + time.Second)
	if left, _, err := m.store.Factors().Read(ctx, m.ann.ID); err != nil || len(left) != 0 {
		t.Fatalf("ten minutes on the enrolment's row is still there: %+v %v", left, err)
	}
	if err := m.store.Factors().Begin(ctx, begun, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	behind := 2 * time.Second
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Now = func() time.Time { return st.Now().Add(-behind) }
	})
	code, err := totp.Code(begun.Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, code)
	var refusal *domain.Error
	if !errors.As(err, &refusal) {
		t.Fatalf("a confirmation ten minutes and a second after the enrolment began, on a process two seconds behind, answered %v; want it refused as gone", err)
	}
	if left, _, _ := m.store.Factors().Read(ctx, m.ann.ID); len(left) > 0 && left[0].Confirmed() {
		t.Fatalf("the late enrolment was confirmed: %+v", left[0])
	}
}
