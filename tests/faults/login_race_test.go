package faults

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// faultNamed makes the nth call named name (0 first), counted from now,
// take fault.
func faultNamed(st *memstore.Store, name string, nth int, fault memstore.Fault) {
	seen := 0
	st.FaultAt = func(_ int, called string) memstore.Fault {
		if called != name {
			return memstore.None
		}
		seen++
		if seen-1 == nth {
			return fault
		}
		return memstore.None
	}
}

// slowOnce makes the nth call named name (0 first), counted from now,
// Slow, with meanwhile running inside it: another request that runs while
// this one is stuck in that call.
func slowOnce(st *memstore.Store, name string, nth int, meanwhile func()) {
	faultNamed(st, name, nth, memstore.Slow)
	st.Meanwhile = meanwhile
}

// calm ends slowOnce.
func calm(st *memstore.Store) {
	recovered(st)
	st.Meanwhile = nil
}

// attackerLogsIn is a login with ann's old password (leaked) while the
// owner's request runs inside its call named slowCall; it returns the
// login's answer, and fails the test if the owner's request did not
// answer success.
func attackerLogsIn(t *testing.T, m *mailWorld, slowCall string, owner func() error) (accounts.LoginResult, error) {
	t.Helper()
	var ownerErr error
	ran := false
	slowOnce(m.store, slowCall, 0, func() { ran, ownerErr = true, owner() })
	r, err := m.svc.Login(context.Background(), "ann", password, accounts.Client{UserAgent: "attacker"})
	calm(m.store)
	if !ran || ownerErr != nil {
		t.Fatalf("the owner's request inside the login's %s: ran %v, answered %v", slowCall, ran, ownerErr)
	}
	return r, err
}

// noSessionOf fails the test if the login answered success with a session
// that works, or answered anything but invalid_credentials.
func noSessionOf(t *testing.T, what string, m *mailWorld, r accounts.LoginResult, err error) {
	t.Helper()
	if err == nil {
		if _, aerr := m.svc.Authenticate(context.Background(), r.Token); aerr == nil {
			t.Errorf("%s: the login in flight answered success and its session works after the owner's request answered success", what)
		}
	}
	if !errors.Is(err, accounts.ErrInvalidCredentials) {
		t.Errorf("%s: the login in flight answered %v, want invalid_credentials", what, err)
	}
}

// TestALoginInFlightDoesNotSurviveAReset: the attacker's login read the
// account with the old password (its read slow); the owner's reset sets a
// new one and ends every session meanwhile; then the login writes its
// session. The login checks the password's epoch again after its session
// write, so it answers invalid_credentials and its session does not work
// once the reset answered (U8; docs/design/sessions.md): a re-read for
// visibility and suspension alone would let it work. The same with the
// login's session write landing after the reset listed the sessions.
func TestALoginInFlightDoesNotSurviveAReset(t *testing.T) {
	t.Parallel()
	for _, slowCall := range []string{"users.credentials", "sessions_by_user.insert"} {
		m := newMailWorld(t, true)
		r, err := attackerLogsIn(t, m, slowCall, func() error {
			_, err := m.svc.ResetPassword(context.Background(), m.reset, newPassword, accounts.Client{})
			return err
		})
		noSessionOf(t, "reset during the login's "+slowCall, m, r, err)
		for i, token := range m.sessions {
			if _, aerr := m.svc.Authenticate(context.Background(), token); aerr == nil {
				t.Errorf("reset during the login's %s: session %d from before the reset works", slowCall, i)
			}
		}
	}
}

// TestALoginInFlightDoesNotSurviveAPasswordChange: as above with the
// owner changing the password from a session of theirs, which goes on
// working (a change ends every other session).
func TestALoginInFlightDoesNotSurviveAPasswordChange(t *testing.T) {
	t.Parallel()
	for _, slowCall := range []string{"users.credentials", "sessions_by_user.insert"} {
		m := newMailWorld(t, false)
		ctx := context.Background()
		r, err := attackerLogsIn(t, m, slowCall, func() error {
			p, err := m.svc.Authenticate(ctx, m.sessions[0])
			if err != nil {
				return err
			}
			return m.svc.ChangePassword(ctx, p, m.ann.ID, accounts.Password(password), newPassword)
		})
		noSessionOf(t, "change during the login's "+slowCall, m, r, err)
		if _, aerr := m.svc.Authenticate(ctx, m.sessions[0]); aerr != nil {
			t.Errorf("change during the login's %s: the session that changed the password stopped working: %v", slowCall, aerr)
		}
		if _, aerr := m.svc.Authenticate(ctx, m.sessions[1]); aerr == nil {
			t.Errorf("change during the login's %s: another session from before the change works", slowCall)
		}
	}
}

