package accounts

import (
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
