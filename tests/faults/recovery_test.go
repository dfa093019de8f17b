package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// A revert of an email change is a recovery, and no stranger can aim the
// notices (docs/design/email-change.md, docs/design/throttle.md): the
// revert makes the password open nothing until a reset, its reset mail is
// never held back by the mail limit, the replaced address is held
// whatever its verification, a notice to an unverified address is held
// back past the limit (and the change refused), one session's changes
// mail one notice while its change is pending, and a change pending
// expires with its link.

// codeOf is the code of a domain error ("" for none).
func codeOf(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

// limitMail gives m's service an hourly mail limit of perHour per address.
func limitMail(m *mailWorld, perHour int) {
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts()}
		c.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: m.box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour, PerAddress: perHour}
	})
}

// sentTo counts the mails to address whose link goes to page.
func (b *recorder) sentTo(page, address string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, msg := range b.sent {
		if msg.To == address && strings.Contains(msg.Text, "/#/"+page+"?token=") {
			n++
		}
	}
	return n
}

// thiefTakes changes ann's email to annNext through her first session
// (token and password stolen) and confirms it with the link mailed there.
func thiefTakes(t *testing.T, m *mailWorld) {
	t.Helper()
	if err := changeEmail(m, annNext); err != nil {
		t.Fatal(err)
	}
	if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext)); err != nil {
		t.Fatal(err)
	}
}

// TestARevertRequiresAReset: after the owner's revert the password the
// thief knows opens nothing (403 password_reset_required when it matches,
// by username or by email; 401 invalid_credentials when it does not: a
// guesser learns nothing); though a stranger spent the address's mails
// first, the revert's reset link goes out; that link refuses the password
// the thief knew as the new one, and once it set another, that one logs
// in and the old one does not.
func TestARevertRequiresAReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	limitMail(m, 5)
	thiefTakes(t, m)
	for range 6 { // a stranger spends the old address's mails
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatal(err)
		}
	}
	before := m.box.sentTo("reset", annHome)
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.Login(ctx, "ann", password, accounts.Client{}); codeOf(err) != "password_reset_required" || !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("the thief's password after the revert: %v, want 403 password_reset_required", err)
	}
	if _, err := m.svc.Login(ctx, annHome, password, accounts.Client{}); codeOf(err) != "password_reset_required" {
		t.Errorf("the thief's password by email after the revert: %v", err)
	}
	if _, err := m.svc.Login(ctx, "ann", "a wrong guess", accounts.Client{}); !errors.Is(err, accounts.ErrInvalidCredentials) {
		t.Errorf("a wrong password after the revert: %v, want invalid_credentials", err)
	}
	if got := m.box.sentTo("reset", annHome); got != before+1 {
		t.Fatalf("the revert's reset link over the mail limit: %d mailed, want 1", got-before)
	}
	// The password the thief knew is no new password.
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), password, accounts.Client{}); !errors.Is(err, domain.ErrInvalid) || codeOf(err) != "validation_failed" {
		t.Errorf("a reset to the password the thief knew: %v", err)
	}
	opened, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if err != nil || opened.Token == "" {
		t.Fatalf("the revert's reset link: %v, session %q", err, opened.Token)
	}
	if _, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{}); err != nil {
		t.Errorf("the new password after the reset: %v", err)
	}
	if _, err := m.svc.Login(ctx, "ann", password, accounts.Client{}); !errors.Is(err, accounts.ErrInvalidCredentials) {
		t.Errorf("the thief's password after the reset: %v", err)
	}
}

// TestALoginInFlightDoesNotSurviveARevert: the thief's login read the
// account before the owner's revert (its read slow, or its session write)
// and writes its session after: it answers no working session.
func TestALoginInFlightDoesNotSurviveARevert(t *testing.T) {
	t.Parallel()
	for _, slowCall := range []string{"users.credentials", "sessions_by_user.insert"} {
		m := emailChangeWorld(t, false)
		thiefTakes(t, m)
		r, err := attackerLogsIn(t, m, slowCall, func() error {
			return m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome))
		})
		if err == nil {
			if _, aerr := m.svc.Authenticate(context.Background(), r.Token); aerr == nil {
				t.Errorf("revert during the login's %s: the login's session works", slowCall)
			}
		}
		if codeOf(err) != "password_reset_required" && !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Errorf("revert during the login's %s: the login answered %v", slowCall, err)
		}
	}
}

