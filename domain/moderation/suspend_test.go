package moderation

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shelf/domain"
)

// TestReasonRule: a suspension's reason follows the one rule of text
// people read: lines allowed, other invisible characters not, one code
// for its length whatever the length.
func TestReasonRule(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for in, code := range map[string]string{
		"spam\nsee the report":      "",
		"":                          "length",
		strings.Repeat("r", 501):    "length",
		strings.Repeat("r", 100000): "length",
		"spam\u3164":                "invalid_characters",
		"spam\u2028again":           "invalid_characters",
		"spam\a":                    "invalid_characters",
	} {
		reason, err := checkSuspend(SuspendInput{Reason: in}, now, "u_admin", "u_user")
		if code == "" {
			if err != nil || reason != in {
				t.Errorf("%q: %q, %v", in, reason, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "reason" || de.Fields[0].Code != code {
			t.Errorf("%.30q: %v, want reason %s", in, err, code)
		}
	}
}

// TestAnUntilLessThanAMillisecondAheadIsRefused (bad input gets a clear
// answer): an until half a millisecond after now is in the future as
// sent, but a suspension keeps its times in milliseconds (the database's
// timestamp), so it was stored as now: the admin got 201 for a suspension
// that ended as it began, blocked no login (its until had passed) and
// was lifted at once, yet ended every session of the user in its write.
// Checked as stored, it is refused naming until, as a past one is; one a
// whole millisecond ahead is taken.
func TestAnUntilLessThanAMillisecondAheadIsRefused(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	checkUntils(t, now, map[time.Time]string{
		now.Add(500 * time.Microsecond): "not_future",
		now.Add(999 * time.Microsecond): "not_future",
		now.Add(time.Millisecond):       "",
	})
}

// checkUntils checks each until at now: taken when its code is "",
// else refused naming until with that code.
func checkUntils(t *testing.T, now time.Time, cases map[time.Time]string) {
	t.Helper()
	for until, code := range cases {
		_, err := checkSuspend(SuspendInput{Reason: "spam", Until: &until}, now, "u_admin", "u_user")
		if code == "" {
			if err != nil {
				t.Errorf("until %v: %v", until, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "until" || de.Fields[0].Code != code {
			t.Errorf("until %v (%v in UTC), now %v: %v, want until %s", until, until.UTC(), now, err, code)
		}
	}
}

// TestAnUntilPastYear9999IsRefused (bad input gets a clear answer): any
// RFC 3339 time is taken for until, and one written with a negative
// offset on the last day of 9999 is in year 10000 in UTC, which no answer
// can write as RFC 3339 (the suspension, its history and its audit entry
// carry it, in UTC): refused naming until, as a past one is. So is one
// late in 9999 in UTC, where a username's hold the suspension moves on
// would end in year 10000 (TestASuspensionsEndLeavesRoomForTheHoldItMovesOn
// in handlers): until is before latestUntil.
func TestAnUntilPastYear9999IsRefused(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	last, err := time.Parse(time.RFC3339, "9999-12-31T23:59:59-23:59")
	if err != nil {
		t.Fatal(err)
	}
	checkUntils(t, now, map[time.Time]string{
		time.Date(9899, 12, 31, 23, 59, 59, 999_000_000, time.UTC): "",
		latestUntil: "range",
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC): "range",
		last: "range",
	})
}
