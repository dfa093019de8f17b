package moderation

import (
	"testing"
	"time"

	"shelf/domain"
)

// FuzzHistoryCursor: every history cursor that decodes survives a round
// trip, and names one of the kinds.
func FuzzHistoryCursor(f *testing.F) {
	f.Add(HistoryCursor{At: time.UnixMilli(1763769600000), Kind: EventExpired}.Encode())
	for _, s := range []string{"", "bogus", domain.EncodeCursor("1", "banned"), domain.EncodeCursor("x", "suspended"), "!!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeHistoryCursor(s)
		if err != nil {
			return
		}
		if c.Kind != EventSuspended && c.Kind != EventUnsuspended && c.Kind != EventExpired {
			t.Fatalf("%q: decoded the kind %q", s, c.Kind)
		}
		again, err := DecodeHistoryCursor(c.Encode())
		if err != nil || !again.At.Equal(c.At) || again.Kind != c.Kind {
			t.Fatalf("%q: %+v does not survive a round trip (%+v, %v)", s, c, again, err)
		}
	})
}

// TestEventTimesIncrease: an event is later than the one before it even
// when the clock that stamps it is behind, so no two events of an account
// share a history key.
func TestEventTimesIncrease(t *testing.T) {
	t.Parallel()
	prev := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, now := range []time.Time{prev.Add(-time.Hour), prev, prev.Add(time.Millisecond), prev.Add(time.Hour)} {
		if got := after(now, prev); !got.After(prev) || (now.After(prev) && !got.Equal(now)) {
			t.Errorf("after(%v, %v) = %v", now, prev, got)
		}
	}
	s := domain.Suspension{UserID: "u_x", Reason: "spam", SuspendedAt: prev, SuspendedBy: "u_admin", Until: prev.Add(time.Hour)}
	events := LiftEvents(domain.Lift{Kind: domain.LiftExpired, At: s.Until, Suspension: s})
	if len(events) != 2 || events[0] != SuspendedEvent(s) || events[1].Kind != EventExpired || events[1].Actor != "" ||
		!events[1].At.Equal(s.Until) || events[1].Reason != "spam" || !events[1].SuspendedAt.Equal(prev) {
		t.Fatalf("the events of an expiry: %+v", events)
	}
}
