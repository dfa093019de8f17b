package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"shelf/domain"
)

// Throttling of password guesses and of mail (docs/design/throttle.md).
// An attempt is counted under its tiers one after another, the client's
// address first: under each it writes a try of its own (in flight) and
// only then reads the scope, and it goes on to the next tier only when
// this one has room, so a refused attempt has written nothing under the
// tiers after it (the login's, which every address reads). A wrong
// password is then written as a failure under every tier, address first,
// and counts for the window; a right one, a refusal, ends its tries
// (an update of the try's own row: nothing is ever deleted, so no reader
// meets a tombstone). A try that is never ended (its attempt failed, its
// answer lost) stops counting inFlightFor after it began: an attempt that
// ended in 503 never counts against the owner for longer. With the
// writes and reads at quorum, of k attempts at once the i-th whose try
// was acknowledged counts at least i rows, so no more than the limit are
// answered in a window, however many run at once on however many
// instances: the check-then-increment race of counters kept elsewhere
// (read the count, verify, then add one) does not exist here.

// Attempt is one attempt: its id (random) and when it began.
type Attempt struct {
	ID string
	At time.Time
}

// Outcome is how an attempt's try ended: InFlight until it is settled.
type Outcome string

// The outcomes of a try. A try in flight counts, for inFlightFor at most;
// a refused or passed one does not (a wrong password counts by its
// failure row, for the whole window).
const (
	InFlight Outcome = ""
	Refused  Outcome = "refused"
	Passed   Outcome = "passed"
)

// Try is an attempt's try under one scope, with its outcome.
type Try struct {
	Attempt
	Outcome Outcome
}

// Tally is what one scope holds: its tries and its failures, each
// oldest first.
type Tally struct {
	Tries    []Try
	Failures []Attempt
}

// AttemptStore keeps attempts per scope: tries, in flight until settled,
// and failures, each in a row of its own that expires with its TTL and
// is never deleted. Writes and reads are at the session's consistency
// (LOCAL_QUORUM by default), so a read after a write was acknowledged
// includes that write (at ONE the limit holds per replica only).
type AttemptStore interface {
	// Begin writes attempt a's try under scope, in flight, living for ttl.
	Begin(ctx context.Context, scope string, a Attempt, ttl time.Duration) error
	// Settle ends a's try under scope with o (Refused or Passed), living
	// for ttl: an update of the try's row, which a write of the try
	// landing late does not undo.
	Settle(ctx context.Context, scope string, a Attempt, o Outcome, ttl time.Duration) error
	// Fail writes a's failure under scope, living for ttl.
	Fail(ctx context.Context, scope string, a Attempt, ttl time.Duration) error
	// Read reads up to max of scope's tries begun after triesSince and up
	// to max of its failures after failuresSince, each oldest first.
	// Only the rows after since are read: the older ones, expired or
	// about to, are never met.
	Read(ctx context.Context, scope string, triesSince, failuresSince time.Time, max int) (Tally, error)

	// Slots reads the slots of scope that are taken (a mail's budget,
	// docs/design/throttle.md#mail): each by its number, with when it
	// frees. A slot is a row of its own that leaves by its TTL.
	Slots(ctx context.Context, scope string) (map[int]time.Time, error)
	// Take takes slot n of scope for a, for ttl, if nobody holds it: a
	// compare-and-set. It reports whether a holds it now (an answer lost
	// and the statement sent again finds a there: taken). An outcome it
	// cannot learn is an error.
	Take(ctx context.Context, scope string, n int, a Attempt, ttl time.Duration) (bool, error)
}

// Throttle is what limits password guesses: per login (a username, an
// email, or an account's current password) and client address, and per
// login from every address (Config.Throttle). The same limits count an
// account's second-factor codes, and its recovery codes per address
// alone; with a store, it also keeps the per-address limit of mail
// (Mail.PerAddress). A limit of 0 turns its tier off.
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

