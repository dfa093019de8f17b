package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"shelf/domain"
)

// Throttling of password guesses and of mail (docs/design.md#throttle):
// every attempt writes a row of its own under each of its
// scopes first, and only then counts the scope's rows. An attempt that
// finds more rows than its scope's limit, its own included, is refused
// before any password is verified; a password that matched removes its
// own rows, a wrong one leaves them to expire with the window. With the
// writes and reads at quorum, of k attempts at once the i-th whose write
// was acknowledged counts at least i rows, so no more than the limit are
// ever let through in a window, however many run at once on however many
// instances: the check-then-increment race of counters kept elsewhere
// (read the count, verify, then add one) does not exist here.

// Attempt is one attempt's own row: its id (random) and when it began.
type Attempt struct {
	ID string
	At time.Time
}

// AttemptStore keeps attempts per scope, each in a row of its own that
// expires with its window. Writes and reads are at quorum, so a count
// read after a write was acknowledged includes that write.
type AttemptStore interface {
	// Add writes one attempt's row under scope, living for ttl.
	Add(ctx context.Context, scope string, a Attempt, ttl time.Duration) error
	// List reads up to max of the scope's live attempts, oldest first.
	List(ctx context.Context, scope string, max int) ([]Attempt, error)
	// Remove deletes one attempt's row, so that a write of it landing
	// late stays deleted.
	Remove(ctx context.Context, scope string, a Attempt) error
}

// Throttle is what limits password guesses: per login (a username, an
// email, or an account's current password) and client address, and per
// login from every address. A limit of 0 turns its tier off.
type Throttle struct {
	Store AttemptStore
	// PerAddress is how many failed attempts one client address (IPv6:
	// its /64) may make at one login in a window.
	PerAddress int
	// PerLogin is how many failed attempts one login may take from every
	// address together in a window.
	PerLogin int
	// Window is how long a failed attempt counts.
	Window time.Duration
}

// SetThrottle turns the throttle of password guesses on, and with a
// store, the per-address limit of mail (Mail.PerAddress).
func (a *Service) SetThrottle(t Throttle) { a.throttle = t }

// maxCounted bounds the rows a count reads: a scope under attack holds its
// limit's failures and the attempts in flight; beyond this many the answer
// is "refused for a whole window" anyway.
const maxCounted = 512

// ErrThrottleUnavailable answers an attempt whose count could not be
// written or read: it is refused rather than let through uncounted
// (docs/design.md#throttle).
var ErrThrottleUnavailable = &domain.Error{Kind: domain.ErrUnavailable, Code: "unavailable",
	Message: "The database could not answer in time; try again."}

// tooManyAttempts is the refusal of an attempt over its limit: the same
// words for every login, known or not.
func tooManyAttempts(wait time.Duration) error {
	secs := int64((wait + time.Second - 1) / time.Second)
	return &domain.Error{Kind: domain.ErrTooManyAttempts, Code: "too_many_attempts", RetryAfter: wait,
		Message: fmt.Sprintf("Too many failed attempts for this login. Try again in %d seconds.", max(secs, 1))}
}

// tier is one scope and its limit.
type tier struct {
	scope string
	limit int
}

// counted is an attempt let through: its rows, removed by pass.
type counted struct {
	a       *Service
	attempt Attempt
	scopes  []string
}

// admit counts one attempt under every tier (limits of 0 left out), each
// row living for window. It refuses with ErrTooManyAttempts when any tier
// holds more than its limit, its own attempt included, and with
// ErrThrottleUnavailable when the store cannot answer: a row whose write
// failed may have landed and counts as a failure (nothing is undone on a
// guess). A refused attempt removes its rows (it guessed nothing, and a
// stranger's refused attempts must not prolong the lock of every
// address).
func (a *Service) admit(ctx context.Context, store AttemptStore, window time.Duration, tiers ...tier) (*counted, error) {
	tiers = slices.DeleteFunc(tiers, func(t tier) bool { return t.limit <= 0 })
	c := &counted{a: a, attempt: Attempt{ID: domain.NewAttempt(), At: a.now()}}
	if store == nil || len(tiers) == 0 {
		return c, nil
	}
	for _, t := range tiers {
		c.scopes = append(c.scopes, t.scope)
	}
	errs := make([]error, len(tiers))
	domain.Parallel(len(tiers), func(i int) {
		errs[i] = store.Add(ctx, tiers[i].scope, c.attempt, window)
	})
	if err := errors.Join(errs...); err != nil {
		a.log.Warn(ctx, "counting an attempt failed; refused", "error", err.Error())
		return nil, ErrThrottleUnavailable
	}
	waits := make([]time.Duration, len(tiers))
	domain.Parallel(len(tiers), func(i int) {
		var rows []Attempt
		rows, errs[i] = store.List(ctx, tiers[i].scope, maxCounted)
		waits[i] = a.overLimit(rows, c.attempt, tiers[i].limit, window)
	})
	if err := errors.Join(errs...); err != nil {
		a.log.Warn(ctx, "counting attempts failed; refused", "error", err.Error())
		return nil, ErrThrottleUnavailable
	}
	if wait := slices.Max(waits); wait > 0 {
		c.remove(ctx, store)
		return nil, tooManyAttempts(wait)
	}
	return c, nil
}

