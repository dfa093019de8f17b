package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// mailWorld is ann's account on an accounts service that mails (inline:
// every mail job's store calls are the schedule's), with two sessions and,
// for resets, a reset link mailed to her.
type mailWorld struct {
	*world
	box      *recorder
	ann      domain.User
	sessions []string
	// reset is the reset token mailed in the set-up ("" for none).
	reset string
	// raced: a racing reset with otherPassword answered success.
	raced bool
	// opened are the tokens of the sessions the resets answered with;
	// finishedEarlier: a retry found the token done (an attempt whose
	// answer was lost finished the reset, and its session with it).
	opened          []string
	finishedEarlier bool
}

const (
	newPassword   = "a brand new passphrase"
	otherPassword = "the other passphrase"
)

func newMailWorld(t *testing.T, withReset bool) *mailWorld {
	t.Helper()
	w := newWorld()
	box := &recorder{}
	w.rewire(func(st *memstore.Store, c *accounts.Config) {
		c.Mail = accounts.Mail{Tokens: st.Tokens(), Mailer: box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour}
	})
	m := &mailWorld{world: w, box: box}
	if err := w.signup("ann", "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	m.ann = w.created[0]
	ctx := context.Background()
	for range 2 {
		r, err := w.svc.Login(ctx, "ann", password, accounts.Client{})
		if err != nil {
			t.Fatal(err)
		}
		m.sessions = append(m.sessions, r.Token)
	}
	if withReset {
		if err := w.svc.RequestPasswordReset(ctx, "ann@example.org"); err != nil {
			t.Fatal(err)
		}
		m.reset = box.tokens("reset")[0]
	}
	return m
}

// mailOperation is one client action on tokens; run and retry answer as
// the client sees it; check asserts what must hold afterwards, given
// whether it (or its retry) answered success.
type mailOperation struct {
	name       string
	withReset  bool
	run, retry func(m *mailWorld) error
	check      func(t *testing.T, name string, m *mailWorld, ok bool)
}

// resetTo resets ann's password to pw with the mailed token, and keeps
// the session it answers with.
func resetTo(pw string) func(m *mailWorld) error {
	return func(m *mailWorld) error {
		r, err := m.svc.ResetPassword(context.Background(), m.reset, pw, accounts.Client{})
		if r.Token != "" {
			m.opened = append(m.opened, r.Token)
		}
		return err
	}
}

// refused reports a token refusal.
func refused(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && de.Code == "invalid_token"
}

var mailOperations = []mailOperation{
	{
		name: "verify",
		run: func(m *mailWorld) error {
			return m.svc.ConfirmEmail(context.Background(), m.box.tokens("verify")[0])
		},
		retry: func(m *mailWorld) error {
			err := m.svc.ConfirmEmail(context.Background(), m.box.tokens("verify")[0])
			if errors.Is(err, accounts.ErrTokenUsed) {
				return nil // the first attempt finished everything
			}
			return err
		},
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			u, err := m.store.Users().Get(context.Background(), m.ann.ID)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if ok && u.EmailVerifiedAt.IsZero() {
				t.Errorf("%s: the confirmation answered success and the email is not verified", name)
			}
			if err := m.svc.ConfirmEmail(context.Background(), m.box.tokens("verify")[0]); ok && !errors.Is(err, accounts.ErrTokenUsed) {
				t.Errorf("%s: the token worked again: %v", name, err)
			}
		},
	},
	{
		name: "reset", withReset: true, run: resetTo(newPassword),
		retry: func(m *mailWorld) error {
			err := resetTo(newPassword)(m)
			if errors.Is(err, accounts.ErrTokenUsed) {
				m.finishedEarlier = true
				return nil // the first attempt finished everything
			}
			return err
		},
		check: checkReset,
	},
	{
		// Another request with the same token and another password gets
		// there first (it runs before the held writes land): exactly one
		// of the two sets its password, never both.
		name: "reset-raced", withReset: true,
		run: func(m *mailWorld) error {
			err := resetTo(newPassword)(m)
			m.store.FaultAt = nil
			m.store.Recover()
			m.raced = resetTo(otherPassword)(m) == nil
			return err
		},
		retry: resetTo(newPassword),
		check: checkReset,
	},
	{
		// The request itself: its token's write and every read may fail;
		// a mailed link always works (the token was stored first).
		name: "request-reset",
		run: func(m *mailWorld) error {
			return m.svc.RequestPasswordReset(context.Background(), "ann@example.org")
		},
		retry: func(m *mailWorld) error {
			return m.svc.RequestPasswordReset(context.Background(), "ann@example.org")
		},
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			// The answer is 202 whatever became of the mail: a user who
			// got none asks again.
			if len(m.box.tokens("reset")) == 0 {
				if err := m.svc.RequestPasswordReset(context.Background(), "ann@example.org"); err != nil {
					t.Fatalf("%s: asking again: %v", name, err)
				}
			}
			links := m.box.tokens("reset")
			if len(links) == 0 {
				t.Errorf("%s: asking again mailed no link", name)
			}
			for i, token := range links {
				if _, err := m.store.Tokens().Get(context.Background(), accounts.HashToken(token)); err != nil {
					t.Errorf("%s: mailed link %d has no stored token: %v", name, i, err)
				}
			}
			if len(links) > 0 {
				m.reset = links[len(links)-1]
				if err := resetTo(newPassword)(m); err != nil {
					t.Errorf("%s: the mailed link does not reset: %v", name, err)
				}
			}
		},
	},
}

