package faults

import (
	"context"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// TestARevertUndoesAFactorAddedAtTheThiefsAddress: a thief with a
// session and the password (the account has no factor) moves the email to
// their address and confirms it there, then adds an authenticator, whose
// notice (and revert link) goes to the account's address of the moment:
// the thief's. The owner's revert of the email change gives her address
// back, asks for a reset, and removes the factors enrolled since the
// change, so her reset opens a session (before, the thief's factor stayed:
// her reset answered a challenge she could not meet, the recovery codes
// shown to the thief, the factor's own revert link mailed to the thief).
func TestARevertUndoesAFactorAddedAtTheThiefsAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := thiefWithFactor(t)
	if n := m.box.sentTo("revert-factor", annHome); n != 0 {
		t.Logf("factor notices to the owner's address: %d", n)
	}
	// The owner follows the email change's revert link, then its reset.
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatal(err)
	}
	checkThiefFactorGone(t, "the revert", m)
}

// thiefWithFactor is ann's account after a thief with a session and the
// password moved its email to their address, confirmed it there, and
// added and confirmed an authenticator (its notice mailed to the thief).
func thiefWithFactor(t *testing.T) *mailWorld {
	t.Helper()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	totp := withFactors(t, m, nil)
	thiefTakes(t, m) // email now annNext, the thief's; annHome held for the revert
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatalf("the thief's session after the change: %v", err)
	}
	e, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "thief", accounts.Password(password))
	if err != nil {
		t.Fatalf("the thief's enrolment: %v", err)
	}
	thiefConfirms(t, m, totp, p, e.Factor.ID)
	return m
}

// checkThiefFactorGone: after the owner's revert answered success, no
// factor the thief confirmed is left, and the owner's reset (the link the
// revert mailed, or one she asks for if that mail failed) opens a session,
// not a challenge she cannot meet.
func checkThiefFactorGone(t *testing.T, name string, m *mailWorld) {
	t.Helper()
	ctx := context.Background()
	left, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil {
		t.Fatalf("%s: reading the factors: %v", name, err)
	}
	for _, f := range left {
		if f.Confirmed() {
			t.Errorf("%s: the thief's factor %s outlives the owner's revert", name, f.ID)
		}
	}
	if m.box.tokenTo("reset", annHome) == "" {
		if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
			t.Fatalf("%s: asking for a reset link: %v", name, err)
		}
	}
	r, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{})
	if err != nil {
		t.Errorf("%s: the owner's reset: %v", name, err)
	} else if r.Token == "" {
		t.Errorf("%s: after her revert and reset, the owner gets a challenge for the thief's factor (%q), no session: locked out", name, r.Challenge)
	}
}

// TestExploreARevertRemovingTheThiefsFactor runs the owner's revert of
// the thief's email change with every fault at every store call (the
// factors' read and removal among them), lands the held writes and
// retries the revert: once it answered success, the thief's factor is
// gone and her reset opens a session.
func TestExploreARevertRemovingTheThiefsFactor(t *testing.T) {
	t.Parallel()
	revert := mailOperation{
		name: "revert-with-thiefs-factor",
		run: func(m *mailWorld) error {
			return m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome))
		},
		retry: func(m *mailWorld) error {
			return usedIsDone(m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome)))
		},
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			if !ok {
				t.Errorf("%s: the revert and its retry did not answer success", name)
				return
			}
			checkThiefFactorGone(t, name, m)
		},
	}
	fresh := func(mailOperation) *mailWorld { return thiefWithFactor(t) }
	total := exploreMailOperations(t, []mailOperation{revert}, fresh, func(err error) bool { return refused(err) || expected(err) })
	t.Logf("%d schedules in all", total)
}

// TestARevertUndoesAFactorBegunBeforeTheChangeAndConfirmedAtTheThiefsAddress:
// a thief with a session and the password asks to move the email to
// their address, begins an authenticator's enrolment while the account
// still has the owner's address (the change pending; asking for it ended
// the other sessions and the enrolments pending then), confirms the new
// address, and only then confirms the authenticator: its notice (and
// revert link) goes to the thief's address, as for a factor begun after
// the change. The owner's revert of the email change must remove it all
// the same, or her reset answers a challenge she cannot meet.
func TestARevertUndoesAFactorBegunBeforeTheChangeAndConfirmedAtTheThiefsAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	totp := withFactors(t, m, nil)
	if err := changeEmail(m, annNext); err != nil {
		t.Fatal(err)
	}
	_, e := thiefEnrols(t, m, 0)
	m.store.Advance(time.Minute)
	// The email now annNext, the thief's; annHome held for the revert.
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annNext)); err != nil {
		t.Fatal(err)
	}
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatalf("the thief's session after the change: %v", err)
	}
	thiefConfirms(t, m, totp, p, e.Factor.ID)
	if n := m.box.sentTo("revert-factor", annHome); n != 0 {
		t.Fatalf("the factor's notice reached the owner's address (%d): the test no longer shows the attack", n)
	}
	if err := m.svc.RevertEmailChange(ctx, m.box.tokenTo("revert-email", annHome)); err != nil {
		t.Fatal(err)
	}
	checkThiefFactorGone(t, "the revert", m)
}