// overLimit returns 0 when rows (a scope's live attempts, oldest first,
// mine among them unless a replica lost it) hold no more than limit
// attempts, mine counted; otherwise how long until the others are few
// enough for one more to pass (a whole window if the count was cut at
// maxCounted).
func (a *Service) overLimit(rows []Attempt, mine Attempt, limit int, window time.Duration) time.Duration {
	now := a.now()
	var others []Attempt
	for _, r := range rows {
		// A replica's clock may keep a row a little past its TTL.
		if r.ID != mine.ID && r.At.Add(window).After(now) {
			others = append(others, r)
		}
	}
	if len(others)+1 <= limit {
		return 0
	}
	slices.SortFunc(others, func(x, y Attempt) int { return x.At.Compare(y.At) })
	if len(rows) >= maxCounted {
		return window
	}
	// The next attempt passes once all but limit-1 of the others expired.
	return max(others[len(others)-limit].At.Add(window).Sub(now), time.Second)
}

// pass removes a successful attempt's rows: a right password is no guess.
// A removal that fails leaves them to count as failures until they
// expire (safe, if unkind).
func (c *counted) pass(ctx context.Context, store AttemptStore) {
	if c != nil {
		c.remove(ctx, store)
	}
}

func (c *counted) remove(ctx context.Context, store AttemptStore) {
	if store == nil || len(c.scopes) == 0 {
		return
	}
	errs := make([]error, len(c.scopes))
	domain.Parallel(len(c.scopes), func(i int) { errs[i] = store.Remove(ctx, c.scopes[i], c.attempt) })
	if err := errors.Join(errs...); err != nil {
		c.a.log.Warn(ctx, "removing an attempt's rows failed; they count until they expire", "error", err.Error())
	}
}

// loginTiers are the tiers of a login as given: by its username or email
// key (or, when it is neither, its lower-cased text), with and without the
// client's address. Known and unknown logins are counted alike, before
// anything is looked up, and a username and an email of one account have
// budgets of their own, so a refusal says nothing of which account a
// login names.
func (a *Service) loginTiers(login, ip string) []tier {
	var name string
	if strings.Contains(login, "@") {
		if _, key, fe := domain.NormalizeEmail(login); fe == nil {
			name = "email/" + key
		}
	} else if _, key, fe := domain.NormalizeUsername(login); fe == nil {
		name = "username/" + key
	}
	if name == "" {
		name = "other/" + strings.ToLower(login)
	}
	return a.guessTiers("login/"+name, ip)
}

// guessTiers are the two tiers of password guesses at name.
func (a *Service) guessTiers(name, ip string) []tier {
	return []tier{
		{scope: scopeKey(name + "@" + AddressKey(ip)), limit: a.throttle.PerAddress},
		{scope: scopeKey(name), limit: a.throttle.PerLogin},
	}
}

// scopeKey is what the store keeps of a scope: its SHA-256, so the table
// holds no address or email and every key has one size.
func scopeKey(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// AddressKey is the client address a limit counts by: an IPv4 address, or
// the /64 of an IPv6 address (one host or home usually has a whole /64
// and could take a fresh address for every request); "unknown" when there
// is none.
func AddressKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return "unknown"
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String()
	}
	p, err := addr.Prefix(64)
	if err != nil {
		return "unknown"
	}
	return p.String()
}

// clientKey carries the request's client in a context.
type clientKey struct{}

// WithClient returns ctx carrying the request's client, for the checks of
// a current password (their throttle counts by its address).
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// clientOf is the client WithClient put in ctx (zero when none).
func clientOf(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// checkCurrentPassword verifies given against u's password, counted
// against u's throttle (the client address from ctx, WithClient): every
// check of a current password goes through here, so a stolen session is
// no free oracle for the password. Refused over the limit (429) before
// any verification; a wrong password is ErrInvalidCredentials; a right
// one on an account a revert marked is ErrPasswordResetRequired (it
// proves nothing until a reset).
func (a *Service) checkCurrentPassword(ctx context.Context, u domain.User, given string) error {
	c, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.guessTiers("account/"+u.ID, clientOf(ctx).IP)...)
	if err != nil {
		return err
	}
	ok, _, err := a.hasher.Verify(ctx, given, u.PasswordHash)
	if err != nil {
		return fmt.Errorf("verify password of %s: %w", u.ID, err)
	}
	if !ok {
		return ErrInvalidCredentials
	}
	c.pass(ctx, a.throttle.Store)
	if u.PasswordResetRequired {
		return ErrPasswordResetRequired
	}
	return nil
}
