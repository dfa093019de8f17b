package accounts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"shelf/domain"
)

// Message is one mail: plain text to one address.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Mailer sends mail (SMTP in production, the log in development).
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Mail is what the accounts need to mail tokens (Config.Mail):
// verification after signup and email changes, the verification and
// reset routes, and the notices with revert links (an email change, a new
// factor). Off (the zero value) no mail is sent and the token routes
// answer 503.
type Mail struct {
	Tokens TokenStore
	Mailer Mailer
	// PublicURL is the console's address: links are PublicURL +
	// "/#/verify?token=...", "/#/reset?token=...",
	// "/#/revert-email?token=...", "/#/refuse-email?token=..." and
	// "/#/revert-factor?token=..." (Link).
	PublicURL string
	// VerifyTTL and ResetTTL are how long a mailed token may be used.
	VerifyTTL, ResetTTL time.Duration
	// RevertTTL is how long the revert link of an email change works,
	// and so how long a replaced address stays held (0: DefaultRevertTTL).
	RevertTTL time.Duration
	// RequireVerified refuses login (403 email_not_verified) to accounts
	// whose email is not verified, admins excepted.
	RequireVerified bool
	// PerAddress is how many mails one address may be sent an hour, of
	// every kind together, in each of its two budgets (mailBudget: what
	// anyone's request causes, and what the account's own authenticated
	// action causes), counted in the throttle's store (so by every
	// instance together); beyond it a mail is not sent (logged). 0 or no
	// store: no limit.
	PerAddress int
}

// mailWindow is the span Mail.PerAddress counts in.
const mailWindow = time.Hour

// mailOn reports whether mail is set up.
func (a *Service) mailOn() bool { return a.mail.Tokens != nil && a.mail.Mailer != nil }

// ErrMailOff answers the token routes, and a change to a new email
// address, of a service without mail.
var ErrMailOff = &domain.Error{Kind: domain.ErrNotConfigured, Code: "mail_off", Message: "This server sends no mail: its operator must set a mailer up (SHELF_MAILER) before this works."}

// ErrEmailNotVerified answers the login of an account whose email is not
// verified, when SHELF_REQUIRE_VERIFIED_EMAIL is on (after the password
// matched, as a suspension).
var ErrEmailNotVerified = &domain.Error{Kind: domain.ErrForbidden, Code: "email_not_verified",
	Message: "Confirm your email address first: follow the link we mailed you, or ask for a new one (POST /v1/email-verifications)."}

// maxMailJobs bounds the mail jobs this process runs at once; beyond it a
// job is dropped (logged) and the user asks again.
const maxMailJobs = 64

// mailJobTimeout bounds one mail job (it runs after the answer, on a
// context of its own).
const mailJobTimeout = 30 * time.Second

// afterAnswer runs job off the request's path (Config.Background), at
// most maxMailJobs at once: its failures are logged, never answered, and
// a request never waits for mail.
func (a *Service) afterAnswer(ctx context.Context, what string, job func(ctx context.Context) error) {
	a.afterAnswerOr(ctx, what, job, false)
}

// afterAnswerSure is afterAnswer for a mail no stranger may keep from the
// owner (a recovery's reset link, a notice of what was done to the
// account): with maxMailJobs running it is not dropped, as a request's
// link is (whose user asks again), but sent inside the request, before
// its answer. An attacker can fill a process's jobs (requests for links
// answer at once, each leaving one, slow on an overloaded process), and
// asking again is held back by an hourly limit such requests spent
// (TestARevertsResetLinkIsNotDroppedWithAFullMailPool).
func (a *Service) afterAnswerSure(ctx context.Context, what string, job func(ctx context.Context) error) {
	a.afterAnswerOr(ctx, what, job, true)
}

// afterAnswerOr is afterAnswer, running job in the request instead of
// dropping it when inline is set and the pool is full.
func (a *Service) afterAnswerOr(ctx context.Context, what string, job func(ctx context.Context) error, inline bool) {
	bg := context.WithoutCancel(ctx)
	run := func() {
		ctx, cancel := context.WithTimeout(bg, mailJobTimeout)
		defer cancel()
		if err := job(ctx); err != nil {
			a.log.Warn(ctx, what+" failed; the user can ask again", "error", err.Error())
		}
	}
	select {
	case a.mailJobs <- struct{}{}:
	default:
		if inline {
			run()
			return
		}
		a.log.Warn(ctx, what+" dropped: too many mail jobs at once; the user can ask again")
		return
	}
	a.background(func() {
		defer func() { <-a.mailJobs }()
		run()
	})
}

