package domain

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Suspension is why and since when an account is suspended.
type Suspension struct {
	UserID      string
	Username    string
	Reason      string
	SuspendedAt time.Time
	SuspendedBy string
	// Until is when it ends by itself; zero for "until lifted".
	Until time.Time
	// Bucket is the time bucket its status row lives in.
	Bucket string
}

// ActiveAt reports whether the suspension still blocks at t.
func (s Suspension) ActiveAt(t time.Time) bool { return s.Until.IsZero() || t.Before(s.Until) }

// SuspensionStore keeps the records derived from an account's suspension:
// its row in the suspended list (users_by_status), the reverse lookup
// (suspended_users), the expiry entry and the bucket index. Writes carry the
// account version as their timestamp, so the records of an older change
// never overwrite or resurrect those of a newer one, whatever the order
// they arrive in, and repeating a write is harmless.
type SuspensionStore interface {
	// Record writes the suspension's records.
	Record(ctx context.Context, s Suspension, version int) error
	// Erase deletes them, and the bucket's index entry if it is now empty.
	Erase(ctx context.Context, s Suspension, version int) error
	// EraseListing is Erase without the reverse lookup, for the records of
	// an old suspension of an account that is suspended again (its lookup
	// row, keyed by user alone, belongs to the current suspension).
	EraseListing(ctx context.Context, s Suspension, version int) error
	// Lookup reads the reverse lookup (ErrNotFound when there is none).
	Lookup(ctx context.Context, userID string) (Suspension, error)
	// Page returns up to limit suspensions, newest first (ties by user id,
	// descending), after the cursor (nil: from the start).
	Page(ctx context.Context, after *SuspensionCursor, limit int) ([]Suspension, error)
	// Expired returns up to limit expiry entries (UserID and Until set)
	// whose end is at or before t.
	Expired(ctx context.Context, t time.Time, limit int) ([]Suspension, error)
	// EraseExpiry deletes one expiry entry.
	EraseExpiry(ctx context.Context, userID string, until time.Time, version int) error
}

// SuspensionCursor is a position in the suspended list.
type SuspensionCursor struct {
	Bucket      string
	SuspendedAt time.Time
	UserID      string
}

