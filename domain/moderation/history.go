package moderation

import (
	"context"
	"errors"
	"strconv"
	"time"

	"shelf/domain"
)

// EventKind is what happened to an account in its moderation history.
type EventKind string

// The kinds of history entries (a closed set: openapi.yaml's
// ModerationEventKind).
const (
	EventSuspended   EventKind = "suspended"
	EventUnsuspended EventKind = EventKind(domain.LiftUnsuspended)
	EventExpired     EventKind = EventKind(domain.LiftExpired)
)

// Event is one entry of an account's moderation history. Its key, (user,
// At, Kind), and everything in it come from the account row's
// compare-and-set that made the event, so every write of one event, a
// retry's, a repair's or one landing late, writes the same row.
type Event struct {
	UserID string
	Kind   EventKind
	// At is when it happened: the suspension's SuspendedAt, or the lift's At.
	At time.Time
	// Actor is the admin who acted; empty for an expiry.
	Actor string
	// Reason, SuspendedAt and Until are those of the suspension the event
	// began or ended (Until zero: until lifted).
	Reason      string
	SuspendedAt time.Time
	Until       time.Time
}

// SuspendedEvent is the history entry of a suspension.
func SuspendedEvent(s domain.Suspension) Event {
	return Event{UserID: s.UserID, Kind: EventSuspended, At: s.SuspendedAt, Actor: s.SuspendedBy,
		Reason: s.Reason, SuspendedAt: s.SuspendedAt, Until: s.Until}
}

// LiftEvents are the history entries a lift makes sure of: the suspension
// it ended (whose own entry an interrupted Suspend may have left unwritten)
// and the lift itself.
func LiftEvents(l domain.Lift) []Event {
	s := l.Suspension
	return []Event{SuspendedEvent(s), {UserID: s.UserID, Kind: EventKind(l.Kind), At: l.At, Actor: l.By,
		Reason: s.Reason, SuspendedAt: s.SuspendedAt, Until: s.Until}}
}

// HistoryCursor is a position in an account's history.
type HistoryCursor struct {
	At   time.Time
	Kind EventKind
}

// Encode makes the opaque cursor a client sends back.
func (c HistoryCursor) Encode() string {
	return domain.EncodeCursor(strconv.FormatInt(c.At.UnixMilli(), 10), string(c.Kind))
}

// DecodeHistoryCursor reads a cursor from Encode.
func DecodeHistoryCursor(s string) (*HistoryCursor, error) {
	f, err := domain.DecodeCursor(s, 2)
	if err != nil {
		return nil, err
	}
	at, err := domain.CursorTime(f[0])
	switch k := EventKind(f[1]); {
	case err != nil, k != EventSuspended && k != EventUnsuspended && k != EventExpired:
		return nil, domain.ErrBadCursor
	}
	return &HistoryCursor{At: at, Kind: EventKind(f[1])}, nil
}

// History pages through an account's moderation history, newest first
// (admins only). The admin check, the account's read (404 for no such
// user) and the page's one slice go out together.
func (m *Service) History(ctx context.Context, p domain.Principal, userID, cursor string, limit int) (domain.Page[Event], error) {
	if p.Anonymous() {
		return domain.Page[Event]{}, domain.ErrNoSession
	}
	var after *HistoryCursor
	var bad error
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		bad = domain.ErrUserNotFound
	} else if cursor != "" {
		after, bad = DecodeHistoryCursor(cursor)
	}
	if bad != nil {
		// Who may not look learns that first, not what an id or a cursor
		// looks like.
		if _, err := m.admins.RequireAdmin(ctx, p); err != nil {
			return domain.Page[Event]{}, err
		}
		return domain.Page[Event]{}, bad
	}
	var items []Event
	var user domain.Standing
	var adminErr, userErr, pageErr error
	domain.Parallel(ctx, 3, func(ctx context.Context, i int) {
		switch i {
		case 0:
			_, adminErr = m.admins.RequireAdmin(ctx, p)
		case 1:
			user, userErr = m.users.Standing(ctx, userID)
		default:
			items, pageErr = m.suspensions.History(ctx, userID, after, limit+1)
		}
	})
	switch {
	case adminErr != nil:
		return domain.Page[Event]{}, adminErr
	case errors.Is(userErr, domain.ErrNotFound) || (userErr == nil && !user.Visible()):
		return domain.Page[Event]{}, domain.ErrUserNotFound
	case userErr != nil:
		return domain.Page[Event]{}, userErr
	case pageErr != nil:
		return domain.Page[Event]{}, pageErr
	}
	return domain.PageOf(items, limit, func(e Event) string { return HistoryCursor{At: e.At, Kind: e.Kind}.Encode() }), nil
}