// maxSweeps bounds the clean-ups this process runs at once
// (afterAnswerSweep); beyond it one is dropped (logged): what it would
// delete works no more and expires, and the account's next sweep
// deletes it.
const maxSweeps = 64

// sweeper runs clean-ups after the answer, apart from the mail jobs and
// at most one per key (an account's sessions, its enrolments) at a time:
// signing out everywhere else has no rate limit (it must work for an
// owner facing a thief), so a stolen session sending it over and over
// had filled the process's mail jobs with its sweeps, and a reset link
// asked meanwhile was dropped (the sessions review).
type sweeper struct {
	jobs chan struct{}
	mu   sync.Mutex
	// running holds the keys with a clean-up under way; true: asked
	// again meanwhile, so it runs once more when it ends.
	running map[string]bool
}

func newSweeper() *sweeper {
	return &sweeper{jobs: make(chan struct{}, maxSweeps), running: map[string]bool{}}
}

// afterAnswerSweep runs job off the request's path, apart from the mail
// jobs: at most one per key at a time, a request that finds one running
// asking it to run again when it ends (it reads the account afresh, so
// the run after covers every change made before it began). With
// maxSweeps running, a job whose work is bounded and matters to the
// owner (inline: the enrolments a sign-out ends, at most maxFactors) runs
// inside the request instead of being dropped: one who keeps the pool
// full with sign-outs on accounts of his own (no rate limit) would
// otherwise leave a thief's enrolments counting against the owner's
// factors until they expire (the factors review); his own requests pay
// for it then. Any other is dropped: what a session sweep would delete
// works no more and expires.
func (a *Service) afterAnswerSweep(ctx context.Context, key, what string, inline bool, job func(ctx context.Context) error) {
	s := a.sweeps
	s.mu.Lock()
	if _, busy := s.running[key]; busy {
		s.running[key] = true
		s.mu.Unlock()
		return
	}
	select {
	case s.jobs <- struct{}{}:
	default:
		s.mu.Unlock()
		if inline {
			jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailJobTimeout)
			defer cancel()
			if err := job(jctx); err != nil {
				a.log.Warn(jctx, what+" failed; the account's next clean-up finishes it", "error", err.Error())
			}
			return
		}
		a.log.Warn(ctx, what+" dropped: too many clean-ups at once; what it would delete works no more and expires")
		return
	}
	s.running[key] = false
	s.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	a.background(func() {
		defer func() { <-s.jobs }()
		for {
			jctx, cancel := context.WithTimeout(bg, mailJobTimeout)
			if err := job(jctx); err != nil {
				a.log.Warn(jctx, what+" failed; the account's next clean-up finishes it", "error", err.Error())
			}
			cancel()
			s.mu.Lock()
			again := s.running[key]
			if !again {
				delete(s.running, key)
				s.mu.Unlock()
				return
			}
			s.running[key] = false
			s.mu.Unlock()
		}
	})
}

// mailLimit says what a mail does past its address's hourly limit.
type mailLimit int

const (
	// heldBack: over the limit, or when the count cannot be made, the
	// mail is not sent (the user asks again).
	heldBack mailLimit = iota
	// neverHeld: counted, and sent whatever the count says. Only for mail
	// no stranger can aim: the notice of an email change or of a new
	// factor to a verified address, and the reset link a revert of either
	// mails (the link was followed from that address),
	// docs/design/throttle.md. Which budget a mail spends is apart
	// (mailBudget).
	neverHeld
)

// mailBudget is which of an address's two hourly budgets a mail spends
// (docs/design/throttle.md): each holds Mail.PerAddress mails.
type mailBudget int

