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
// Also when the late attempt lands a second after the ten minutes and the
// confirmation reaches a process whose clock runs two seconds behind
// (the skew tests/nemesis/skewedapi gives one API): by that clock alone
// the enrolment is 9m59s old, by the node's (which expired the row) over
// ten minutes, and it is gone.
func TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		landsAfter    time.Duration // from the enrolment's start
		processBehind time.Duration
	}{
		{"landing a minute after, the process on time", 11 * time.Minute, 0},
		{"landing a second after, the process two seconds behind", 10*time.Minute + time.Second, 2 * time.Second},
	} {
		m := newMailWorld(t, false)
		m.verify(t)
		totp := withFactors(t, m, nil)
		ctx := context.Background()
		p := domain.Principal{UserID: m.ann.ID}
		e, begun := enrolPhone(t, m)
		m.store.Advance(tc.landsAfter)
		if left, _, err := m.store.Factors().Read(ctx, m.ann.ID); err != nil || len(left) != 0 {
			t.Fatalf("%s: ten minutes on the enrolment's row is still there: %+v %v", tc.name, left, err)
		}
		// The held first attempt lands: the same statement, its TTL from now.
		if err := m.store.Factors().Begin(ctx, begun, 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		m.rewire(func(st *memstore.Store, c *accounts.Config) {
			c.Now = func() time.Time { return st.Now().Add(-tc.processBehind) }
		})
		code, err := totp.Code(begun.Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, code)
		var refusal *domain.Error
		if !errors.As(err, &refusal) {
			t.Fatalf("%s: the confirmation answered %v; want it refused as gone", tc.name, err)
		}
		if left, _, _ := m.store.Factors().Read(ctx, m.ann.ID); len(left) > 0 && left[0].Confirmed() {
			t.Fatalf("%s: the late enrolment was confirmed: %+v", tc.name, left[0])
		}
	}
}

// TestAnEnrolmentBegunAheadAndWrittenAgainCannotBeConfirmed: as
// TestAnEnrolmentWrittenAgainAfterItsTenMinutesCannotBeConfirmed, but the
// skew is at the start: the process that begins ann's enrolment runs two
// seconds ahead (tests/nemesis/skewedapi), so the start it records is two
// seconds after the node wrote the row. The row expires ten minutes after
// it was written, by the node's clock; the held first attempt of its
// insert lands a second later and writes it pending anew; a confirmation
// on a process on time then finds it 9m59s old by its own clock and by
// the node's, and confirms an enrolment begun over ten minutes ago.
func TestAnEnrolmentBegunAheadAndWrittenAgainCannotBeConfirmed(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	ctx := context.Background()
	p := domain.Principal{UserID: m.ann.ID}
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Now = func() time.Time { return st.Now().Add(2 * time.Second) }
	})
	e, begun := enrolPhone(t, m)
	m.rewire(func(st *memstore.Store, c *accounts.Config) { c.Now = st.Now })
	m.store.Advance(10*time.Minute + time.Second)
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
		t.Fatalf("the confirmation answered %v; want it refused as gone", err)
	}
	if left, _, _ := m.store.Factors().Read(ctx, m.ann.ID); len(left) > 0 && left[0].Confirmed() {
		t.Fatalf("the late enrolment, begun over ten minutes ago, was confirmed: %+v", left[0])
	}
}