// TestASessionOpenedBeforeAHeldResetLandsStopsWorking: the reset's
// compare-and-set is held (503: the client may retry, or not); the
// attacker logs in with the old password, still in force; then the held
// compare-and-set lands. No retry ends the attacker's session: the new
// password's epoch alone must stop it (else it works until its TTL), and
// the owner's list must not show it.
func TestASessionOpenedBeforeAHeldResetLandsStopsWorking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, true)
	faultNamed(m.store, "users.update", 0, memstore.LandLate)
	_, err := m.svc.ResetPassword(ctx, m.reset, newPassword, accounts.Client{})
	recovered(m.store)
	if !errors.Is(err, domain.ErrOutcomeUnknown) {
		t.Fatalf("the reset whose compare-and-set is held answered %v", err)
	}
	r, err := m.svc.Login(ctx, "ann", password, accounts.Client{UserAgent: "attacker"})
	if err != nil {
		t.Fatalf("the old password, still in force: %v", err)
	}
	m.store.Land()
	if _, err := m.svc.Authenticate(ctx, r.Token); !errors.Is(err, domain.ErrNoSession) {
		t.Errorf("a session opened with the old password, once the reset's password landed: %v", err)
	}
	page, err := m.svc.ListSessions(ctx, principal(m.ann), m.ann.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Errorf("the owner's list shows sessions that do not work: %+v", page.Items)
	}
}

// upgradingHasher is a hasher whose parameters move on: a hash is its
// parameters' name, a colon and the password, and one made with other
// parameters than the current ones asks to be rehashed.
type upgradingHasher struct {
	mu      sync.Mutex
	current string
}

func (h *upgradingHasher) params() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.current
}

func (h *upgradingHasher) Hash(_ context.Context, pw string) (string, error) {
	return h.params() + ":" + pw, nil
}

func (h *upgradingHasher) Verify(_ context.Context, pw, phc string) (bool, bool, error) {
	params, rest, _ := strings.Cut(phc, ":")
	return rest == pw, params != h.params(), nil
}

func (h *upgradingHasher) Burn(context.Context, string) error { return nil }

// upgradingService is the accounts on a fresh store, hashing with an
// upgradingHasher at "v1", mailing into box (nil: no mail).
func upgradingService(box *recorder) (*accounts.Service, *memstore.Store, *upgradingHasher) {
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	h := &upgradingHasher{current: "v1"}
	cfg := accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now, Background: atOnce}
	if box != nil {
		cfg.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour}
	}
	svc := accounts.New(cfg, st.Claims(), st.Users(), st.Sessions(), h, nopLog{})
	return svc, st, h
}