// Encode makes the opaque cursor a client sends back.
func (c SuspensionCursor) Encode() string {
	raw := c.Bucket + "|" + strconv.FormatInt(c.SuspendedAt.UnixMilli(), 10) + "|" + c.UserID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// errBadCursor: a cursor this service did not make.
var errBadCursor = Invalid("The cursor is not valid; start again without one.",
	FieldError{Field: "cursor", Code: "invalid", Message: "is not a cursor this list returned"})

// DecodeSuspensionCursor reads a cursor from Encode.
func DecodeSuspensionCursor(s string) (*SuspensionCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errBadCursor
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || !ValidID(parts[2], UserIDPrefix) {
		return nil, errBadCursor
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if _, perr := time.Parse(time.DateOnly, parts[0]); err != nil || perr != nil {
		return nil, errBadCursor
	}
	return &SuspensionCursor{Bucket: parts[0], SuspendedAt: time.UnixMilli(ms).UTC(), UserID: parts[2]}, nil
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

// ModerationConfig holds the moderation tunables.
type ModerationConfig struct {
	// BucketSize is month, week or day.
	BucketSize string
	// Now is the clock; tests move it.
	Now func() time.Time
}

// ModerationHooks let tests stop an operation after a step, as a crash
// would: the operation returns the hook's error at once.
type ModerationHooks struct {
	// AfterStep is called with "cas" (the account changed), "records"
	// (the derived records written or erased) and "sessions".
	AfterStep func(op, step string) error
}

// Moderation is suspending and unsuspending accounts and listing the
// suspended.
type Moderation struct {
	cfg         ModerationConfig
	accounts    *Accounts
	users       UserStore
	sessions    SessionStore
	suspensions SuspensionStore
	// Hooks are nil in production.
	Hooks ModerationHooks
}

// NewModeration wires the service; it shares the accounts' stores.
func NewModeration(cfg ModerationConfig, accounts *Accounts, suspensions SuspensionStore) *Moderation {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Moderation{cfg: cfg, accounts: accounts, users: accounts.users, sessions: accounts.sessions, suspensions: suspensions}
}

// SetClock replaces the clock (tests spread suspensions over buckets).
func (m *Moderation) SetClock(now func() time.Time) { m.cfg.Now = now }

var (
	errAlreadySuspended = &Error{Kind: ErrConflict, Code: "already_suspended", Message: "The user is already suspended."}
	errNotSuspended     = &Error{Kind: ErrNotFound, Code: "not_suspended", Message: "The user is not suspended."}
)

// SuspendInput is a suspension request.
type SuspendInput struct {
	Reason string
	Until  *time.Time
}

func (m *Moderation) now() time.Time { return m.cfg.Now().UTC().Truncate(time.Millisecond) }

func (m *Moderation) hook(op, step string) error {
	if m.Hooks.AfterStep == nil {
		return nil
	}
	return m.Hooks.AfterStep(op, step)
}

// Suspend suspends an account (admins only, not themselves). The account
// row changes first, by compare-and-set on its version: that is the guard
// of S1 and the point where the suspension takes effect. Then the list's
// records are written, then every session is revoked (S3). A suspension
// that was interrupted after the compare-and-set is finished by the next
// Suspend of the same user (which answers 409) or by Repair.
func (m *Moderation) Suspend(ctx context.Context, p Principal, userID string, in SuspendInput) (Suspension, error) {
	admin, err := m.accounts.RequireAdmin(ctx, p)
	if err != nil {
		return Suspension{}, err
	}
	now := m.now()
	reason := strings.TrimSpace(in.Reason)
	var fes []*FieldError
	if n := utf8.RuneCountInString(reason); n < 1 || n > 500 {
		fes = append(fes, &FieldError{Field: "reason", Code: "length", Message: "must be 1-500 characters"})
	} else if hasControl(reason) {
		fes = append(fes, &FieldError{Field: "reason", Code: "invalid_characters", Message: "must not contain control characters"})
	}
	if in.Until != nil && !in.Until.After(now) {
		fes = append(fes, &FieldError{Field: "until", Code: "not_future", Message: "must be in the future"})
	}
	if userID == admin.ID {
		fes = append(fes, &FieldError{Field: "userId", Code: "self", Message: "an admin cannot suspend themselves"})
	}
	if err := invalidFields(fes...); err != nil {
		return Suspension{}, err
	}
	if !ValidID(userID, UserIDPrefix) {
		return Suspension{}, errUserNotFound
	}
	for attempt := 0; attempt < maxChangeAttempts; attempt++ {
		u, err := m.users.GetSerial(ctx, userID)
		if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
			return Suspension{}, errUserNotFound
		}
		if err != nil {
			return Suspension{}, err
		}
		if u.Status == StatusSuspended && u.Suspension != nil {
			// Finish whatever an interrupted Suspend left undone.
			if err := m.finishSuspension(ctx, *u.Suspension, u.Version); err != nil {
				return Suspension{}, err
			}
			return Suspension{}, errAlreadySuspended
		}
		s := Suspension{UserID: u.ID, Username: u.Username, Reason: reason, SuspendedAt: now,
			SuspendedBy: admin.ID, Bucket: BucketOf(now, m.cfg.BucketSize)}
		if in.Until != nil {
			s.Until = in.Until.UTC().Truncate(time.Millisecond)
		}
		next := u
		next.Status, next.Suspension = StatusSuspended, &s
		next.Version, next.UpdatedAt = u.Version+1, now
		applied, err := m.users.Update(ctx, next)
		if err != nil {
			return Suspension{}, err
		}
		if !applied {
			continue
		}
		if err := m.hook("suspend", "cas"); err != nil {
			return Suspension{}, err
		}
		if err := m.finishSuspension(ctx, s, next.Version); err != nil {
			return Suspension{}, err
		}
		return s, nil
	}
	return Suspension{}, errBusy
}

// finishSuspension writes a suspension's records and revokes the sessions.
// Both are idempotent.
func (m *Moderation) finishSuspension(ctx context.Context, s Suspension, version int) error {
	if err := m.suspensions.Record(ctx, s, version); err != nil {
		return err
	}
	if err := m.hook("suspend", "records"); err != nil {
		return err
	}
	if err := m.sessions.DeleteAll(ctx, s.UserID, ""); err != nil {
		return err
	}
	return m.hook("suspend", "sessions")
}

// Unsuspend lifts a suspension (admins only): the account first, by
// compare-and-set, then the list's records. Unsuspending an account that is
// not suspended answers not_suspended, after erasing any records an
// interrupted Unsuspend left behind.
func (m *Moderation) Unsuspend(ctx context.Context, p Principal, userID string) error {
	if _, err := m.accounts.RequireAdmin(ctx, p); err != nil {
		return err
	}
	if !ValidID(userID, UserIDPrefix) {
		return errUserNotFound
	}
	return m.lift(ctx, userID, nil)
}

// lift ends the suspension of userID. With onlyIfExpiredAt set, it does so
// only if the suspension has ended by then (the sweeper's case).
func (m *Moderation) lift(ctx context.Context, userID string, onlyIfExpiredAt *time.Time) error {
	for attempt := 0; attempt < maxChangeAttempts; attempt++ {
		u, err := m.users.GetSerial(ctx, userID)
		if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
			return errUserNotFound
		}
		if err != nil {
			return err
		}
		if u.Status != StatusSuspended || u.Suspension == nil {
			if err := m.eraseLeftovers(ctx, u); err != nil {
				return err
			}
			return errNotSuspended
		}
		if onlyIfExpiredAt != nil && u.Suspension.ActiveAt(*onlyIfExpiredAt) {
			return errNotSuspended
		}
		old := *u.Suspension
		next := u
		next.Status, next.Suspension = StatusActive, nil
		next.Version, next.UpdatedAt = u.Version+1, m.now()
		applied, err := m.users.Update(ctx, next)
		if err != nil {
			return err
		}
		if !applied {
			continue
		}
		if err := m.hook("unsuspend", "cas"); err != nil {
			return err
		}
		if err := m.suspensions.Erase(ctx, old, next.Version); err != nil {
			return err
		}
		return m.hook("unsuspend", "records")
	}
	return errBusy
}

// eraseLeftovers removes the records of a suspension the account no longer
// has (an Unsuspend that stopped after its compare-and-set).
func (m *Moderation) eraseLeftovers(ctx context.Context, u User) error {
	s, err := m.suspensions.Lookup(ctx, u.ID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return m.suspensions.Erase(ctx, s, u.Version)
}

// GetSuspension returns a user's suspension (admins only).
func (m *Moderation) GetSuspension(ctx context.Context, p Principal, userID string) (Suspension, error) {
	if _, err := m.accounts.RequireAdmin(ctx, p); err != nil {
		return Suspension{}, err
	}
	if !ValidID(userID, UserIDPrefix) {
		return Suspension{}, errUserNotFound
	}
	u, err := m.users.Get(ctx, userID)
	if errors.Is(err, ErrNotFound) || (err == nil && !u.Visible()) {
		return Suspension{}, errUserNotFound
	}
	if err != nil {
		return Suspension{}, err
	}
	if u.Status != StatusSuspended || u.Suspension == nil {
		return Suspension{}, errNotSuspended
	}
	return *u.Suspension, nil
}

// SuspensionPage is one page of the suspended list.
type SuspensionPage struct {
	Items []Suspension
	// Next is the cursor of the next page; empty on the last.
	Next string
}

// ListSuspended pages through the suspended, newest first (admins only).
// A page reads the bucket index once and then one slice per bucket it
// touches, however many users are suspended (S4).
func (m *Moderation) ListSuspended(ctx context.Context, p Principal, cursor string, limit int) (SuspensionPage, error) {
	if p.Anonymous() {
		return SuspensionPage{}, errNoSession
	}
	var after *SuspensionCursor
	if cursor != "" {
		var err error
		if after, err = DecodeSuspensionCursor(cursor); err != nil {
			// Who may not list learns that first, not what a cursor looks like.
			if _, aerr := m.accounts.RequireAdmin(ctx, p); aerr != nil {
				return SuspensionPage{}, aerr
			}
			return SuspensionPage{}, err
		}
	}
	// The admin check and the page's reads go out together (one round trip
	// less); the page is shown only if the check passes.
	var items []Suspension
	var adminErr, pageErr error
	parallel(2, func(i int) {
		if i == 0 {
			_, adminErr = m.accounts.RequireAdmin(ctx, p)
		} else {
			items, pageErr = m.suspensions.Page(ctx, after, limit+1)
		}
	})
	if adminErr != nil {
		return SuspensionPage{}, adminErr
	}
	if pageErr != nil {
		return SuspensionPage{}, pageErr
	}
	page := SuspensionPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.Next = SuspensionCursor{Bucket: last.Bucket, SuspendedAt: last.SuspendedAt, UserID: last.UserID}.Encode()
	}
	return page, nil
}

// SweepExpired lifts suspensions whose end has passed, at most limit of
// them, and returns how many it lifted. Several sweepers may run at once:
// each lift is a compare-and-set.
func (m *Moderation) SweepExpired(ctx context.Context, limit int) (int, error) {
	now := m.cfg.Now().UTC()
	expired, err := m.suspensions.Expired(ctx, now, limit)
	if err != nil {
		return 0, err
	}
	lifted := 0
	var errs []error
	for _, s := range expired {
		err := m.lift(ctx, s.UserID, &now)
		switch {
		case err == nil:
			lifted++
		case errors.Is(err, ErrNotFound):
			// Lifted already, re-suspended with another end, or gone: the
			// entry is stale. Erase it at the account's version.
			errs = append(errs, m.eraseStaleExpiry(ctx, s))
		default:
			errs = append(errs, fmt.Errorf("lift %s: %w", s.UserID, err))
		}
	}
	return lifted, errors.Join(errs...)
}

// eraseStaleExpiry removes an expiry entry that no longer matches its
// account's suspension.
func (m *Moderation) eraseStaleExpiry(ctx context.Context, s Suspension) error {
	u, err := m.users.GetSerial(ctx, s.UserID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if u.Suspension != nil && u.Suspension.Until.Equal(s.Until) {
		return nil // still current: its turn comes when it ends
	}
	return m.suspensions.EraseExpiry(ctx, s.UserID, s.Until, u.Version)
}

// ErrSuspended builds the 403 a suspended account's login gets, once its
// password has matched.
func ErrSuspended(s Suspension) *Error {
	details := map[string]any{"suspendedAt": s.SuspendedAt}
	if !s.Until.IsZero() {
		details["until"] = s.Until
	}
	return &Error{Kind: ErrForbidden, Code: "suspended", Message: "This account is suspended.", Details: details}
}

// hasControl reports control characters other than ordinary line breaks
// and tabs.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return true
		}
	}
	return false
}
