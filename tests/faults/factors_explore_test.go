package faults

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/internal/factor"
	"shelf/tests/memstore"
)

// factorWorld is ann's account with second factors on: an authenticator
// app confirmed with the code of the step before now's, her recovery
// codes, a login's challenge waiting for its code, and a throttle and the
// audit in the store, so every write of a factor's protocol is a call of
// the schedule.
type factorWorld struct {
	*mailWorld
	totp     *factor.TOTP
	fac      accounts.Factor
	recovery []string
	// challenge is a login's, waiting for its code.
	challenge string
	// tokens are the sessions the second steps answered with.
	tokens []string
}

// withFactors turns second factors on in m, apps sealed under the
// development key, with what more sets besides (nil: nothing); it
// returns the apps' codes.
func withFactors(t *testing.T, m *mailWorld, more func(*memstore.Store, *accounts.Config)) *factor.TOTP {
	t.Helper()
	totp, err := factor.New("shelf", []factor.Key{factor.DevelopmentKey()})
	if err != nil {
		t.Fatal(err)
	}
	m.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Factors, c.TOTP = st.Factors(), totp
		if more != nil {
			more(st, c)
		}
	})
	return totp
}

// verify confirms ann's address with the link her signup mailed: only an
// account whose address is verified adds a factor
// (docs/design/second-factors.md).
func (m *mailWorld) verify(t *testing.T) {
	t.Helper()
	if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annHome)); err != nil {
		t.Fatal(err)
	}
}

func newFactorWorld(t *testing.T) *factorWorld {
	t.Helper()
	m := newMailWorld(t, false)
	m.verify(t)
	totp := withFactors(t, m, func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts(), PerAddress: 5, PerLogin: 50, Window: 15 * 60e9}
		c.Audit = st.AccountAudit()
	})
	f := &factorWorld{mailWorld: m, totp: totp}
	ctx := context.Background()
	p := domain.Principal{UserID: m.ann.ID}
	e, begun := enrolPhone(t, m)
	f.fac = begun
	c, err := m.svc.ConfirmTOTP(ctx, p, m.ann.ID, e.Factor.ID, f.code(t, -1))
	if err != nil {
		t.Fatal(err)
	}
	f.recovery = c.RecoveryCodes
	r, err := m.svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil || r.Challenge == "" {
		t.Fatalf("a login with a factor: %+v %v", r, err)
	}
	f.challenge = r.Challenge
	return f
}

