package library

import (
	"strconv"
	"time"

	"shelf/domain"
)

// Order is the order a library page lists its items in.
type Order string

const (
	// NewestFirst lists the newest lastModified first, ties by id
	// descending: the buckets' clustering order. The default.
	NewestFirst Order = "newest"
	// OldestFirst lists the oldest first, ties by id ascending: the same
	// partition sliced the other way, at the same cost.
	OldestFirst Order = "oldest"
)

// errBadOrder refuses an order that is neither newest nor oldest.
var errBadOrder = domain.Invalid("order must be newest or oldest.",
	domain.FieldError{Field: "order", Code: "oneof", Message: "must be newest or oldest"})

// ParseOrder reads ?order=. Anything but newest or oldest, the empty
// string too, is refused naming order (a caller who wants the default
// leaves the parameter out).
func ParseOrder(s string) (Order, error) {
	switch o := Order(s); o {
	case NewestFirst, OldestFirst:
		return o, nil
	}
	return "", errBadOrder
}

// errCursorOrder refuses a cursor made for the other order: read in the
// wrong direction it would list the items before it again, not the ones
// after.
func errCursorOrder(made Order) error {
	return domain.Invalid("The cursor was made for order="+string(made)+"; ask for that order or start again without a cursor.",
		domain.FieldError{Field: "cursor", Code: "wrong_order", Message: "was made for order=" + string(made)})
}

// Cursor is a position in one paging run through a library: the last
// item shown, in the run's order (or the last row read, when a page's
// refills ran out among rows it did not show).
type Cursor struct {
	Order Order
	// Until is when an oldest-first run began: the run lists only items
	// last modified before then. An item changed while the run pages moves
	// to the end, and would otherwise be listed twice; newest first it
	// moves before the cursor, so newest-first runs need no end (L2).
	Until        time.Time
	LastModified time.Time
	ContentID    string
}

// oldestTag opens the cursors of oldest-first runs. Newest-first cursors
// are two fields with no tag, the format of cursors already handed out,
// so those still read.
const oldestTag = "o"

// Encode makes the opaque cursor of a library page.
func (c Cursor) Encode() string {
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	if c.Order == OldestFirst {
		return domain.EncodeCursor(oldestTag, ms(c.Until), ms(c.LastModified), c.ContentID)
	}
	return domain.EncodeCursor(ms(c.LastModified), c.ContentID)
}

// DecodeCursor reads a cursor from Encode; anything else is ErrBadCursor.
// An oldest-first cursor whose item is not before its run's end was not
// made here either.
func DecodeCursor(s string) (*Cursor, error) {
	c := Cursor{Order: NewestFirst}
	f, err := domain.DecodeCursor(s, 2)
	if err != nil {
		if f, err = domain.DecodeCursor(s, 4); err != nil || f[0] != oldestTag {
			return nil, domain.ErrBadCursor
		}
		until, err := domain.CursorTime(f[1])
		if err != nil {
			return nil, domain.ErrBadCursor
		}
		c.Order, c.Until, f = OldestFirst, until, f[2:]
	}
	at, err := domain.CursorTime(f[0])
	if err != nil || !domain.ValidID(f[1], domain.ContentIDPrefix) {
		return nil, domain.ErrBadCursor
	}
	c.LastModified, c.ContentID = at, f[1]
	if c.Order == OldestFirst && !c.LastModified.Before(c.Until) {
		return nil, domain.ErrBadCursor
	}
	return &c, nil
}

// run is one paging run through a library: its order and, oldest first,
// its end (Cursor.Until).
type run struct {
	order Order
	until time.Time
}

// runOf is the run a page belongs to: a new one without a cursor (oldest
// first, ending now), else the cursor's, which must be of the order asked
// for.
func (s *Service) runOf(order Order, cursor string) (run, *Cursor, error) {
	if _, err := ParseOrder(string(order)); err != nil {
		return run{}, nil, err
	}
	if cursor == "" {
		r := run{order: order}
		if order == OldestFirst {
			r.until = s.now()
		}
		return r, nil, nil
	}
	c, err := DecodeCursor(cursor)
	if err != nil {
		return run{}, nil, err
	}
	if c.Order == OldestFirst && c.Until.After(s.now().Add(domain.ClockSkew)) {
		// A run ends when its first page was read, by some process's
		// clock: one far ahead was made by no process, and would list
		// again every item changed while it pages, without end.
		return run{}, nil, domain.ErrBadCursor
	}
	if c.Order != order {
		return run{}, nil, errCursorOrder(c.Order)
	}
	return run{order: c.Order, until: c.Until}, c, nil
}

// at is the run's position at e.
func (r run) at(e Entry) *Cursor {
	return &Cursor{Order: r.order, Until: r.until, LastModified: e.LastModified, ContentID: e.ContentID}
}

// lists reports whether the run lists e at all: oldest first, items last
// modified since the run began are past its end.
func (r run) lists(e Entry) bool { return r.until.IsZero() || e.LastModified.Before(r.until) }