const (
	// inFlightFor is how long a try that was never settled counts: an
	// attempt whose verdict could not be recorded (503) stops counting
	// then. It is twice settleWithin, so readers whose clocks are up to
	// that apart still count an attempt until its failure is in.
	inFlightFor = time.Minute
	// settleWithin is how long after its start an attempt may take to
	// have its verdict (its failures, or its tries passed) acknowledged;
	// later, it answers 503 and tells nothing: its try may have stopped
	// counting before its failure was in. It is three times the longest
	// request (SHELF_REQUEST_TIMEOUT, 10 s by default).
	settleWithin = inFlightFor / 2
	// tryTTL is how long a try's row lives: past inFlightFor by the
	// clock skew tolerated, so that no reader's slice meets a row
	// expired in it.
	tryTTL = 2 * inFlightFor
)

// maxCounted bounds the rows a read takes of each kind: a scope holds
// its limit's failures and the tries of the last minute; beyond this
// many the answer is "refused" anyway.
const maxCounted = 512

// ErrThrottleUnavailable answers an attempt whose count could not be
// written or read, or whose verdict could not be recorded: it is refused
// rather than let through uncounted, and the verdict is not told
// (docs/design/throttle.md).
var ErrThrottleUnavailable = &domain.Error{Kind: domain.ErrUnavailable, Code: "unavailable",
	Message: "The database could not answer in time; try again."}

// tooManyAttempts is the refusal of an attempt over its limit: the same
// words for every login, known or not.
func tooManyAttempts(wait time.Duration) error {
	when := max(roundUp(wait, time.Second), time.Second)
	if when >= 2*time.Minute {
		when = roundUp(when, time.Minute)
	}
	return &domain.Error{Kind: domain.ErrTooManyAttempts, Code: "too_many_attempts", RetryAfter: wait,
		Message: "Too many failed attempts for this login. Try again in " + inWords(when) + "."}
}

// roundUp is d rounded up to a whole unit.
func roundUp(d, unit time.Duration) time.Duration {
	return (d + unit - 1).Truncate(unit)
}

// aWayPast adds to err, when it is tooManyAttempts's refusal, the way
// past it that these attempts cannot hold back (a reset, a recovery
// code), so that an owner locked out by a stranger's guesses is not
// told only to wait.
func aWayPast(err error, words string) error {
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "too_many_attempts" {
		return err
	}
	past := *de
	past.Message += " " + words
	return &past
}

// tier is one scope and its limit.
type tier struct {
	scope string
	limit int
}

// counted is an attempt let through, with the tiers it wrote its tries
// under: spend or pass settles it.
type counted struct {
	a       *Service
	store   AttemptStore
	window  time.Duration
	attempt Attempt
	tiers   []tier
}

// admit counts one attempt under tiers (limits of 0 left out), in their
// order, each failure living for window. Round trips: the first tier's
// try written and every later tier read at once; the first tier read;
// then for each later tier its try written, and read. Refused with
// ErrTooManyAttempts when a tier holds its limit already (before this
// attempt wrote anything under it) or more than its limit with this
// attempt's try; its tries are then settled refused, the last tier's
// first, and nothing is written under the tiers after the one that
// refused. ErrThrottleUnavailable when the store cannot answer: a try
// whose write failed may have landed, in flight, and stops counting
// after inFlightFor.
func (a *Service) admit(ctx context.Context, store AttemptStore, window time.Duration, tiers ...tier) (*counted, error) {
	tiers = slices.DeleteFunc(tiers, func(t tier) bool { return t.limit <= 0 })
	c := &counted{a: a, store: store, window: window, attempt: Attempt{ID: domain.NewAttempt(), At: a.now()}}
	if store == nil || len(tiers) == 0 {
		return c, nil
	}
	// The first tier's try, and a look at the others: an attempt that
	// finds one over its limit already writes nothing there.
	errs := make([]error, len(tiers))
	waits := make([]time.Duration, len(tiers))
	domain.Parallel(ctx, len(tiers), func(ctx context.Context, i int) {
		if i == 0 {
			errs[i] = store.Begin(ctx, tiers[i].scope, c.attempt, tryTTL)
			return
		}
		waits[i], errs[i] = c.over(ctx, tiers[i])
	})
	if err := errors.Join(errs...); err != nil {
		a.log.Warn(ctx, "counting an attempt failed; refused", "error", err.Error())
		return nil, ErrThrottleUnavailable
	}
	c.tiers = tiers[:1]
	wait := slices.Max(waits)
	for i, t := range tiers {
		if wait > 0 {
			break
		}
		if i > 0 {
			if err := store.Begin(ctx, t.scope, c.attempt, tryTTL); err != nil {
				a.log.Warn(ctx, "counting an attempt failed; refused", "error", err.Error())
				return nil, ErrThrottleUnavailable
			}
			c.tiers = tiers[:i+1]
		}
		var err error
		if wait, err = c.over(ctx, t); err != nil {
			a.log.Warn(ctx, "counting attempts failed; refused", "error", err.Error())
			return nil, ErrThrottleUnavailable
		}
	}
	if wait > 0 {
		c.refuse(ctx)
		return nil, tooManyAttempts(wait)
	}
	return c, nil
}