// thiefEnrols has the holder of ann's session n (and her password, the
// account having no factor) begin an authenticator's enrolment.
func thiefEnrols(t *testing.T, m *mailWorld, n int) (domain.Principal, accounts.Enrolment) {
	t.Helper()
	p, err := m.svc.Authenticate(context.Background(), m.sessions[n])
	if err != nil {
		t.Fatal(err)
	}
	e, err := m.svc.EnrolTOTP(context.Background(), p, m.ann.ID, "thief", accounts.Password(password))
	if err != nil {
		t.Fatalf("the thief's enrolment: %v", err)
	}
	return p, e
}

// thiefConfirms confirms ann's one factor, id, with its current code,
// through the thief's principal p.
func thiefConfirms(t *testing.T, m *mailWorld, totp *factor.TOTP, p domain.Principal, id string) {
	t.Helper()
	ctx := context.Background()
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil || len(factors) != 1 {
		t.Fatalf("the factors: %+v %v", factors, err)
	}
	code, err := totp.Code(factors[0].Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.ConfirmTOTP(ctx, p, m.ann.ID, id, code); err != nil {
		t.Fatalf("the thief's confirmation: %v", err)
	}
}

// thiefAddsASecondFactor has the thief, holding the password and ann's
// first factor ("phone"), enrol an authenticator "second" proven by the
// first one's code and confirm it.
func thiefAddsASecondFactor(t *testing.T, f *factorWorld) {
	t.Helper()
	ctx := context.Background()
	current := password
	p := domain.Principal{UserID: f.ann.ID}
	e, err := f.svc.EnrolTOTP(ctx, p, f.ann.ID, "second", accounts.Proof{CurrentPassword: &current, Code: f.code(t, 0)})
	if err != nil {
		t.Fatalf("the second enrolment: %v", err)
	}
	factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, fa := range factors {
		if fa.ID != e.Factor.ID {
			continue
		}
		code, err := f.totp.Code(fa.Sealed, f.ann.ID, f.store.Now().Unix()/factor.Period)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.ConfirmTOTP(ctx, p, f.ann.ID, fa.ID, code); err != nil {
			t.Fatalf("the second confirmation: %v", err)
		}
	}
}

// TestAFactorsRevertUndoesTheFactorsAddedAfterIt: a thief with the
// password (the account had no factor) adds an authenticator with the
// password alone, its notice and revert link mailed to the owner, then a
// second one proven by the first one's code. The owner follows the first
// notice's link and resets her password: her login must open a session.
// Before, the revert removed only the factor its link named; the second
// stood, with the recovery codes shown to the thief, and her reset
// answered a challenge for it that only its own notice's link undid.
func TestAFactorsRevertUndoesTheFactorsAddedAfterIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t) // the first factor, "phone", is the thief's
	thiefAddsASecondFactor(t, f)
	if n := f.box.sentTo("revert-factor", annHome); n != 2 {
		t.Fatalf("%d factor notices reached the owner, want 2", n)
	}
	if err := f.svc.RevertFactor(ctx, f.box.tokens("revert-factor")[0]); err != nil {
		t.Fatalf("the first factor's revert: %v", err)
	}
	checkThiefFactorGone(t, "the first factor's revert", f.mailWorld)
}

// TestAFactorsRevertUndoesAFactorAddedAfterItOnAProcessBehind: as
// TestAFactorsRevertUndoesTheFactorsAddedAfterIt, but the thief's second
// factor, proven by the first one's code a moment after the first one's
// notice, goes through a process whose clock runs two seconds behind
// (tests/nemesis/skewedapi): it records its confirmation two seconds
// before that notice's time. The owner follows the first notice's link
// (it says it removes that factor and any added after it) and resets her
// password; the revert judged "added after" by the clocks alone, kept the
// second factor, and her login answered the thief's challenge.
func TestAFactorsRevertUndoesAFactorAddedAfterItOnAProcessBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFactorWorld(t) // the first factor, "phone", is the thief's
	f.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Now = func() time.Time { return st.Now().Add(-2 * time.Second) }
	})
	thiefAddsASecondFactor(t, f)
	f.rewire(func(st *memstore.Store, c *accounts.Config) { c.Now = st.Now })
	if n := f.box.sentTo("revert-factor", annHome); n != 2 {
		t.Fatalf("%d factor notices reached the owner, want 2", n)
	}
	if err := f.svc.RevertFactor(ctx, f.box.tokens("revert-factor")[0]); err != nil {
		t.Fatalf("the first factor's revert: %v", err)
	}
	checkThiefFactorGone(t, "the first factor's revert", f.mailWorld)
}
