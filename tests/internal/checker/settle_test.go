package checker

import (
	"testing"
	"time"
)

func TestSettledWaitsOutTheLastSuspension(t *testing.T) {
	floor := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	late := floor.Add(20 * time.Second)
	events := []Event{
		{Op: "suspend", Args: map[string]string{"until": floor.Add(-time.Minute).Format(time.RFC3339)}},
		{Op: "suspend", Args: map[string]string{"until": late.Format(time.RFC3339)}, Status: 0}, // unanswered
		{Op: "suspend", Args: map[string]string{"until": ""}},
		{Op: "unsuspend", Args: map[string]string{"until": floor.Add(time.Hour).Format(time.RFC3339)}},
	}
	if got, want := Settled(events, floor), late.Add(SweepSlack); !got.Equal(want) {
		t.Errorf("settled = %v, want %v (the latest suspend's end plus the slack)", got, want)
	}
	if got := Settled(events[:1], floor); !got.Equal(floor) {
		t.Errorf("settled with only a past end = %v, want the floor %v", got, floor)
	}
}
