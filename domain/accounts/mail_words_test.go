package accounts

import (
	"strings"
	"testing"
	"time"
)

// TestALinksLifeIsSaidInWords: a mail says how long its link works as a
// person would ("7 days", "1 hour"), not as Go prints a duration
// ("168h0m0s").
func TestALinksLifeIsSaidInWords(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour:      "7 days",
		24 * time.Hour:          "1 day",
		time.Hour:               "1 hour",
		36 * time.Hour:          "36 hours",
		30 * time.Minute:        "30 minutes",
		time.Minute:             "1 minute",
		90 * time.Second:        "90 seconds",
		1500 * time.Millisecond: "1.5s",
	} {
		if got := inWords(d); got != want {
			t.Errorf("inWords(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestALockedLoginsWaitIsSaidInWords: the wait of a refused attempt is
// rounded up, to the second under two minutes and to the minute past,
// and said as a person would ("1 second", "1 hour"), never "0 seconds".
func TestALockedLoginsWaitIsSaidInWords(t *testing.T) {
	for wait, want := range map[time.Duration]string{
		0:                                  "1 second",
		300 * time.Millisecond:             "1 second",
		time.Second:                        "1 second",
		1500 * time.Millisecond:            "2 seconds",
		119 * time.Second:                  "119 seconds",
		119*time.Second + time.Millisecond: "2 minutes",
		150 * time.Second:                  "3 minutes",
		59*time.Minute + time.Second:       "1 hour",
	} {
		got := tooManyAttempts(wait).Error()
		if !strings.Contains(got, "Try again in "+want+".") {
			t.Errorf("tooManyAttempts(%v) = %q, want it to say %q", wait, got, want)
		}
	}
}
