package domain

import (
	"errors"
	"testing"
	"time"
)

// TestEnteredRefusesAnEntryAcknowledgedPastTheGrant: an entry's write
// acknowledged within EntryGrant of its time lets the attempt go on; one
// acknowledged later, whatever the write answered, does not (the reader
// of the index may have passed it), and a failed write stays that error.
func TestEnteredRefusesAnEntryAcknowledgedPastTheGrant(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	failed := errors.New("write failed")
	for _, c := range []struct {
		name  string
		err   error
		after time.Duration
		want  error
	}{
		{"at once", nil, 0, nil},
		{"at the grant", nil, EntryGrant, nil},
		{"past the grant", nil, EntryGrant + time.Millisecond, ErrUnavailable},
		{"failed in time", failed, time.Second, failed},
		{"failed late", failed, time.Hour, failed},
	} {
		got := Entered(c.err, at, at.Add(c.after))
		if (c.want == nil) != (got == nil) || (c.want != nil && !errors.Is(got, c.want)) {
			t.Errorf("%s: Entered = %v, want %v", c.name, got, c.want)
		}
	}
}
