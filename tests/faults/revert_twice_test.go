package faults

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// TestARevertRunTwiceLeavesAWorkingResetLink: the owner follows her
// revert link (of an email change, of a factor the thief added) from two
// tabs at once. The first run moves the recovery on and is slow before it
// mails its reset link; the second moves it on again and its mail fails
// (503: try again). The first then mails its link, stale by the second's
// move, and marked the token done: her retry answered 400 used and the
// only reset link in her mailbox opened nothing (docs/gaps.md had it). A
// run whose link is no longer the one in force leaves the token to the
// run that moved the recovery last; the retry then mails a link that
// works. Since 044 the second run finds the recovery moved on since the
// token's use (by the first) and moves it no further: the first's link
// is the one in force, and it marks the token done, so her retry may
// answer used.
func TestARevertRunTwiceLeavesAWorkingResetLink(t *testing.T) {
	t.Parallel()
	for _, page := range []string{"revert-email", "revert-factor"} {
		ctx := context.Background()
		m, revert := thiefsChange(t, page)
		token := m.box.tokenTo(page, annHome)
		second, slowed := false, false
		m.store.FaultAt = func(_ int, call string) memstore.Fault {
			if second || slowed || call != "tokens.create" {
				return memstore.None
			}
			slowed = true // the first run's reset link, after its compare-and-set
			return memstore.Slow
		}
		var secondErr error
		m.store.Meanwhile = func() {
			second, m.box.broken = true, true
			secondErr = revert(token)
			second, m.box.broken = false, false
		}
		firstErr := revert(token)
		m.store.FaultAt, m.store.Meanwhile = nil, nil
		if !slowed || !errors.Is(secondErr, domain.ErrUnavailable) {
			t.Fatalf("%s: the second run, its mail failing while the first is slow: %v (slowed: %v)", page, secondErr, slowed)
		}
		t.Logf("%s: the first run answered %v", page, firstErr)
		if err := revert(token); err != nil && !errors.Is(err, accounts.ErrTokenUsed) {
			t.Fatalf("%s: her retry after the 503: %v", page, err)
		}
		if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
			t.Errorf("%s: the newest reset link in her mailbox: %v", page, err)
		}
	}
}

// TestARevertLinkFollowedAgainAfterItsResetChangesNothing: the owner
// follows her revert link; its run mails the reset link, and before the
// run marks the token done (its process slow) she follows that link and
// sets her new password. The run then read the recovery moved on by her
// reset and left the token undone, as if another run of it had moved it
// on: her second click of the revert link (a reload, the mail opened
// again) reverted again, ending the session her reset opened and asking
// for another reset. A reset since the run's own is no run of the
// revert: the token is done, and the link answers used.
func TestARevertLinkFollowedAgainAfterItsResetChangesNothing(t *testing.T) {
	t.Parallel()
	for _, page := range []string{"revert-email", "revert-factor"} {
		ctx := context.Background()
		m, revert := thiefsChange(t, page)
		token := m.box.tokenTo(page, annHome)
		var reset accounts.LoginResult
		var resetErr error
		m.box.afterSend = func() {
			m.box.afterSend = nil // her reset's own mails go on
			reset, resetErr = m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
		}
		err := revert(token)
		m.box.afterSend = nil
		if err != nil || resetErr != nil {
			t.Fatalf("%s: the revert %v; her reset with the link it mailed, before it finished: %v", page, err, resetErr)
		}
		if err := revert(token); !errors.Is(err, accounts.ErrTokenUsed) {
			t.Errorf("%s: the revert link followed again after her reset: %v, want used", page, err)
		}
		if reset.Token != "" {
			if _, err := m.svc.Authenticate(ctx, reset.Token); err != nil {
				t.Errorf("%s: the session her reset opened, after the link was followed again: %v", page, err)
			}
		}
	}
}