// TestAnUnverifiedOwnersRevertWorks: an owner who never verified the
// signup's address keeps it held once the thief confirmed another (no
// stranger signs up with it), and the notice's link gives it back,
// verified, and frees the thief's. Were only a verified address held, the
// link would answer stale and the address be free.
func TestAnUnverifiedOwnersRevertWorks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // ann never follows her verification link
	thiefTakes(t, m)
	if err := m.signup("bob", annHome); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("a signup with the replaced, unverified address: %v, want a conflict", err)
	}
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatalf("the unverified owner's revert: %v", err)
	}
	u := m.account(t, "after the revert")
	if u.EmailKey != annHome || u.EmailVerifiedAt.IsZero() {
		t.Errorf("after the revert: %s verified %v", u.Email, u.EmailVerifiedAt)
	}
	checkEmailClaims(t, "after the revert", m, u)
	if err := m.signup("carol", annNext); err != nil {
		t.Errorf("the thief's address after the revert: %v", err)
	}
}

// TestOneNoticePerPendingChange: thirty changes from one session, each
// replacing the last while it is pending, mail the account's address one
// notice (its link still works: the account kept its address); a change
// from another session mails its own.
func TestOneNoticePerPendingChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	for i := range 30 {
		if err := changeEmail(m, fmt.Sprintf("ann%d@example.net", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.box.sentTo("revert-email", annHome); got != 1 {
		t.Errorf("thirty changes from one session mailed %d notices, want 1", got)
	}
	// Another session (the first one's changes ended it: log in again).
	if err := changeEmailFrom(m, annOther); err != nil {
		t.Fatal(err)
	}
	if got := m.box.sentTo("revert-email", annHome); got != 2 {
		t.Errorf("a change from another session: %d notices in all, want 2", got)
	}
	// The first notice's link still cancels what is pending.
	if err := m.svc.RevertEmailChange(ctx, m.box.tokens("revert-email")[0]); err != nil {
		t.Errorf("the first notice's link: %v", err)
	}
	if u := m.account(t, "after the revert"); u.PendingEmailKey != "" || u.EmailKey != annHome {
		t.Errorf("after the first notice's link: %+v", u)
	}
}

// TestNoticesToAnUnverifiedAddressAreLimited: an account signed up with
// a stranger's address (never verified) mails it notices only up to the
// hourly limit; past it the change is refused (429 too_many_mails, with
// a wait) and nothing is written; an hour later a change goes through.
func TestNoticesToAnUnverifiedAddressAreLimited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome is the stranger's, never verified
	limitMail(m, 5)
	refusedAt := -1
	for i := range 30 {
		// Asking and cancelling: every ask is a new pending change.
		err := changeEmail(m, annNext)
		if err != nil {
			if codeOf(err) != "too_many_mails" || !errors.Is(err, domain.ErrTooManyAttempts) {
				t.Fatalf("change %d: %v", i, err)
			}
			var de *domain.Error
			if errors.As(err, &de); de.RetryAfter <= 0 {
				t.Errorf("change %d: the refusal gives no wait: %+v", i, de)
			}
			refusedAt = i
			break
		}
		if err := changeEmail(m, annHome); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.box.sentTo("revert-email", annHome); got > 5 {
		t.Errorf("%d notices to the unverified address, over the limit of 5", got)
	}
	if refusedAt < 0 {
		t.Fatal("no change was refused")
	}
	u := m.account(t, "after the refusal")
	if u.PendingEmailKey != "" || u.EmailKey != annHome {
		t.Errorf("a refused change wrote: %+v", u)
	}
	if c, err := m.store.Claims().Lookup(ctx, domain.KindEmail, annNext); err == nil && c.State == domain.ClaimPending {
		t.Errorf("a refused change left a claim: %+v", c)
	}
	// An hour later the change goes through (from a new login: the
	// sessions have expired).
	m.store.Advance(time.Hour)
	if err := changeEmailFrom(m, annNext); err != nil {
		t.Errorf("an hour later: %v", err)
	}
}

// TestAPendingChangeExpiresWithItsLink: a change left pending past its
// verification link's life (and the token grace) holds its address no
// more: the address is free for a signup (after the claimer fenced the
// account's row), the account shows no change pending, and the old link
// no longer completes it: the address is not reserved for good.
func TestAPendingChangeExpiresWithItsLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, true) // ann asks for annNext
	link := m.box.tokenTo("verify", annNext)
	if err := m.signup("bob", annNext); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("a signup with the pending address while it lasts: %v", err)
	}
	m.store.Advance(24*time.Hour + accounts.TokenGrace)
	p, err := newSession(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.svc.Me(ctx, p); err != nil || got.PendingEmail != "" {
		t.Errorf("an expired change still shows: %q %v", got.PendingEmail, err)
	}
	before := m.account(t, "before the signup").Version
	if err := m.signup("bob", annNext); err != nil {
		t.Fatalf("a signup with the address of an expired change: %v", err)
	}
	u := m.account(t, "after the signup")
	if u.Version == before || u.PendingEmailKey != "" {
		t.Errorf("the signup took the address without fencing ann's row: version %d -> %d, pending %q", before, u.Version, u.PendingEmailKey)
	}
	if err := m.svc.ConfirmEmail(ctx, link); err == nil {
		t.Error("the expired change's link completed it")
	}
	checkHeld(t, "after the expiry", m.world)
}

