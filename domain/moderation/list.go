package moderation

import (
	"context"
	"errors"
	"strconv"
	"time"

	"shelf/domain"
)

// Cursor is a position in the suspended list.
type Cursor struct {
	Bucket      string
	SuspendedAt time.Time
	UserID      string
}

// Encode makes the opaque cursor a client sends back.
func (c Cursor) Encode() string {
	return domain.EncodeCursor(c.Bucket, strconv.FormatInt(c.SuspendedAt.UnixMilli(), 10), c.UserID)
}

// cursorOf is the position of s in the list.
func cursorOf(s domain.Suspension) string {
	return Cursor{Bucket: s.Bucket, SuspendedAt: s.SuspendedAt, UserID: s.UserID}.Encode()
}

// DecodeCursor reads a cursor from Encode.
func DecodeCursor(s string) (*Cursor, error) {
	f, err := domain.DecodeCursor(s, 3)
	if err != nil {
		return nil, err
	}
	at, err := domain.CursorTime(f[1])
	if _, perr := time.Parse(time.DateOnly, f[0]); err != nil || perr != nil || !domain.ValidID(f[2], domain.UserIDPrefix) {
		return nil, domain.ErrBadCursor
	}
	return &Cursor{Bucket: f[0], SuspendedAt: at, UserID: f[2]}, nil
}

// Bucket sizes of the suspended list.
const (
	BucketMonth = "month"
	BucketWeek  = "week"
	BucketDay   = "day"
)

// BucketOf names the bucket t falls in: the bucket's first day as
// YYYY-MM-DD, so buckets sort by time whatever their size.
func BucketOf(t time.Time, size string) string {
	t = t.UTC()
	switch size {
	case BucketDay:
	case BucketWeek:
		t = t.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7)) // back to Monday
	default:
		t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return t.Format(time.DateOnly)
}

// GetSuspension returns a user's suspension (admins only).
func (m *Service) GetSuspension(ctx context.Context, p domain.Principal, userID string) (domain.Suspension, error) {
	if _, err := m.admins.RequireAdmin(ctx, p); err != nil {
		return domain.Suspension{}, err
	}
	if !domain.ValidID(userID, domain.UserIDPrefix) {
		return domain.Suspension{}, domain.ErrUserNotFound
	}
	u, err := m.users.Standing(ctx, userID)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !u.Visible()) {
		return domain.Suspension{}, domain.ErrUserNotFound
	}
	if err != nil {
		return domain.Suspension{}, err
	}
	if u.Status != domain.StatusSuspended || u.Suspension == nil {
		return domain.Suspension{}, errNotSuspended
	}
	return *u.Suspension, nil
}

// ListSuspended pages through the suspended, newest first (admins only).
// A page reads the bucket index once (again only when stale index entries
// left it short) and then one slice per bucket it touches, however many
// users are suspended (S4).
func (m *Service) ListSuspended(ctx context.Context, p domain.Principal, cursor string, limit int) (domain.Page[domain.Suspension], error) {
	if p.Anonymous() {
		return domain.Page[domain.Suspension]{}, domain.ErrNoSession
	}
	var after *Cursor
	if cursor != "" {
		var err error
		if after, err = DecodeCursor(cursor); err != nil {
			// Who may not list learns that first, not what a cursor looks like.
			if _, aerr := m.admins.RequireAdmin(ctx, p); aerr != nil {
				return domain.Page[domain.Suspension]{}, aerr
			}
			return domain.Page[domain.Suspension]{}, err
		}
	}
	// The admin check and the page's reads go out together (one round trip
	// less); the page is shown only if the check passes.
	var items []domain.Suspension
	var adminErr, pageErr error
	domain.Parallel(ctx, 2, func(ctx context.Context, i int) {
		if i == 0 {
			_, adminErr = m.admins.RequireAdmin(ctx, p)
		} else {
			items, pageErr = m.suspensions.Page(ctx, after, limit+1)
		}
	})
	if adminErr != nil {
		return domain.Page[domain.Suspension]{}, adminErr
	}
	if pageErr != nil {
		return domain.Page[domain.Suspension]{}, pageErr
	}
	return domain.PageOf(items, limit, cursorOf), nil
}