// TestARevertWhoseDoneMarkFailedChangesNothingAfterItsReset: the owner
// follows her revert link (of an email change, of a factor the thief
// added); its run mails the reset link and its done mark fails (503: try
// again). She sets her new password with the mailed link, then follows
// the revert link again (the retry the 503 asked for, or the mail opened
// again). The run read a used token that was not done and reverted again
// over her reset: her new session ended and the password she had just
// chosen opened nothing until another reset (docs/gaps.md had it). A use
// records the recovery it saw; a run that finds the recovery moved on
// since through the link's own address changes nothing but what is left
// to finish.
func TestARevertWhoseDoneMarkFailedChangesNothingAfterItsReset(t *testing.T) {
	t.Parallel()
	for _, page := range []string{"revert-email", "revert-factor"} {
		ctx := context.Background()
		m, revert := thiefsChange(t, page)
		token := m.box.tokenTo(page, annHome)
		if err := failing(m, "tokens.done", func() error { return revert(token) }); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("%s: the revert whose done mark failed: %v, want 503", page, err)
		}
		reset, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
		if err != nil {
			t.Fatalf("%s: her reset with the link the revert mailed: %v", page, err)
		}
		if err := revert(token); err != nil && !errors.Is(err, accounts.ErrTokenUsed) {
			t.Errorf("%s: the revert link followed again after her reset: %v", page, err)
		}
		if reset.Token != "" {
			if _, err := m.svc.Authenticate(ctx, reset.Token); err != nil {
				t.Errorf("%s: the session her reset opened, after the link was followed again: %v", page, err)
			}
		}
		if _, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{}); err != nil {
			t.Errorf("%s: the password her reset chose, after the link was followed again: %v", page, err)
		}
		if err := revert(token); !errors.Is(err, accounts.ErrTokenUsed) {
			t.Errorf("%s: the revert link a third time: %v, want used", page, err)
		}
	}
}

// TestAThiefsResetBeforeTheRevertLandsIsUndoneByItsRetry: the owner
// follows her revert link of the email change that made the thief's
// address the account's; the token is used and the compare-and-set
// fails (503). Before her retry, the thief asks for a reset link, which
// goes to his address, and resets: the recovery moves on. Her retry must
// still take the account back: a recovery moved on since a use is the
// owner's own only when it went through the link's address.
func TestAThiefsResetBeforeTheRevertLandsIsUndoneByItsRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, revert, token, thiefs := thiefResetsBeforeTheRevert(t)
	if err := revert(token); err != nil {
		t.Fatalf("her retry of the revert: %v", err)
	}
	if _, err := m.svc.Authenticate(ctx, thiefs.Token); err == nil {
		t.Errorf("the session the thief's reset opened outlived her revert")
	}
	if _, err := m.svc.Login(ctx, "ann", "the thief's own new one", accounts.Client{}); codeOf(err) != "password_reset_required" {
		t.Errorf("the thief's new password after her revert: %v, want password_reset_required", err)
	}
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
		t.Errorf("the reset link her revert mailed: %v", err)
	}
}

// failing runs step with every store call of m named call failing before
// it is sent.
func failing(m *mailWorld, call string, step func() error) error {
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == call {
			return memstore.FailBefore
		}
		return memstore.None
	}
	defer func() { m.store.FaultAt = nil }()
	return step()
}