// over reads t's scope and returns 0 when it holds no more than t.limit
// attempts that count, this one included (its try, if written, or the
// one it would write); otherwise how long until enough stop counting for
// one more to pass.
func (c *counted) over(ctx context.Context, t tier) (time.Duration, error) {
	now := c.a.now()
	tally, err := c.store.Read(ctx, t.scope, now.Add(-inFlightFor), now.Add(-c.window), maxCounted)
	if err != nil {
		return 0, err
	}
	return c.overLimit(tally, t.limit, now), nil
}

// overLimit returns 0 when tally holds no more than limit-1 attempts but
// this one that count at now (a failure within the window, a try in
// flight) and was not cut at maxCounted; otherwise how long until all
// but limit-1 of them stopped counting (a whole window if its failures
// were cut, a minute at least if its tries were). An attempt with a try
// and a failure counts once, until the later end.
func (c *counted) overLimit(tally Tally, limit int, now time.Time) time.Duration {
	ends := map[string]time.Time{}
	count := func(a Attempt, end time.Time) {
		// A replica's clock may keep a row a little past its TTL.
		if a.ID != c.attempt.ID && end.After(now) && end.After(ends[a.ID]) {
			ends[a.ID] = end
		}
	}
	for _, f := range tally.Failures {
		count(f, f.At.Add(c.window))
	}
	for _, t := range tally.Tries {
		if t.Outcome == InFlight {
			count(t.Attempt, t.At.Add(inFlightFor))
		}
	}
	if len(tally.Failures) >= maxCounted {
		// The read stopped at its bound: the failures it did not take
		// count too, so a limit above it is kept as maxCounted, never
		// as none.
		return c.window
	}
	// A read of tries stopped at its bound took the oldest: tries begun
	// after the last it took, in flight, went uncounted, and a flood of
	// refused tries would hide every guess sent at once after it
	// (TestAFloodOfRefusedTriesDoesNotHideTheGuessesAfterIt). So it
	// refuses until they have all ended, inFlightFor from now at most,
	// or later if the rows it took say so.
	cut := len(tally.Tries) >= maxCounted
	if len(ends)+1 <= limit {
		if cut {
			return inFlightFor
		}
		return 0
	}
	sorted := slices.SortedFunc(maps.Values(ends), time.Time.Compare)
	// The next attempt passes once all but limit-1 of the others ended.
	wait := max(sorted[len(sorted)-limit].Sub(now), time.Second)
	if cut {
		wait = max(wait, inFlightFor)
	}
	return wait
}

// refuse settles the attempt's tries refused, the last tier's first,
// stopping at the first that fails: a try under the address stops
// counting only after the one under the login did, so one address never
// holds more tries in flight at the login than under itself.
func (c *counted) refuse(ctx context.Context) {
	for i := len(c.tiers) - 1; i >= 0; i-- {
		if err := c.store.Settle(ctx, c.tiers[i].scope, c.attempt, Refused, tryTTL); err != nil {
			c.a.log.Warn(ctx, "settling a refused attempt failed; its tries count for a minute", "error", err.Error())
			return
		}
	}
}