// holdsEnd is a step of ann's that reads a hold while it lasts, with its
// compare-and-set slow across the hold's end: meanwhile a stranger signs
// up with the held address.
type holdsEnd struct {
	name string
	// setup brings ann to the hold (without faults).
	setup func(t *testing.T, m *mailWorld)
	// held is the address the step relies on holding, hold how long
	// until its hold ends from the set-up's end.
	held string
	hold time.Duration
	run  func(m *mailWorld) error
}

var holdsEnds = []holdsEnd{
	{
		name: "revert", held: annHome, hold: accounts.DefaultRevertTTL + accounts.TokenGrace,
		setup: func(t *testing.T, m *mailWorld) { thiefTakes(t, m) },
		run: func(m *mailWorld) error {
			return m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome))
		},
	},
	{
		// The change back to the address held needs no claim while the
		// hold lasts.
		name: "change-back", held: annHome, hold: accounts.DefaultRevertTTL + accounts.TokenGrace,
		setup: func(t *testing.T, m *mailWorld) { thiefTakes(t, m) },
		run: func(m *mailWorld) error {
			if err := changeEmailFrom(m, annHome); err != nil {
				return err
			}
			return m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annHome))
		},
	},
	{
		name: "confirm-pending", held: annNext, hold: 24*time.Hour + accounts.TokenGrace,
		setup: func(t *testing.T, m *mailWorld) {
			if err := changeEmail(m, annNext); err != nil {
				t.Fatal(err)
			}
		},
		run: func(m *mailWorld) error {
			return m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext))
		},
	},
}

// newSession logs ann in and returns the session as its requests see it.
func newSession(m *mailWorld) (domain.Principal, error) {
	ctx := context.Background()
	r, err := m.svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil {
		return domain.Principal{}, err
	}
	return m.svc.Authenticate(ctx, r.Token)
}

// changeEmailFrom asks for email as ann through a new login (a change
// ends her other sessions; they expire).
func changeEmailFrom(m *mailWorld, email string) error {
	p, err := newSession(m)
	if err != nil {
		return err
	}
	ctx, current := context.Background(), password
	_, err = m.svc.UpdateUser(ctx, p, m.ann.ID, accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: &current}})
	return err
}

// moveAnn changes ann's address to to from a session of hers and
// confirms it with the link mailed there.
func moveAnn(t *testing.T, m *mailWorld, to string) {
	t.Helper()
	if err := changeEmailFrom(m, to); err != nil {
		t.Fatal(err)
	}
	if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", to)); err != nil {
		t.Fatal(err)
	}
}