const (
	// anyones: mail that a request naming the address alone can cause
	// (a reset, a verification asked without the account's session, a
	// signup's, an email change's links to the address it asks for),
	// and the reset link a revert mails.
	anyones mailBudget = iota
	// owners: mail that the account's own authenticated action causes (a
	// notice of an email change, of a password change, of a factor
	// added, of a recovery code used; a verification asked with the
	// account's session). No request naming the address alone spends
	// it, so a stranger who spends anyone's budget holds none of these
	// back; a stranger who signed up with someone else's address aims
	// at most both budgets at it an hour.
	owners
)

// scope is the throttle's key of budget b of the address emailKey.
func (b mailBudget) scope(emailKey string) string {
	if b == owners {
		return "mail-own/" + emailKey
	}
	return "mail/" + emailKey
}

// mailToken issues a token of purpose for u and mails it to u's current
// address, held back over the address's hourly limit in budget. The
// token is stored before the mail goes out, so every link mailed works;
// a mail that fails leaves an unused token that expires.
func (a *Service) mailToken(ctx context.Context, u domain.User, purpose TokenPurpose, budget mailBudget) error {
	return a.sendToken(ctx, u, purpose, heldBack, budget)
}

// sendToken is mailToken with the rule of the limit: a stranger who used
// up an address's mails must not hold back the mail that recovers its
// account or warns its owner (neverHeld).
func (a *Service) sendToken(ctx context.Context, u domain.User, purpose TokenPurpose, limit mailLimit, budget mailBudget) error {
	return a.sendTokenAbout(ctx, u, purpose, limit, budget, "")
}

// sendTokenAbout is sendToken for a token about subject (Token.Subject).
func (a *Service) sendTokenAbout(ctx context.Context, u domain.User, purpose TokenPurpose, limit mailLimit, budget mailBudget, subject string) error {
	return a.sendMessage(ctx, u, purpose, limit, budget, subject, func(u domain.User, token string) Message { return a.message(u, purpose, token) })
}

// sendMessage is sendTokenAbout with the mail that carries the token
// written by write.
func (a *Service) sendMessage(ctx context.Context, u domain.User, purpose TokenPurpose, limit mailLimit, budget mailBudget, subject string, write func(u domain.User, token string) Message) error {
	if err := a.countMailOf(ctx, u.EmailKey, purpose, budget); err != nil && limit == heldBack {
		return fmt.Errorf("a %s mail to %s: %w", purpose, u.ID, err)
	}
	ctx, cancel := slotHeld(ctx)
	defer cancel()
	token, err := a.issueCounted(ctx, u, purpose, subject)
	if err != nil {
		return fmt.Errorf("storing a %s token for %s: %w", purpose, u.ID, err)
	}
	if err := a.mail.Mailer.Send(ctx, write(u, token)); err != nil {
		return fmt.Errorf("mailing a %s token to %s: %w", purpose, u.ID, err)
	}
	return nil
}

// mailAfterSlot is how long a mail that holds its budget's slot has for
// its token and its sending, whatever time its count took.
const mailAfterSlot = 20 * time.Second

// slotHeld is the context of a mail once it holds its slot: of its own
// (mailAfterSlot), not the request's or the mail job's, whose deadline a
// slow take may have nearly spent: the slot held for the hour with no
// time left to send left the owner's mailbox without the mail it counts
// (TestASlowTakeLeavesTheMailItsTime).
func slotHeld(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), mailAfterSlot)
}

// tokenWrites bounds how often issueCounted writes a token.
const tokenWrites = 4

// issueCounted is issueToken for a mail that holds its budget's slot
// already: a failed write is tried again, a new token each time (one
// that landed unseen is a token nobody holds, which expires), before the
// mail is given up. Given up at once, the slot stayed held for the hour
// with nothing sent: a stranger's requests on a loaded node spent the
// hour's mails with nothing in the owner's mailbox and held her own
// reset back (TestAFailedTokenWriteDoesNotSpendTheHoursMailUnsent).
func (a *Service) issueCounted(ctx context.Context, u domain.User, purpose TokenPurpose, subject string) (string, error) {
	return persist(ctx, tokenWrites, func() (string, error) { return a.issueToken(ctx, u, purpose, subject) })
}

// persist calls fn until it succeeds, at most tries times, pausing as
// domain.Retry does between calls; it answers fn's last result (a
// context that ends during a pause stops it with fn's last error).
func persist[T any](ctx context.Context, tries int, fn func() (T, error)) (T, error) {
	var v T
	var last error
	if domain.Retry(ctx, tries, errTriesSpent, func(int) (bool, error) {
		v, last = fn()
		return last == nil, nil
	}) != nil {
		return v, last
	}
	return v, nil
}

