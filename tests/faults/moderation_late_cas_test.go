package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"shelf/domain"
	"shelf/tests/memstore"
)

// TestAnAnswerThatTheUserIsNotSuspendedOutlivesALateSuspension: an admin
// suspends the member; the account's compare-and-set is held at a node
// (its answer lost: 503, outcome unknown). The admin, or another, then
// unsuspends, to be sure: not_suspended, and he stops there. The held
// compare-and-set lands afterwards, decided on the version both requests
// read, and the sweeper finishes the suspension's records: the member
// whom an admin was told is not suspended is suspended, listed and
// locked out until an admin happens to look again. The other way round, a
// suspension answered already_suspended after an unsuspension's held
// compare-and-set lets that lift land, and a member an admin was just
// told is suspended logs in. Either answer now fences the account (a
// compare-and-set of its version, as the sweeper's pass over interrupted
// attempts does) before it is given: a change decided on the row as it
// stood before can no longer land after it.
func TestAnAnswerThatTheUserIsNotSuspendedOutlivesALateSuspension(t *testing.T) {
	t.Parallel()
	for _, c := range lateCases {
		m := c.world(t)
		m.store.FaultAt = func(_ int, call string) memstore.Fault {
			if call == "users.update" {
				return memstore.LandLate
			}
			return memstore.None
		}
		if err := c.held(m); err == nil {
			t.Fatalf("%s: the held compare-and-set answered success", c.name)
		}
		m.store.FaultAt = nil
		c.answer(t, m)
		c.outlives(t, m)
	}
}

// lateCase is an admin's request answered code (the member is, or is
// not, suspended: suspended) and a compare-and-set of the other kind
// held at a node, which must not land after the answer.
type lateCase struct {
	name           string
	setup          func(m *modWorld) error
	held, answered func(m *modWorld) error
	code           string
	suspended      bool
}

// lateCases are both ways round: a suspension held and an unsuspension
// answered not_suspended; an unsuspension held and a suspension answered
// already_suspended.
var lateCases = []lateCase{
	{name: "a suspension held, an unsuspension answered not_suspended",
		held:     func(m *modWorld) error { return m.suspend(0) },
		answered: func(m *modWorld) error { return m.unsuspend() },
		code:     "not_suspended"},
	{name: "an unsuspension held, a suspension answered already_suspended",
		setup:     func(m *modWorld) error { return m.suspend(0) },
		held:      func(m *modWorld) error { return m.unsuspend() },
		answered:  func(m *modWorld) error { return m.suspend(0) },
		code:      "already_suspended",
		suspended: true},
}

// world is a moderation world after c's set-up.
func (c lateCase) world(t *testing.T) *modWorld {
	t.Helper()
	m := newAuditModWorld(t)
	if c.setup != nil {
		if err := c.setup(m); err != nil {
			t.Fatalf("%s: set-up: %v", c.name, err)
		}
	}
	return m
}

// answer runs c's answered request and checks its answer is c.code.
func (c lateCase) answer(t *testing.T, m *modWorld) {
	t.Helper()
	var refusal *domain.Error
	if err := c.answered(m); !errors.As(err, &refusal) || refusal.Code != c.code {
		t.Fatalf("%s: the request answered %v, want %s", c.name, err, c.code)
	}
}

// outlives lands every held write, runs the workers past the sweeper's
// grace and checks the member is as the answer said, and moderation whole.
func (c lateCase) outlives(t *testing.T, m *modWorld) {
	t.Helper()
	m.store.Land()
	m.store.Advance(2 * time.Minute)
	m.workers()
	u, err := m.store.Users().Get(context.Background(), m.member.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Status == domain.StatusSuspended; got != c.suspended {
		t.Errorf("%s: after the held write landed and the sweeper ran the member is %s, but the answer (%s) said suspended=%v",
			c.name, u.Status, c.code, c.suspended)
	}
	checkModeration(t, c.name, m)
}

// TestAnAnswerAfterALostFenceOutlivesALateChangeDecidedSince: an admin
// unsuspends a member who is not suspended, to be sure: his fence (the
// row as read, at the next version) is slow, and meanwhile another write
// of the account lands (the member's own change, an admin's rename) and
// a second admin's suspension, decided on the row that write left, is
// held at a node (its answer lost). The fence lost to that write, and
// the next round read the row it left, not suspended: answered
// not_suspended there without a fence of its own, it let the held
// suspension, decided on the very row it read, land after the answer,
// and the member an admin was just told is not suspended was locked
// out. The other way round, an already_suspended answered on a second
// round let a lift decided on the row it read land after it. Every round
// that answers so fences the row it read.
func TestAnAnswerAfterALostFenceOutlivesALateChangeDecidedSince(t *testing.T) {
	t.Parallel()
	for _, c := range lateCases {
		m := c.world(t)
		ctx := context.Background()
		fenced, held := false, false
		m.store.FaultAt = func(_ int, call string) memstore.Fault {
			switch {
			case call != "users.update":
				return memstore.None
			case !fenced:
				fenced = true
				return memstore.Slow // the first round's fence
			case held:
				return memstore.LandLate // the other admin's change
			}
			return memstore.None
		}
		m.store.Meanwhile = func() {
			m.store.Meanwhile = nil
			u, err := m.store.Users().Get(ctx, m.member.ID)
			if err != nil {
				t.Fatal(err)
			}
			u.Version++ // another write of the account
			if applied, err := m.store.Users().Update(ctx, u); err != nil || !applied {
				t.Fatalf("%s: the other write: %v %v", c.name, applied, err)
			}
			held = true
			if err := c.held(m); err == nil {
				t.Fatalf("%s: the held compare-and-set answered success", c.name)
			}
			held = false
		}
		c.answer(t, m)
		m.store.FaultAt = nil
		c.outlives(t, m)
	}
}