// TestExploreTheHoldsEnd makes each store call of a step that relies on
// a hold slow across the hold's end, a stranger signing up with the held
// address meanwhile; lands what was held back; and checks that the
// address is never two accounts' (U1) and that every address ann holds
// is claimed for her. The stranger's signup fences ann's row before it
// takes the address over, so a slow step's compare-and-set, conditioned on
// the version it read, cannot apply after it: without the fence the
// version it checks would not have moved.
func TestExploreTheHoldsEnd(t *testing.T) {
	t.Parallel()
	total := 0
	for _, step := range holdsEnds {
		fresh := func() *mailWorld {
			m := emailChangeWorld(t, false)
			step.setup(t, m)
			return m
		}
		probe := fresh()
		calls := callsOf(t, probe.store, step.name, func() error { return step.run(probe) })
		total += everyScheduleOf(t, step.name, calls, []memstore.Fault{memstore.Slow}, []string{"stranger-signs-up"}, func(name string, k int, fault memstore.Fault, _ int) {
			m := fresh()
			strangerErr := errors.New("did not run")
			m.store.Meanwhile = func() {
				m.store.Meanwhile = nil
				m.store.Advance(step.hold)
				probe := newProbe(m.world)
				strangerErr = probe.signup("stranger", step.held)
			}
			faultOnce(m.store, k, fault)
			err := step.run(m)
			recovered(m.store)
			m.store.Meanwhile = nil
			m.store.Land()
			// A session may expire inside the slow call (401).
			if err != nil && !expected(err) && !refused(err) && !errors.Is(err, domain.ErrUnauthorized) {
				t.Errorf("%s: the step answered %v", name, err)
			}
			holders, _, _ := checkHeld(t, name, m.world)
			u := m.account(t, name)
			checkEmailClaims(t, name, m, u)
			if strangerErr == nil && holders["email/"+step.held] == u.ID {
				t.Errorf("%s: U1: the stranger's signup answered success and ann has %s", name, step.held)
			}
		})
	}
	t.Logf("%d schedules in all", total)
}

// TestExploreTheFence runs a stranger's signup with an address whose hold
// on ann's account has ended (a change pending past its link's life, a
// replaced address past its revert link's) with every fault at every
// store call, the fence of ann's row among them; lands what was held
// back; has the stranger retry; then ann's link for the address is
// followed. The address is never two accounts' (U1), ann holds no key
// without its claim, the stranger gets the address in the end, and ann's
// link no longer gives it to her.
func TestExploreTheFence(t *testing.T) {
	t.Parallel()
	type ended struct {
		name, held string
		setup      func(t *testing.T, m *mailWorld)
		after      time.Duration
		// page is ann's link for the address; follow follows it.
		page   string
		follow func(ctx context.Context, m *mailWorld, token string) error
	}
	cases := []ended{
		{
			name: "pending", held: annNext, after: 24*time.Hour + accounts.TokenGrace,
			setup: func(t *testing.T, m *mailWorld) {
				if err := changeEmail(m, annNext); err != nil {
					t.Fatal(err)
				}
			},
			page: "verify",
			follow: func(ctx context.Context, m *mailWorld, token string) error {
				return m.svc.ConfirmEmail(ctx, token)
			},
		},
		{
			name: "recovery", held: annHome, after: accounts.DefaultRevertTTL + accounts.TokenGrace,
			setup: func(t *testing.T, m *mailWorld) { thiefTakes(t, m) },
			page:  "revert-email",
			follow: func(ctx context.Context, m *mailWorld, token string) error {
				return m.svc.RevertEmailChange(ctx, token)
			},
		},
	}
	total := 0
	for _, c := range cases {
		fresh := func() *mailWorld {
			m := emailChangeWorld(t, false)
			c.setup(t, m)
			m.store.Advance(c.after)
			return m
		}
		probe := fresh()
		calls := callsOf(t, probe.store, c.name, func() error { return newProbe(probe.world).signup("stranger", c.held) })
		total += everySchedule(t, "fence-"+c.name, calls, []string{"then-ann's-link"}, func(name string, k int, fault memstore.Fault, _ int) {
			m := fresh()
			link := m.box.tokenTo(c.page, c.held) // ann's, before the stranger's own mail
			stranger := newProbe(m.world)
			faultOnce(m.store, k, fault)
			err := stranger.signup("stranger", c.held)
			recovered(m.store)
			m.store.Land()
			if err != nil && !expected(err) {
				t.Errorf("%s: the signup answered %v", name, err)
			}
			if err != nil {
				// A claim left pending by the first try ends with its
				// lease; a first try that applied and lost its answer
				// makes the retry's 409 (the stranger has the address).
				m.store.Advance(lease)
				if err := stranger.signup("stranger", c.held); err != nil && !errors.Is(err, domain.ErrConflict) {
					t.Errorf("%s: the retry answered %v", name, err)
				}
			}
			if holders, _, _ := checkHeld(t, name, m.world); holders["email/"+c.held] == "" || holders["email/"+c.held] == ann(m) {
				t.Errorf("%s: after the stranger's signup and retry, %s is held by %q", name, c.held, holders["email/"+c.held])
			}
			if err := c.follow(context.Background(), m, link); err == nil {
				t.Errorf("%s: ann's link gave her %s after the stranger's signup", name, c.held)
			}
			checkHeld(t, name, m.world)
			u := m.account(t, name)
			if u.EmailKey == c.held || u.PendingEmailKey == c.held || u.RecoveryEmailKey == c.held {
				t.Errorf("%s: ann's row still names %s: %+v", name, c.held, u)
			}
			checkEmailClaims(t, name, m, u)
		})
	}
	t.Logf("%d schedules in all", total)
}