// inTime answers ErrThrottleUnavailable once the attempt is older than
// settleWithin: its tries may stop counting before its verdict is in, so
// it must not be verified, or not told.
func (c *counted) inTime() error {
	if c != nil && len(c.tiers) > 0 && c.a.now().Sub(c.attempt.At) > settleWithin {
		return ErrThrottleUnavailable
	}
	return nil
}

// spend records the attempt as counting for the window (a wrong
// password, a mail sent): a failure under each tier, the address's first,
// so that a failure at the login always has one under the address. Nil
// only when every failure was acknowledged in time; otherwise
// ErrThrottleUnavailable, and the caller tells nothing of the verdict.
func (c *counted) spend(ctx context.Context) error {
	for _, t := range c.tiers {
		if err := c.store.Fail(ctx, t.scope, c.attempt, c.window); err != nil {
			c.a.log.Warn(ctx, "recording a failed attempt failed; answered 503", "error", err.Error())
			return ErrThrottleUnavailable
		}
	}
	return c.inTime()
}

// pass settles the attempt's tries passed (a right password is no
// guess), the last tier's first, as refuse does, stopping at the first
// that fails: a try under the address stops counting only once the one
// under the login did, so a settling that timed out at the login alone
// leaves the address holding the attempt too, and one address never
// holds more tries in flight at the login than its own limit (a thief
// with the password, logging in from one address while the node times
// out some writes, would otherwise fill the login's tier:
// TestARightPasswordsSettlingTimedOutAtTheLoginLeavesTheOwnerIn). Nil
// only when every one was acknowledged in time: otherwise
// ErrThrottleUnavailable, as for a wrong password, so that a 201 against
// a 503 never tells a right password from a wrong one when the store
// fails.
func (c *counted) pass(ctx context.Context) error {
	for i := len(c.tiers) - 1; i >= 0; i-- {
		if err := c.store.Settle(ctx, c.tiers[i].scope, c.attempt, Passed, tryTTL); err != nil {
			c.a.log.Warn(ctx, "settling a right password failed; answered 503", "error", err.Error())
			return ErrThrottleUnavailable
		}
	}
	return c.inTime()
}

// verdict records a checked password's verdict and returns what the
// caller answers: nil for a right one, ErrInvalidCredentials for a wrong
// one, ErrThrottleUnavailable for either when it could not be recorded.
func (c *counted) verdict(ctx context.Context, right bool) error {
	if c == nil || len(c.tiers) == 0 {
		if right {
			return nil
		}
		return ErrInvalidCredentials
	}
	if right {
		return c.pass(ctx)
	}
	if err := c.spend(ctx); err != nil {
		return err
	}
	return ErrInvalidCredentials
}