// errTriesSpent ends persist's rounds; persist answers fn's error instead.
var errTriesSpent = errors.New("tries spent")

// ErrMailLimit: the address has had its mails for the hour.
var ErrMailLimit = errors.New("the address has had as many mails as it may this hour; not sent")

// mailLimited is ErrMailLimit with how long until one more mail may go.
type mailLimited struct{ wait time.Duration }

func (e *mailLimited) Error() string { return ErrMailLimit.Error() }
func (e *mailLimited) Unwrap() error { return ErrMailLimit }

// countMail counts one mail to the address emailKey against its limit
// in budget, shared by every instance: every mail to an address goes
// through here before it is sent (a verification after signup, after a
// change of email, on request; a reset; a notice), so mail cannot be
// aimed at an address beyond the limit by any route (beyond both
// budgets' together, by one who can spend both). A budget is limit
// slots, each taken by one mail for the hour with a compare-and-set
// (AttemptStore.Take): with all of them held it is ErrMailLimit (a
// *mailLimited saying when one more may go); when the count cannot be
// read or its outcome learned, the mail is not sent either (the user
// asks again).
func (a *Service) countMail(ctx context.Context, emailKey string, budget mailBudget) error {
	return a.countMailOf(ctx, emailKey, "", budget)
}

// countMailOf is countMail for a mail of purpose. A verification link
// may take all but the last of the hour's mails of a budget
// (verificationLimit): a request for one is anyone's to make and its
// link opens nothing, so such requests must not spend the mail that
// would carry the owner a way in (a reset link, a notice with its
// recovery link) and leave her, every mail of hers held back, with none
// (TestVerificationMailsCannotLeaveTheOwnerWithoutAWorkingLink). Slots,
// not tries read back: a burst of requests sent at once, each refused,
// once left tries enough to cut the budget's read, which then refused
// the owner's reset for a minute (TestABurstOfMailRequestsDoesNotHoldBackTheOwnersReset).
func (a *Service) countMailOf(ctx context.Context, emailKey string, purpose TokenPurpose, budget mailBudget) error {
	limit := a.mail.PerAddress
	if a.throttle.Store == nil || limit <= 0 {
		return nil
	}
	// A verification link takes one of the first limit-1 slots only, so
	// the last is always left to a mail that recovers the account.
	usable := limit
	if purpose == PurposeVerifyEmail {
		usable = verificationLimit(limit)
	}
	store, scope := a.throttle.Store, scopeKey(budget.scope(emailKey))
	taken, err := store.Slots(ctx, scope)
	if err != nil {
		a.log.Warn(ctx, "counting a mail failed; not sent", "error", err.Error())
		return ErrThrottleUnavailable
	}
	attempt := Attempt{ID: domain.NewAttempt(), At: a.now()}
	for n := range usable {
		if _, held := taken[n]; held {
			continue
		}
		// The lowest free slot first: a burst of requests all try the
		// same one, one of them takes it and mails, and the others try
		// the next; a request that finds none writes nothing, so no
		// number of refused requests can hide a free slot from the next.
		ok, err := a.takeSlot(ctx, scope, n, attempt)
		if err != nil {
			// Its outcome unknown still: the slot may be spent, the mail
			// is not sent (the user asks again).
			a.log.Warn(ctx, "counting a mail failed; not sent", "error", err.Error())
			return ErrThrottleUnavailable
		}
		if ok {
			return nil
		}
	}
	// Every slot it may take is held: taken before its look, or by
	// requests that won them since. One more goes when the first of them
	// frees.
	if taken, err = store.Slots(ctx, scope); err != nil {
		a.log.Warn(ctx, "counting a mail failed; not sent", "error", err.Error())
		return ErrThrottleUnavailable
	}
	return &mailLimited{wait: firstFreed(taken, usable, a.now())}
}

// slotTakes bounds how often a take of one slot whose outcome stayed
// unknown is sent again (takeSlot).
const slotTakes = 4