// TestARevertRunAgainAfterItsResetRemovesTheThiefsFactors: a thief with
// the password adds factors the owner does not have (an authenticator at
// his address after moving the email there; two authenticators, the
// second proven by the first, each told to her address). The owner
// follows her revert link (of the email change; of the first factor):
// the compare-and-set applies (her address back, every session ended, a
// reset asked for), and the factors' read fails (503: try again), before
// any factor went or a reset link was mailed. She asks for a reset link
// and sets her password, and her reset answers a challenge of the
// thief's factor. She follows the revert link again, as its 503 asked:
// the run found the recovery moved on since the use, through her
// address, and only marked the token done (a factor's revert removing
// its own factor alone): the thief's factors stayed, and her password
// opened nothing but their challenge, for good. Before 044 the retry
// reverted again and removed them; a run that writes nothing must still
// remove them.
func TestARevertRunAgainAfterItsResetRemovesTheThiefsFactors(t *testing.T) {
	t.Parallel()
	worlds := []struct {
		page  string
		world func() *mailWorld
		// token is the link the owner follows.
		token  func(*mailWorld) string
		revert func(*mailWorld, string) error
	}{
		{"revert-email", func() *mailWorld { return thiefWithFactor(t) },
			func(m *mailWorld) string { return m.box.tokenTo("revert-email", annHome) },
			func(m *mailWorld, token string) error { return m.svc.RevertEmailChange(context.Background(), token) }},
		{"revert-factor", func() *mailWorld {
			f := newFactorWorld(t) // the first factor, "phone", is the thief's
			thiefAddsASecondFactor(t, f)
			return f.mailWorld
		}, func(m *mailWorld) string { return m.box.tokens("revert-factor")[0] },
			func(m *mailWorld, token string) error { return m.svc.RevertFactor(context.Background(), token) }},
	}
	for _, w := range worlds {
		ctx := context.Background()
		m := w.world()
		token := w.token(m)
		if err := failing(m, "factors.read", func() error { return w.revert(m, token) }); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("%s: the revert whose factors' read failed: %v, want 503", w.page, err)
		}
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatal(err)
		}
		if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
			t.Fatalf("%s: her reset: %v", w.page, err)
		}
		if err := w.revert(m, token); err != nil {
			t.Fatalf("%s: the revert link followed again after her reset: %v", w.page, err)
		}
		left, _, err := m.store.Factors().Read(ctx, m.ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range left {
			if f.Confirmed() {
				t.Errorf("%s: the thief's factor %s outlives the revert run again", w.page, f.Name)
			}
		}
		r, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{})
		if err != nil || r.Token == "" {
			t.Errorf("%s: her password after the revert: %+v %v, want a session, not the thief's challenge", w.page, r, err)
		}
	}
}

// TestARevertRunAgainAfterTheThiefsResetAndAChangeBackStillRecovers: the
// owner follows her revert link of the email change that made the
// thief's address the account's; the token is used and the
// compare-and-set fails (503). The thief resets through his address
// (the recovery moves on), then asks for her address back, and she
// confirms it from her mailbox (as she would an admin's change back at
// her request): the account has the link's address again, the thief's
// password and session untouched, since a confirmation is no recovery.
// Her retry of the revert found the recovery moved on since its use
// while the account has the link's address, took it for her own reset,
// and only marked the token done: the thief kept the account. A
// recovery since the use is hers only if it went through the address
// the account has, after the address became its own.
func TestARevertRunAgainAfterTheThiefsResetAndAChangeBackStillRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, revert, token, thiefs := thiefResetsBeforeTheRevert(t)
	p, err := m.svc.Authenticate(ctx, thiefs.Token)
	if err != nil {
		t.Fatal(err)
	}
	back, again := annHome, "the thief's own new one"
	if _, err := m.svc.UpdateUser(ctx, p, m.ann.ID, accounts.UpdateInput{Email: &back, Proof: accounts.Password(again)}); err != nil {
		t.Fatalf("the thief asking for her address back: %v", err)
	}
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annHome)); err != nil {
		t.Fatalf("her confirmation of her address: %v", err)
	}
	if err := revert(token); err != nil {
		t.Fatalf("her retry of the revert: %v", err)
	}
	if _, err := m.svc.Authenticate(ctx, thiefs.Token); err == nil {
		t.Errorf("the thief's session outlived her revert")
	}
	if _, err := m.svc.Login(ctx, "ann", again, accounts.Client{}); codeOf(err) != "password_reset_required" {
		t.Errorf("the thief's password after her revert: %v, want password_reset_required", err)
	}
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
		t.Errorf("the reset link her revert mailed: %v", err)
	}
}