// TestARehashKeepsResetLinksAndSessions: a login that renews the stored
// hash (the hasher's parameters moved on) changes no password, so a reset
// link mailed before it still works, and the sessions from before it too:
// a reset token's print is of the password's epoch, which a rehash keeps,
// not of the stored hash, which a rehash changes (docs/design/tokens.md).
func TestARehashKeepsResetLinksAndSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box := &recorder{}
	svc, st, h := upgradingService(box)
	u := signupMailed(t, svc, "ann")
	before, err := svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RequestPasswordReset(ctx, "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	reset := box.tokens("reset")[0]
	h.mu.Lock()
	h.current = "v2"
	h.mu.Unlock()
	if _, err := svc.Login(ctx, "ann", password, accounts.Client{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Users().Get(ctx, u.ID); got.PasswordHash != "v2:"+password {
		t.Fatalf("the login did not rehash: %q", got.PasswordHash)
	}
	if _, err := svc.Authenticate(ctx, before.Token); err != nil {
		t.Errorf("a session from before the rehash stopped working: %v", err)
	}
	if _, err := svc.ResetPassword(ctx, reset, newPassword, accounts.Client{}); err != nil {
		t.Fatalf("a reset link mailed before a rehash: %v", err)
	}
	if _, err := svc.Login(ctx, "ann", newPassword, accounts.Client{}); err != nil {
		t.Fatalf("the reset's password: %v", err)
	}
	if _, err := svc.Authenticate(ctx, before.Token); !errors.Is(err, domain.ErrNoSession) {
		t.Errorf("a session from before the reset: %v", err)
	}
}

// TestARehashWritesTheRowItRead: the login reads its credentials alone,
// and a write of the account writes every column, so the rehash must
// write the whole row as stored: after a login that rehashes, every
// column but the hash, the version and the update time is as it was (a
// change of email pending, a recovery address, the last lift, an admin's
// change, the password's epoch and session). And a rehash whose password
// was changed after the login read it writes nothing: the new password
// stays.
func TestARehashWritesTheRowItRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, h := upgradingService(nil)
	u := signupMailed(t, svc, "ann")
	full, err := st.Users().Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := st.Now().UTC()
	full.Version++
	full.PendingEmail, full.PendingEmailKey, full.PendingEmailAt, full.PendingEmailSession = "ann@next.example", "ann@next.example", now, "s_x"
	full.RecoveryEmail, full.RecoveryEmailKey, full.RecoveryUntil = "ann@old.example", "ann@old.example", now.Add(time.Hour)
	full.LastLift = &domain.Lift{Kind: domain.LiftUnsuspended, At: now, By: "u_admin",
		Suspension: domain.Suspension{UserID: u.ID, Username: "ann", Reason: "spam", SuspendedAt: now.Add(-time.Hour), SuspendedBy: "u_admin"}}
	full.AdminChange = []domain.AuditEntry{{UserID: u.ID, At: now, Version: full.Version, Action: domain.AuditAction("suspended"), Actor: "u_admin"}}
	full.PasswordEpoch, full.PasswordSession, full.EmailVerifiedAt = 2, "hash-of-a-session", now
	if ok, err := st.Users().Update(ctx, full); err != nil || !ok {
		t.Fatalf("set every column: %v %v", ok, err)
	}
	h.mu.Lock()
	h.current = "v2"
	h.mu.Unlock()
	if _, err := svc.Login(ctx, "ann", password, accounts.Client{}); err != nil {
		t.Fatal(err)
	}
	after, err := st.Users().Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.PasswordHash != "v2:"+password || after.Version != full.Version+1 {
		t.Fatalf("the login did not rehash: %q at version %d", after.PasswordHash, after.Version)
	}
	want := full
	want.PasswordHash, want.Version, want.UpdatedAt = after.PasswordHash, after.Version, after.UpdatedAt
	if !reflect.DeepEqual(after, want) {
		t.Errorf("the rehash changed more than the hash:\n got %+v\nwant %+v", after, want)
	}

	// The password changes while the login that will rehash is between
	// its read and its rehash: the rehash leaves the new password alone.
	p, err := svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := svc.Authenticate(ctx, p.Token)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.current = "v3"
	h.mu.Unlock()
	slowOnce(st, "users.credentials", 0, func() {
		if err := svc.ChangePassword(ctx, owner, u.ID, accounts.Password(password), newPassword); err != nil {
			t.Errorf("the change during the login: %v", err)
		}
	})
	_, err = svc.Login(ctx, "ann", password, accounts.Client{})
	calm(st)
	if !errors.Is(err, accounts.ErrInvalidCredentials) {
		t.Errorf("the login whose password changed meanwhile: %v", err)
	}
	if got, _ := st.Users().Get(ctx, u.ID); !strings.HasSuffix(got.PasswordHash, ":"+newPassword) {
		t.Errorf("the rehash wrote over the new password: %q", got.PasswordHash)
	}
}

// TestALoginInFlightDoesNotSurviveAFirstFactor: the attacker holds ann's
// password (and had a session). ann, who has no second factor yet, adds
// one and then signs out everywhere else: from then on the password
// alone answers a challenge, never a session
// (docs/design/second-factors.md). The attacker's login read her factors
// (none) before the confirmation, and writes its session after her
// revocation moved her password epoch on (its index write slow).
// openSession reads the factors and the epoch again beside the account
// once the session is written: it deletes the session and answers the
// factor's challenge, or refuses the login.
func TestALoginInFlightDoesNotSurviveAFirstFactor(t *testing.T) {
	t.Parallel()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, nil)
	ctx := context.Background()
	owner := func() error {
		p, err := m.svc.Authenticate(ctx, m.sessions[0])
		if err != nil {
			return err
		}
		e, err := m.svc.EnrolTOTP(ctx, p, m.ann.ID, "phone", accounts.Password(password))
		if err != nil {
			return err
		}
		factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
		if err != nil {
			return err
		}
		code, err := totp.Code(factors[0].Sealed, m.ann.ID, m.store.Now().Unix()/factor.Period)
		if err != nil {
			return err
		}
		if _, err := m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, code); err != nil {
			return err
		}
		return m.svc.RevokeSessions(ctx, p, m.ann.ID, true)
	}
	r, err := attackerLogsIn(t, m, "sessions_by_user.insert", owner)
	// The challenge (the factors read again), or a refusal (the epoch her
	// revocation moved on): never a session.
	if r.Token != "" || (r.Challenge == "" && !errors.Is(err, accounts.ErrInvalidCredentials)) {
		t.Errorf("the login in flight across the first factor's confirmation answered %+v, %v; want the factor's challenge or a refusal, and no session", r, err)
	}
	if r.Token != "" {
		if p, aerr := m.svc.Authenticate(ctx, r.Token); aerr == nil {
			t.Errorf("its session works (made with %v)", p.Session.MadeWith)
		}
	}
	if _, aerr := m.svc.Authenticate(ctx, m.sessions[1]); aerr == nil {
		t.Errorf("the session the owner revoked still works")
	}
}