// loginTiers are the tiers of a login as given: by its username or email
// key (or, when it is neither, its lower-cased text), with and without the
// client's address. Known and unknown logins are counted alike, before
// anything is looked up, and a username and an email of one account have
// budgets of their own, so a refusal says nothing of which account a
// login names.
func (a *Service) loginTiers(login, ip string) []tier {
	var name string
	if domain.NamesAnEmail(login) { // as loginKey: one budget per address, however its at is written
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

// guessTiers are the tiers of password guesses at name, the client
// address's first: an attempt refused there writes nothing under the
// ones after it. An IPv6 address counts in its /56 as well (LineKey),
// between the two: a home line is often a /56, 256 addresses.
func (a *Service) guessTiers(name, ip string) []tier {
	tiers := make([]tier, 0, 3)
	tiers = append(tiers, tier{scope: scopeKey(name + "@" + AddressKey(ip)), limit: a.throttle.PerAddress})
	if line := LineKey(ip); line != "" {
		tiers = append(tiers, tier{scope: scopeKey(name + "@" + line), limit: a.throttle.perLine()})
	}
	return append(tiers, tier{scope: scopeKey(name), limit: a.throttle.PerLogin})
}

// perLine is a /56's budget at one login: twice an address's, below the
// login's (so one line never fills it: a stranger needs lines as well as
// addresses; TestOneHomeLineCannotFillALoginsBudget); off with the
// address's tier.
func (t Throttle) perLine() int {
	line := 2 * t.PerAddress
	if t.PerLogin > 0 && line >= t.PerLogin {
		line = max(t.PerAddress, t.PerLogin-1)
	}
	return line
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

// LineKey is the line an IPv6 client address is on, its /56 (a home or
// small site is usually given one, 256 /64s); "" for an IPv4 address, or
// none.
func LineKey(ip string) string { return ipv6Prefix(ip, 56) }

// ipv6Prefix is the prefix of bits bits of an IPv6 address; "" for an
// IPv4 address, or none.
func ipv6Prefix(ip string, bits int) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil || addr.Unmap().Is4() {
		return ""
	}
	p, err := addr.Prefix(bits)
	if err != nil {
		return ""
	}
	return p.String()
}

// clientKey carries the request's client in a context.
type clientKey struct{}

// WithClient returns ctx carrying the request's client, for the checks of
// a current password and of second factors (their throttles count by its
// address).
func WithClient(ctx context.Context, c Client) context.Context {
	return &clientCtx{Context: ctx, c: c}
}

// WithSession returns ctx with its client's session set to the token
// hash of the session the request authenticated with (WithClient).
func WithSession(ctx context.Context, tokenHash string) context.Context {
	c := clientOf(ctx)
	c.Session = tokenHash
	return WithClient(ctx, c)
}

// clientCtx is a context and its client in one allocation
// (context.WithValue would box the Client in another).
type clientCtx struct {
	context.Context
	c Client
}

// Value is the client for clientKey, and ctx's values otherwise.
func (c *clientCtx) Value(key any) any {
	if key == (clientKey{}) {
		return &c.c
	}
	return c.Context.Value(key)
}

// clientOf is the client WithClient put in ctx (zero when none).
func clientOf(ctx context.Context) Client {
	if c, _ := ctx.Value(clientKey{}).(*Client); c != nil {
		return *c
	}
	return Client{}
}

// currentScope is what a check of the current password of account id
// counts by: the session the request came with, or the account when it
// came with none. Only a session asks for these checks, and it takes the
// password or the account's mailbox to make one, so a thief with a stolen
// session alone spends his session's budget, and never the owner's:
// counted by the account, his wrong guesses from ten addresses answered
// every proof of hers 429 for the window, renewed while his session
// lived (TestAStolenSessionsGuessesDoNotLockTheOwnersProofsOut).
func currentScope(ctx context.Context, id string) string {
	if s := clientOf(ctx).Session; s != "" {
		return "session/" + s
	}
	return "account/" + id
}

// checkCurrentPassword verifies given against u's password, counted
// against u's throttle (the client address from ctx, WithClient): every
// check of a current password goes through here, so a stolen session is
// no free oracle for the password. Refused over the limit (429) before
// any verification; a wrong password is ErrInvalidCredentials; a right
// one on an account a revert marked is ErrPasswordResetRequired (it
// proves nothing until a reset).
func (a *Service) checkCurrentPassword(ctx context.Context, u domain.User, given string) error {
	c, err := a.admit(ctx, a.throttle.Store, a.throttle.Window, a.guessTiers(currentScope(ctx, u.ID), clientOf(ctx).IP)...)
	if err != nil {
		return err
	}
	if err := c.inTime(); err != nil {
		return err
	}
	ok, _, err := a.hasher.Verify(ctx, given, u.PasswordHash)
	if err != nil {
		return fmt.Errorf("verify password of %s: %w", u.ID, err)
	}
	if err := c.verdict(ctx, ok); err != nil {
		return err
	}
	if u.PasswordResetRequired {
		return ErrPasswordResetRequired
	}
	return nil
}