// takeSlot takes slot n of scope for attempt (AttemptStore.Take), and
// sends the take again, for the same slot under the same attempt, while
// its outcome is unknown: a slot is never overwritten while it lives, so
// the repeat finds attempt's own row (taken: the mail goes) or another's
// (this attempt never took it: the caller tries the next), or takes it.
// Given up on an unknown outcome, a take that applied holds its slot for
// the hour with no mail sent; a burst's compare-and-sets contending on
// one partition time out that way, so a stranger's requests sent at once
// spent the hour's slots with nothing in the owner's mailbox and held
// her own reset back (TestATakeWhoseAnswerWasLostStillMails).
func (a *Service) takeSlot(ctx context.Context, scope string, n int, attempt Attempt) (bool, error) {
	return persist(ctx, slotTakes, func() (bool, error) { return a.throttle.Store.Take(ctx, scope, n, attempt, mailWindow) })
}

// firstFreed is how long until the first of slots 0..usable-1 of taken
// frees: at least a second, and a second when one is free already (it
// freed while the caller tried the others).
func firstFreed(taken map[int]time.Time, usable int, now time.Time) time.Duration {
	wait := time.Duration(0)
	for n := range usable {
		until, held := taken[n]
		if !held {
			return time.Second
		}
		if d := until.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return max(wait, time.Second)
}

// verificationLimit is how many of an address's perHour mails may be
// verification links: all but one, so that the last is always a mail
// that recovers the account (0: no limit; start-up refuses a limit of
// one, which would leave none).
func verificationLimit(perHour int) int {
	if perHour > 1 {
		return perHour - 1
	}
	return perHour
}

// inWords says how long a link works as a mail tells a person: in whole
// days, hours, minutes or seconds, the largest that divides it ("7
// days", "1 hour"); a life of no whole second as Go writes it.
func inWords(d time.Duration) string {
	for _, u := range []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d >= u.size && d%u.size == 0 {
			if n := int64(d / u.size); n != 1 {
				return fmt.Sprintf("%d %ss", n, u.name)
			}
			return "1 " + u.name
		}
	}
	return d.String()
}

// Link is the console page that completes purpose with token.
func Link(publicURL string, purpose TokenPurpose, token string) string {
	page := "verify"
	switch purpose {
	case PurposeResetPassword:
		page = "reset"
	case PurposeRevertEmail:
		page = "revert-email"
	case PurposeRefuseEmail:
		page = "refuse-email"
	case PurposeRevertFactor:
		page = "revert-factor"
	}
	return strings.TrimRight(publicURL, "/") + "/#/" + page + "?token=" + url.QueryEscape(token)
}

// message is the mail that carries token to u. Mail to an address that
// is not verified carries no text the sender chose
// (docs/design/tokens.md): whoever typed the address chose the display
// name and the username too, and could otherwise mail anyone a message of
// their own ("Hello URGENT: call ...") from shelf's address. Only once the
// address is verified, so the account's holder is its owner, does a mail
// greet by name.
func (a *Service) message(u domain.User, purpose TokenPurpose, token string) Message {
	switch purpose {
	case PurposeRevertEmail:
		return a.revertNotice(u, token)
	case PurposeRevertFactor:
		return a.factorNotice(u, token)
	}
	link := Link(a.mail.PublicURL, purpose, token)
	verified := !u.EmailVerifiedAt.IsZero()
	greeting, account := "Hello,", "your shelf account"
	if verified {
		greeting, account = "Hello "+u.DisplayName+",", "your shelf account "+u.Username
	}
	if purpose == PurposeResetPassword && u.PasswordResetRequired {
		return Message{To: u.Email, Subject: "Reset your shelf password", Text: fmt.Sprintf(
			"%s\n\na change of %s (its email address, or a second factor added) was undone from this address,\n"+
				"and every session signed out. Whoever made it knew the password, so it opens nothing until a new one is chosen.\n"+
				"Choose a new password here (the link works once, for %s):\n\n%s\n\n"+
				"If the link has expired, ask for a new one on the login page.\n",
			greeting, account, inWords(a.mail.ResetTTL), link)}
	}
	if purpose == PurposeResetPassword {
		return Message{To: u.Email, Subject: "Reset your shelf password", Text: fmt.Sprintf(
			"%s\n\nsomeone (we hope you) asked to reset the password of %s.\n"+
				"Choose a new password here (the link works once, for %s):\n\n%s\n\n"+
				"Resetting ends every session of the account. If you did not ask, ignore this mail: your password stays as it is.\n",
			greeting, account, inWords(a.mail.ResetTTL), link)}
	}
	return Message{To: u.Email, Subject: "Confirm your email address for shelf", Text: fmt.Sprintf(
		"%s\n\nplease confirm that %s is the address of %s\n"+
			"(the link works once, for %s):\n\n%s\n\nIf you did not sign up for shelf, ignore this mail.\n",
		greeting, u.Email, account, inWords(a.mail.VerifyTTL), link)}
}

