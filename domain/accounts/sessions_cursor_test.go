package accounts

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"shelf/domain"
)

// TestSessionCursorsRefuseTheZeroTime: a cursor is opaque, but a caller
// can make one, and the session list's counts microseconds, not the
// milliseconds domain.CursorTime reads. Its time at exactly 0001-01-01
// decoded to Go's zero time, which the driver sends as an empty value,
// so the slice's bound was no time at all (TestCursorsRefuseTheZeroTime
// of handlers, for the other lists). It is refused as bad_cursor, and
// the microsecond after it still reads.
func TestSessionCursorsRefuseTheZeroTime(t *testing.T) {
	t.Parallel()
	id := domain.NewID(domain.SessionIDPrefix)
	zero := time.Time{}.UnixMicro()
	if _, err := decodeSessionCursor(domain.EncodeCursor(strconv.FormatInt(zero, 10), id)); !errors.Is(err, domain.ErrBadCursor) {
		t.Errorf("a session cursor at the zero time answered %v, want bad_cursor", err)
	}
	k, err := decodeSessionCursor(domain.EncodeCursor(strconv.FormatInt(zero+1, 10), id))
	if err != nil || k.At.IsZero() {
		t.Errorf("a session cursor a microsecond after the zero time answered %+v, %v", k, err)
	}
}