// enrolPhone begins ann's enrolment of an app named phone, with her
// password: the enrolment, and its pending factor as stored.
func enrolPhone(t *testing.T, m *mailWorld) (accounts.Enrolment, accounts.Factor) {
	t.Helper()
	ctx := context.Background()
	e, err := m.svc.EnrolTOTP(ctx, domain.Principal{UserID: m.ann.ID}, m.ann.ID, "phone", accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	factors, _, err := m.store.Factors().Read(ctx, m.ann.ID)
	if err != nil || len(factors) != 1 {
		t.Fatalf("the enrolment: %+v %v", factors, err)
	}
	return e, factors[0]
}

// code is the app's code at the step after now's by ahead (-1, 0, 1 are
// what the service takes), made from the secret as the set-up read it:
// no store call of the schedule's.
func (f *factorWorld) code(t *testing.T, ahead int64) string {
	t.Helper()
	c, err := f.totp.Code(f.fac.Sealed, f.ann.ID, f.store.Now().Unix()/factor.Period+ahead)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lastStep reads the factor's last step used.
func (f *factorWorld) lastStep(t *testing.T) int64 {
	t.Helper()
	factors, _, err := f.store.Factors().Read(context.Background(), f.ann.ID)
	if err != nil || len(factors) != 1 {
		t.Fatalf("the factors: %+v %v", factors, err)
	}
	return factors[0].LastStep
}

// secondStep answers the login's challenge with proof, keeping the
// session it answers with.
func (f *factorWorld) secondStep(proof accounts.Proof) error {
	r, err := f.svc.SecondFactor(context.Background(), f.challenge, proof, accounts.Client{UserAgent: "second step"})
	if r.Token != "" {
		f.tokens = append(f.tokens, r.Token)
	}
	return err
}

// working counts ann's sessions a second step made that authenticate.
func (f *factorWorld) working(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	entries, err := f.store.Sessions().Entries(ctx, f.ann.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		s, err := f.store.Sessions().Get(ctx, e.TokenHash)
		if err == nil && s.UserAgent == "second step" {
			n++
		}
	}
	return n
}

// factorRefusal is an answer a retry may get after its first attempt
// did what it could not tell: the challenge, the code or the recovery
// code used.
func factorRefusal(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && (de.Code == "invalid_challenge" || de.Code == "invalid_code" || de.Code == "enrolment_expired")
}

// enrolmentFenced reports a retry's answer to a confirmation whose write
// was held with its answer lost: the confirmation removed the enrolment
// still pending so that the write lands on nothing
// (TestAFactorConfirmedLateDoesNotSurviveAReset), and the client begins
// again.
func enrolmentFenced(err error) bool { return errors.Is(err, accounts.ErrFactorNotFound) }

// shownStand reports whether the codes shown are those of set, each
// once: set keeps a hash of each code, which this computes as the
// service does (recoveryHash, domain/accounts/factors.go, unexported;
// were it to change, this check would fail, never pass).
func shownStand(userID string, shown []string, set accounts.RecoverySet) bool {
	hashes := make([]string, len(shown))
	for i, code := range shown {
		code = strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
		sum := sha256.Sum256([]byte("shelf recovery code\x00" + userID + "\x00" + code))
		hashes[i] = hex.EncodeToString(sum[:])
	}
	stored := slices.Clone(set.Codes)
	slices.Sort(hashes)
	slices.Sort(stored)
	return slices.Equal(hashes, stored)
}

type factorOperation struct {
	name       string
	run, retry func(t *testing.T, f *factorWorld) error
	check      func(t *testing.T, name string, f *factorWorld, ok bool)
}

// aChallengeMakesOneSession: whatever the faults, a login's challenge
// made at most one working session, and one when the client was told so.
func aChallengeMakesOneSession(t *testing.T, name string, f *factorWorld, ok bool) {
	n := f.working(t)
	if n > 1 || (ok && n != 1) {
		t.Errorf("%s: %d working sessions from one challenge (answered success: %v)", name, n, ok)
	}
	if ok && len(f.tokens) == 0 {
		t.Errorf("%s: success without a session handed out", name)
	}
	for _, tok := range f.tokens {
		if _, err := f.svc.Authenticate(context.Background(), tok); err != nil {
			t.Errorf("%s: a session handed out does not work: %v", name, err)
		}
	}
}

var factorOperations = []factorOperation{
	{
		name: "second step with a code",
		run: func(t *testing.T, f *factorWorld) error {
			return f.secondStep(accounts.Proof{Code: f.code(t, 0)})
		},
		retry: func(t *testing.T, f *factorWorld) error {
			return f.secondStep(accounts.Proof{Code: f.code(t, 1)})
		},
		check: func(t *testing.T, name string, f *factorWorld, ok bool) {
			aChallengeMakesOneSession(t, name, f, ok)
			// The first code, used or not, never works twice: a new
			// challenge with it is refused once any attempt used it.
			r, err := f.svc.Login(context.Background(), "ann", password, accounts.Client{})
			if err != nil {
				t.Fatalf("%s: a new login: %v", name, err)
			}
			before := len(f.tokens)
			f.challenge = r.Challenge
			last := f.lastStep(t)
			for _, ahead := range []int64{0, 1} {
				c := f.code(t, ahead)
				if last >= f.store.Now().Unix()/factor.Period+ahead {
					if err := f.secondStep(accounts.Proof{Code: c}); !errors.Is(err, accounts.ErrWrongCode) {
						t.Errorf("%s: a code of a step used already: %v, want refused", name, err)
					}
				}
			}
			if len(f.tokens) != before {
				t.Errorf("%s: a used code made a session", name)
			}
		},
	},
	{
		name: "second step with a recovery code",
		run: func(t *testing.T, f *factorWorld) error {
			return f.secondStep(accounts.Proof{RecoveryCode: f.recovery[0]})
		},
		retry: func(t *testing.T, f *factorWorld) error {
			return f.secondStep(accounts.Proof{RecoveryCode: f.recovery[0]})
		},
		check: func(t *testing.T, name string, f *factorWorld, ok bool) {
			aChallengeMakesOneSession(t, name, f, ok)
			_, set, err := f.store.Factors().Read(context.Background(), f.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			if left := set.Left(); left < 9 || (ok && left != 9) {
				t.Errorf("%s: %d recovery codes left after one use (answered success: %v)", name, left, ok)
			}
			if set.Left() == 9 && len(f.store.AuditEntries(f.ann.ID)) == 0 {
				t.Errorf("%s: a recovery code was used without its audit entry", name)
			}
		},
	},
	{
		name: "revert a factor from its notice",
		run: func(t *testing.T, f *factorWorld) error {
			return f.svc.RevertFactor(context.Background(), f.box.tokens("revert-factor")[0])
		},
		retry: func(t *testing.T, f *factorWorld) error {
			err := f.svc.RevertFactor(context.Background(), f.box.tokens("revert-factor")[0])
			if errors.Is(err, accounts.ErrTokenUsed) {
				return nil // the first attempt finished everything
			}
			return err
		},
		check: func(t *testing.T, name string, f *factorWorld, ok bool) {
			ctx := context.Background()
			factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			u, err := f.store.Users().Get(ctx, f.ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(factors) == 0 && !u.PasswordResetRequired {
				t.Errorf("%s: the factor is gone but the thief's password still opens the account", name)
			}
			if !ok {
				return
			}
			if len(factors) != 0 {
				t.Errorf("%s: the revert answered success and the factor stands", name)
			}
			for _, tok := range f.sessions {
				if _, err := f.svc.Authenticate(ctx, tok); err == nil {
					t.Errorf("%s: a session from before the revert still works", name)
				}
			}
			if _, err := f.svc.Login(ctx, "ann", password, accounts.Client{}); !errors.Is(err, accounts.ErrPasswordResetRequired) {
				t.Errorf("%s: the password after the revert: %v, want reset required", name, err)
			}
		},
	},
}

// TestExploreFactors runs each factor operation with every fault at
// every store call, lands what was held, lets the client retry, and
// checks: a challenge makes one session at most, a code and a recovery
// code are used at most once (a recovery code's use audited), a revert
// leaves no factor without making the password useless.
func TestExploreFactors(t *testing.T) {
	t.Parallel()
	total := 0
	for _, op := range factorOperations {
		probe := newFactorWorld(t)
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(t, probe) })
		total += everySchedule(t, op.name, calls, []string{"land-then-retry"}, func(name string, k int, fault memstore.Fault, _ int) {
			f := newFactorWorld(t)
			faultOnce(f.store, k, fault)
			err := op.run(t, f)
			recovered(f.store)
			if err != nil && !expected(err) && !factorRefusal(err) && !refused(err) {
				t.Errorf("%s: the operation answered %v", name, err)
			}
			f.store.Land()
			ok := err == nil
			if err != nil && !factorRefusal(err) && !refused(err) {
				if rerr := op.retry(t, f); rerr == nil {
					ok = true
				} else if !factorRefusal(rerr) && !expected(rerr) {
					t.Errorf("%s: the retry answered %v", name, rerr)
				}
			}
			op.check(t, name, f, ok)
		})
	}
	t.Logf("%d schedules in all", total)
}

// staleWorld is ann with a recovery set left over (her first factor's
// removal lost the set's removal) and a second app pending: what a
// confirmation must not bring back to life.
type staleWorld struct {
	*factorWorld
	stale   accounts.RecoverySet
	pending string
	// codes are what the confirmation showed.
	codes []string
}

func newStaleWorld(t *testing.T) *staleWorld {
	t.Helper()
	f := newFactorWorld(t)
	ctx := context.Background()
	_, stale, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil || stale.Generation == "" {
		t.Fatalf("the first set: %+v %v", stale, err)
	}
	if _, err := f.store.Factors().Remove(ctx, f.ann.ID, f.fac.ID); err != nil {
		t.Fatal(err)
	}
	e, err := f.svc.EnrolTOTP(ctx, domain.Principal{UserID: f.ann.ID}, f.ann.ID, "tablet", accounts.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	factors, _, err := f.store.Factors().Read(ctx, f.ann.ID)
	if err != nil || len(factors) != 1 {
		t.Fatalf("the enrolment: %+v %v", factors, err)
	}
	f.fac = factors[0]
	return &staleWorld{factorWorld: f, stale: stale, pending: e.Factor.ID}
}

// TestExploreAFirstFactorsRecoverySet: the confirmation of a first
// factor, over a set its predecessor left, under every fault at every
// store call, with the held writes landed and the client's retry: the
// old set never stands beside a confirmed factor (its codes would open
// the account again), and a confirmation that answered success showed
// the codes of the set that stands.
func TestExploreAFirstFactorsRecoverySet(t *testing.T) {
	t.Parallel()
	confirm := func(t *testing.T, s *staleWorld, ahead int64) error {
		c, err := s.svc.ConfirmTOTP(context.Background(), domain.Principal{UserID: s.ann.ID}, s.ann.ID, s.pending, s.code(t, ahead))
		if err == nil {
			s.codes = c.RecoveryCodes
		}
		return err
	}
	probe := newStaleWorld(t)
	calls := callsOf(t, probe.store, "confirm", func() error { return confirm(t, probe, 0) })
	total := everySchedule(t, "confirm a first factor over a stale set", calls, []string{"land-then-retry"}, func(name string, k int, fault memstore.Fault, _ int) {
		s := newStaleWorld(t)
		faultOnce(s.store, k, fault)
		err := confirm(t, s, 0)
		recovered(s.store)
		if err != nil && !expected(err) && !factorRefusal(err) {
			t.Errorf("%s: the confirmation answered %v", name, err)
		}
		s.store.Land()
		ok := err == nil
		if err != nil && !factorRefusal(err) {
			if rerr := confirm(t, s, 1); rerr == nil {
				ok = true
			} else if !factorRefusal(rerr) && !expected(rerr) && !enrolmentFenced(rerr) {
				t.Errorf("%s: the retry answered %v", name, rerr)
			}
		}
		factors, set, err := s.store.Factors().Read(context.Background(), s.ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		confirmed := len(factors) == 1 && factors[0].Confirmed()
		if confirmed && set.Generation == s.stale.Generation {
			t.Errorf("%s: the app is confirmed beside the old recovery set", name)
		}
		if ok && (!confirmed || len(s.codes) != 10 || set.Left() != 10 || !shownStand(s.ann.ID, s.codes, set)) {
			t.Errorf("%s: the confirmation answered success: confirmed %v, %d codes shown (the set's: %v), set %+v",
				name, confirmed, len(s.codes), shownStand(s.ann.ID, s.codes, set), set)
		}
	})
	t.Logf("%d schedules", total)
}