// passwordNotice is the mail that tells u's address its password was
// changed, with a reset link (token) for an owner who did not change it.
// Greeted by name only once the address is verified, as every mail.
func (a *Service) passwordNotice(u domain.User, token string) Message {
	greeting, account := "Hello,", "your shelf account"
	if !u.EmailVerifiedAt.IsZero() {
		greeting, account = "Hello "+u.DisplayName+",", "your shelf account "+u.Username
	}
	return Message{To: u.Email, Subject: "The password of your shelf account was changed", Text: fmt.Sprintf(
		"%s\n\nthe password of %s was changed from one of its sessions, and every other session was signed out.\n\n"+
			"If it was you, there is nothing to do.\n\n"+
			"If it was not you, choose a new password here (the link works once, for %s, even if the password is changed again meanwhile):\n\n%s\n\n"+
			"Choosing one signs out every session of the account, including the one that made this change.\n",
		greeting, account, inWords(a.mail.ResetTTL), Link(a.mail.PublicURL, PurposeResetPassword, token))}
}

// renameNotice is the mail that tells u's address its username was
// changed to after's, with a reset link (token) for an owner who did not
// change it, and which name is held for her to take back, until when.
// The names, chosen text, are written only to a verified address, as
// every greeting by name.
func (a *Service) renameNotice(u, after domain.User, token string) Message {
	verified := !u.EmailVerifiedAt.IsZero()
	greeting, what := "Hello,", "the username of your shelf account was changed"
	// back is the name held for the account, the one its owner takes back.
	back := cmp.Or(after.HeldUsername, u.Username)
	if verified {
		greeting = "Hello " + u.DisplayName + ","
		what = fmt.Sprintf("the username of your shelf account was changed from %s to %s", u.Username, after.Username)
	}
	// The hold's end by the rule the claimer keeps, not HeldUsernameUntil
	// alone: a suspension since the first rename moved it on
	// (TestANameHeldPastASuspensionIsToldWithItsEnd). The owner's rename
	// lands on no account under a suspension without an end.
	end, _ := a.holdsAt(a.cfg.Now()).nameEnd(after)
	until := end.UTC().Format("2 January 2006, 15:04 MST")
	held, step := "The name it left is free for anyone to take.", "Then sign in and choose the username you want."
	switch {
	case after.HeldUsernameKey == u.UsernameKey:
		held = "The name it left stays this account's until " + until + ": nobody else may take it before."
		step = "Then sign in and change the username back before " + until + "."
	case after.HeldUsernameKey != "" && verified:
		held = "The name it left is free for anyone to take; " + back + ", the account's name before, stays this account's until " + until + "."
		step = "Then sign in and change the username back to " + back + " before " + until + "."
	case after.HeldUsernameKey != "":
		held = "The name it left is free for anyone to take; the account's name before it stays this account's until " + until + "."
		step = "Then sign in and change the username back before " + until + "."
	}
	if verified && after.HeldUsernameKey == u.UsernameKey {
		step = "Then sign in and change the username back to " + back + " before " + until + "."
	}
	return Message{To: u.Email, Subject: "The username of your shelf account was changed", Text: fmt.Sprintf(
		"%s\n\n%s, from one of its sessions. %s\n\n"+
			"If it was you, there is nothing to do.\n\n"+
			"If it was not you, whoever did it knows your password. Choose a new one here (the link works once, for %s):\n\n%s\n\n"+
			"Choosing one signs out every session of the account. %s\n",
		greeting, what, held, inWords(a.mail.ResetTTL), Link(a.mail.PublicURL, PurposeResetPassword, token), step)}
}