// checkReset: the token set at most one password; the password is the
// one of the request that answered success (ours, or the racing one), and
// once it changed, the old password and every session from before fail,
// the sessions the resets answered with work, the new password logs in,
// and the token is refused from then on.
func checkReset(t *testing.T, name string, m *mailWorld, ok bool) {
	ctx := context.Background()
	hashes := map[string]bool{}
	for _, u := range m.store.Changes(m.ann.ID) {
		if u.PasswordHash != "plain:"+password {
			hashes[u.PasswordHash] = true
		}
	}
	if len(hashes) > 1 {
		t.Errorf("%s: the token set %d passwords: %v", name, len(hashes), hashes)
	}
	u, err := m.store.Users().Get(ctx, m.ann.ID)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	current := strings.TrimPrefix(u.PasswordHash, "plain:")
	switch {
	case ok && m.raced:
		t.Errorf("%s: both resets answered success", name)
	case ok && current != newPassword:
		t.Errorf("%s: the reset answered success and the password is %q", name, current)
	case m.raced && current != otherPassword:
		t.Errorf("%s: the racing reset answered success and the password is %q", name, current)
	}
	if current == password {
		return
	}
	for i, token := range m.sessions {
		if _, err := m.svc.Authenticate(ctx, token); err == nil {
			t.Errorf("%s: session %d from before the reset works", name, i)
		}
	}
	// The session a reset answered with is a way in under the password it
	// set; a reset that answered success answered one.
	for i, token := range m.opened {
		if _, err := m.svc.Authenticate(ctx, token); err != nil {
			t.Errorf("%s: session %d the reset answered with does not work: %v", name, i, err)
		}
	}
	if ok && len(m.opened) == 0 && !m.finishedEarlier {
		t.Errorf("%s: the reset answered success without a session", name)
	}
	if _, err := m.svc.Login(ctx, "ann", password, accounts.Client{}); err == nil {
		t.Errorf("%s: the old password logs in after the reset", name)
	}
	if _, err := m.svc.Login(ctx, "ann", current, accounts.Client{}); err != nil {
		t.Errorf("%s: the reset's password does not log in: %v", name, err)
	}
	if _, err := m.svc.ResetPassword(ctx, m.reset, "a third passphrase", accounts.Client{}); !refused(err) {
		t.Errorf("%s: the token worked again with another password: %v", name, err)
	}
}

// TestExploreMail runs verification, reset (alone, and raced by another
// reset with the same token and another password) and the reset request
// with every fault at every store call, lets held writes land, has the
// client retry, and checks that a token works at most once, never sets
// two passwords, ends every older session with the reset it made, and
// that every mailed link names a stored token and resets.
func TestExploreMail(t *testing.T) {
	t.Parallel()
	total := exploreMailOperations(t, mailOperations, func(op mailOperation) *mailWorld { return newMailWorld(t, op.withReset) }, refused)
	t.Logf("%d schedules in all", total)
}

// exploreMailOperations runs each of ops on a fresh world with every
// fault at every store call, lands the held writes, has the client retry
// (a retry answered an error retryLater accepts counts as not done), and
// checks each; it answers how many schedules ran.
func exploreMailOperations(t *testing.T, ops []mailOperation, fresh func(mailOperation) *mailWorld, retryLater func(error) bool) int {
	t.Helper()
	total := 0
	for _, op := range ops {
		probe := fresh(op)
		calls := callsOf(t, probe.store, op.name, func() error { return op.run(probe) })
		total += everySchedule(t, op.name, calls, []string{"land-then-retry"}, func(name string, k int, fault memstore.Fault, _ int) {
			m := fresh(op)
			faultOnce(m.store, k, fault)
			err := op.run(m)
			recovered(m.store)
			if err != nil && !expected(err) && !refused(err) {
				t.Errorf("%s: the operation answered %v", name, err)
			}
			m.store.Land()
			ok := err == nil
			if err != nil && !refused(err) {
				if rerr := op.retry(m); rerr == nil {
					ok = true
				} else if !retryLater(rerr) {
					t.Errorf("%s: the retry answered %v", name, rerr)
				}
			}
			op.check(t, name, m, ok)
		})
	}
	return total
}