// TestAResetEndsAPendingChangeOfAddress: a thief with ann's password asks
// for an address of theirs (its link goes to their mailbox); ann resets
// her password from her own address. The reset is a recovery: the change
// pending ends with it, so the thief's link no longer confirms it, the
// address is free again, and the thief cannot reset the account from it
// (before, the link still made the thief's address the account's, and a
// reset mailed there gave the thief a working session).
func TestAResetEndsAPendingChangeOfAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, true) // the thief asks for annNext
	link := m.box.tokenTo("verify", annNext)
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
		t.Fatal(err)
	}
	if u := m.account(t, "after the reset"); u.PendingEmailKey != "" || u.Email != annHome {
		t.Errorf("after ann's reset the account is at %q, asking for %q; want %q and nothing pending", u.Email, u.PendingEmail, annHome)
	}
	if err := m.svc.ConfirmEmail(ctx, link); err == nil {
		t.Error("the thief's link confirmed the change after ann's reset")
	}
	if err := m.svc.RequestPasswordReset(ctx, annNext); err != nil {
		t.Fatal(err)
	}
	if n := m.box.sentTo("reset", annNext); n != 0 {
		t.Errorf("%d reset links went to the thief's address", n)
	}
	if err := m.signup("bob", annNext); err != nil {
		t.Errorf("the cancelled change still holds its address: %v", err)
	}
	checkHeld(t, "after the reset", m.world)
}

// TestAFactorsRevertEndsAPendingChangeOfAddress: the same with the other
// recovery a thief's change meets, the revert of a factor from its
// notice: the change of address pending ends with it.
func TestAFactorsRevertEndsAPendingChangeOfAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t)
	p, err := f.svc.Authenticate(ctx, f.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	email, current := annNext, password
	if _, err := f.svc.UpdateUser(ctx, p, f.ann.ID, accounts.UpdateInput{Email: &email,
		Proof: accounts.Proof{CurrentPassword: &current, Code: f.code(t, 0)}}); err != nil {
		t.Fatal(err)
	}
	link := f.box.tokenTo("verify", annNext)
	if err := f.svc.RevertFactor(ctx, f.box.tokens("revert-factor")[0]); err != nil {
		t.Fatal(err)
	}
	if u := f.account(t, "after the revert"); u.PendingEmailKey != "" {
		t.Errorf("after the factor's revert the account still asks for %q", u.PendingEmail)
	}
	if err := f.svc.ConfirmEmail(ctx, link); err == nil {
		t.Error("the thief's link confirmed the change after the factor's revert")
	}
	checkHeld(t, "after the revert", f.world)
}