// TestARevertRunAgainAfterItsResetSparesHerNewFactor: the owner follows
// her revert link (of the email change that moved the account to the
// thief's address, of the factor the thief added); its run does all but
// its done mark, which fails (503: try again). She sets her new password
// with the reset link it mailed, then, minutes later, adds an
// authenticator of her own and keeps its recovery codes; then she follows
// the revert link again, as its 503 asked. The run found the recovery
// moved on since the use, through her address, and removed every factor
// confirmed since the link was mailed: hers too, with the recovery
// codes, in silence (204), so her account asked for the password alone
// while she believed it guarded by her app. What such a run has left to
// finish are the factors confirmed before her reset (the thief's); one
// confirmed after it, and after the account's last change, is hers.
func TestARevertRunAgainAfterItsResetSparesHerNewFactor(t *testing.T) {
	t.Parallel()
	for _, page := range []string{"revert-email", "revert-factor"} {
		ctx := context.Background()
		m, revert := thiefsChange(t, page)
		totp := withFactors(t, m, nil)
		token := m.box.tokenTo(page, annHome)
		if err := failing(m, "tokens.done", func() error { return revert(token) }); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("%s: the revert whose done mark failed: %v, want 503", page, err)
		}
		m.store.Advance(5 * time.Minute)
		reset, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
		if err != nil || reset.Token == "" {
			t.Fatalf("%s: her reset with the link the revert mailed: %+v %v", page, reset, err)
		}
		m.store.Advance(5 * time.Minute)
		ann, err := m.svc.Authenticate(ctx, reset.Token)
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.svc.EnrolTOTP(ctx, ann, m.ann.ID, "mine", accounts.Password(newPassword))
		if err != nil {
			t.Fatalf("%s: her enrolment after her reset: %v", page, err)
		}
		factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
		if err != nil || len(factors) != 1 {
			t.Fatalf("%s: the factors after her enrolment: %+v %v", page, factors, err)
		}
		code, err := totp.Code(factors[0].Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.svc.ConfirmTOTP(ctx, ann, m.ann.ID, e.Factor.ID, code)
		if err != nil || len(c.RecoveryCodes) == 0 {
			t.Fatalf("%s: her confirmation: %+v %v", page, c, err)
		}
		m.store.Advance(time.Minute)
		if err := revert(token); err != nil && !errors.Is(err, accounts.ErrTokenUsed) {
			t.Fatalf("%s: the revert link followed again: %v", page, err)
		}
		left, set, err := m.store.Factors().Read(ctx, m.ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(left, func(f accounts.Factor) bool { return f.ID == e.Factor.ID && f.Confirmed() }) || set.Left() == 0 {
			t.Errorf("%s: after the revert link was followed again, her own app and codes: %+v, %d codes left; want both standing", page, left, set.Left())
		}
		if r, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{}); err != nil || r.Challenge == "" {
			t.Errorf("%s: her password after the revert link was followed again: %+v %v, want her app's challenge", page, r, err)
		}
	}
}

// thiefResetsBeforeTheRevert is a world where the thief changed ann's
// address to his, her revert of it was used and its compare-and-set
// failed (503), and he then reset the password through his address: the
// revert, its token, and the session his reset opened.
func thiefResetsBeforeTheRevert(t *testing.T) (*mailWorld, func(token string) error, string, accounts.LoginResult) {
	t.Helper()
	ctx := context.Background()
	m, revert := thiefsChange(t, "revert-email")
	token := m.box.tokenTo("revert-email", annHome)
	if err := failing(m, "users.update", func() error { return revert(token) }); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("the revert whose compare-and-set failed: %v, want 503", err)
	}
	if err := m.svc.RequestPasswordReset(ctx, annNext); err != nil {
		t.Fatal(err)
	}
	thiefs, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annNext), "the thief's own new one", accounts.Client{})
	if err != nil || thiefs.Token == "" {
		t.Fatalf("the thief's reset through his address: %v", err)
	}
	return m, revert, token, thiefs
}
