package handlers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"shelf/domain"
)

// TestTimestampsHaveMilliseconds (openapi.yaml's conventions): every time
// an answer carries is UTC with exactly three fractional digits, whatever
// the zone and precision of the time.Time behind it, so the strings sort
// as the times do; a problem's times (a suspended login's suspendedAt and
// until) are written the same way.
func TestTimestampsHaveMilliseconds(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 27, 10, 0, 2, 340_000_000, time.UTC), `"2026-11-27T10:00:02.340Z"`},
		{time.Date(2026, 11, 27, 10, 0, 2, 333_000_000, time.UTC), `"2026-11-27T10:00:02.333Z"`},
		{time.Date(2026, 11, 27, 10, 0, 2, 0, time.UTC), `"2026-11-27T10:00:02.000Z"`},
		{time.Date(2026, 11, 27, 10, 0, 2, 999_999_999, time.UTC), `"2026-11-27T10:00:02.999Z"`},
		{time.Date(2026, 11, 27, 11, 0, 2, 5_000_000, paris), `"2026-11-27T10:00:02.005Z"`},
	} {
		b, err := json.Marshal(stamp(c.in))
		if err != nil || string(b) != c.want {
			t.Errorf("%v: %s (%v), want %s", c.in, b, err, c.want)
		}
	}
	if optionalStamp(time.Time{}) != nil {
		t.Errorf("a zero time is written, want it left out")
	}

	s := domain.Suspension{SuspendedAt: time.Date(2026, 11, 27, 10, 0, 2, 340_000_000, time.UTC),
		Until: time.Date(2026, 12, 1, 0, 0, 0, 0, paris)}
	b, err := json.Marshal(toProblem(domain.ErrSuspended(s)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"suspendedAt":"2026-11-27T10:00:02.340Z"`, `"until":"2026-11-30T23:00:00.000Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("problem %s: want %s", b, want)
		}
	}
}