// TestAChangeBackToTheHeldAddressLeavesTheThiefNoRevert: a thief with a
// session and the password moves ann's address to theirs and confirms
// it there; ann, instead of following her revert link, signs in and asks
// for her address back, which mails a notice with a revert link to the
// account's address of the moment, the thief's. She confirms it from her
// mailbox. The account is hers again, and her confirmation proved she
// reads the address the revert link was held for: the address it
// replaced must not be held in turn. Before, it was (a week, as for any
// change), so the thief's link then gave the account the thief's address
// back, ended ann's sessions and mailed the reset link to the thief, her
// own link stale.
func TestAChangeBackToTheHeldAddressLeavesTheThiefNoRevert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	thiefTakes(t, m) // email now annNext, the thief's; annHome held for the revert
	if err := changeEmailFrom(m, annHome); err != nil {
		t.Fatalf("ann's change back: %v", err)
	}
	thiefsLink := m.box.tokenTo("revert-email", annNext)
	if thiefsLink == "" {
		t.Fatal("the change back mailed the thief's address no revert link: the test no longer shows the attack")
	}
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annHome)); err != nil {
		t.Fatalf("ann's confirmation at her address: %v", err)
	}
	if u := m.account(t, "after the change back"); u.Email != annHome || u.RecoveryEmailKey != "" {
		t.Errorf("after the change back the account is at %q, holding %q; want %q, holding nothing", u.Email, u.RecoveryEmail, annHome)
	}
	if err := m.svc.RevertEmailChange(ctx, thiefsLink); !errors.Is(err, accounts.ErrRevertStale) {
		t.Errorf("the thief's revert link answered %v, want it stale", err)
	}
	if u := m.account(t, "after the thief's link"); u.Email != annHome || u.PasswordResetRequired {
		t.Errorf("the thief's link gave the account %q (reset required: %v), want it left at %q", u.Email, u.PasswordResetRequired, annHome)
	}
	if n := m.box.sentTo("reset", annNext); n != 0 {
		t.Errorf("%d reset links went to the thief's address", n)
	}
	checkHeld(t, "after the change back", m.world)
}

// TestAChangeBackConfirmedPastItsHoldLeavesTheThiefNoRevert: as in
// TestAChangeBackToTheHeldAddressLeavesTheThiefNoRevert, ann asks for her
// address back within her link's week (the notice to the thief's address
// says a confirmation of the address it replaced ends its link), but
// confirms it from her mailbox only after the hold of annHome has ended,
// the change still pending. Meanwhile the account was written again: she
// signed out everywhere else, or the thief, logged in again with the
// password, changed its display name. That write dropped the ended hold
// of annHome from the row while the change asked for annHome, so her
// confirmation no longer read it as a change back: it held the thief's
// address for a week, and the thief's link then gave the account his
// address back, ended her sessions and mailed him the reset link. A
// change back asked while the address was held is one until it ends:
// the row keeps naming the address held for as long as the change asks
// for it.
func TestAChangeBackConfirmedPastItsHoldLeavesTheThiefNoRevert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, between := range []struct {
		name  string
		write func(m *mailWorld) error
	}{
		{"nothing", func(*mailWorld) error { return nil }},
		{"her sign-out everywhere else", func(m *mailWorld) error {
			p, err := newSession(m)
			if err != nil {
				return err
			}
			return m.svc.RevokeSessions(ctx, p, m.ann.ID, true)
		}},
		{"his display name", func(m *mailWorld) error {
			p, err := newSession(m)
			if err != nil {
				return err
			}
			name := "Not Ann"
			_, err = m.svc.UpdateUser(ctx, p, m.ann.ID, accounts.UpdateInput{DisplayName: &name})
			return err
		}},
	} {
		m := emailChangeWorld(t, false)
		thiefTakes(t, m) // annNext, the thief's; annHome held for the week
		m.store.Advance(accounts.DefaultRevertTTL - 12*time.Hour)
		if err := changeEmailFrom(m, annHome); err != nil {
			t.Fatalf("%s: ann's change back: %v", between.name, err)
		}
		thiefsLink := m.box.tokenTo("revert-email", annNext)
		m.store.Advance(12*time.Hour + accounts.TokenGrace + time.Minute) // the hold ended, the change lives on
		if err := between.write(m); err != nil {
			t.Fatalf("%s: %v", between.name, err)
		}
		if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annHome)); err != nil {
			t.Fatalf("%s: ann's confirmation at her address: %v", between.name, err)
		}
		if u := m.account(t, between.name); u.Email != annHome || u.RecoveryEmailKey != "" {
			t.Errorf("%s: after the change back the account is at %q, holding %q; want %q, holding nothing", between.name, u.Email, u.RecoveryEmail, annHome)
		}
		if err := m.svc.RevertEmailChange(ctx, thiefsLink); !errors.Is(err, accounts.ErrRevertStale) {
			t.Errorf("%s: the thief's revert link answered %v, want it stale", between.name, err)
		}
		if u := m.account(t, between.name); u.Email != annHome || u.PasswordResetRequired {
			t.Errorf("%s: the thief's link gave the account %q (reset required: %v), want it left at %q", between.name, u.Email, u.PasswordResetRequired, annHome)
		}
		checkHeld(t, between.name, m.world)
	}
}
