package domain

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Page is one page of a list, in the list's order.
type Page[T any] struct {
	Items []T
	// Next is the cursor of the next page; empty on the last.
	Next string
}

// PageOf makes the page of items that were read with limit+1 (one more than
// is shown, so the last page is known without another read): at most limit
// items and, when more follow, the cursor of the last one shown.
func PageOf[T any](items []T, limit int, cursor func(last T) string) Page[T] {
	if len(items) <= limit {
		return Page[T]{Items: items}
	}
	items = items[:limit]
	return Page[T]{Items: items, Next: cursor(items[limit-1])}
}

// EncodeCursor makes the opaque cursor of a position in a list from its
// fields (none may hold '|'). Every list encodes its cursors this way.
func EncodeCursor(fields ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(fields, "|")))
}

// DecodeCursor reads the n fields of a cursor made by EncodeCursor;
// anything else is ErrBadCursor. The caller checks each field's form.
func DecodeCursor(s string, n int) ([]string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadCursor
	}
	fields := strings.Split(string(raw), "|")
	if len(fields) != n {
		return nil, ErrBadCursor
	}
	return fields, nil
}

// CursorTime reads a cursor's time, in milliseconds since the epoch.
// Go's zero time is refused: the driver sends it as an empty value,
// no time a row has, as a slice's bound
// (TestCursorsRefuseTheZeroTime).
func CursorTime(field string) (time.Time, error) {
	ms, err := strconv.ParseInt(field, 10, 64)
	t := time.UnixMilli(ms).UTC()
	if err != nil || t.IsZero() {
		return time.Time{}, ErrBadCursor
	}
	return t, nil
}
