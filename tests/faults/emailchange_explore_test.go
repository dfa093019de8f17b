package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
)

// An email change's life under every fault at every store call
// (docs/design/email-change.md): the request, its confirmation, its revert
// and its replacement by another change, each with its held writes landed
// late and the client's retry.

const (
	annHome  = "ann@example.org"
	annNext  = "ann@example.net"
	annOther = "ann.other@example.net"
)

// tokenTo returns the token of the last mail to address with a link to
// page ("" when there is none).
func (b *recorder) tokenTo(page, address string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	token := ""
	for _, msg := range b.sent {
		marker := "/#/" + page + "?token="
		if i := strings.Index(msg.Text, marker); i >= 0 && msg.To == address {
			rest := msg.Text[i+len(marker):]
			token = rest[:strings.IndexAny(rest, "\n ")]
		}
	}
	return token
}

// changeEmail asks for email as ann, through her first session, with her
// password.
func changeEmail(m *mailWorld, email string) error {
	ctx := context.Background()
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		return err
	}
	current := password
	_, err = m.svc.UpdateUser(ctx, p, m.ann.ID, accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: &current}})
	return err
}

// usedIsDone answers nil for a token refused as used: the first attempt
// finished everything.
func usedIsDone(err error) error {
	if errors.Is(err, accounts.ErrTokenUsed) {
		return nil
	}
	return err
}

// emailChangeWorld is ann, verified, with two sessions; with pending, she
// has asked for annNext.
func emailChangeWorld(t *testing.T, pending bool) *mailWorld {
	t.Helper()
	m := newMailWorld(t, false)
	ctx := context.Background()
	if err := m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annHome)); err != nil {
		t.Fatal(err)
	}
	if pending {
		if err := changeEmail(m, annNext); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// account reads ann's account as stored.
func (m *mailWorld) account(t *testing.T, name string) domain.User {
	t.Helper()
	u, err := m.store.Users().Get(context.Background(), m.ann.ID)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return u
}

// checkEmailClaims: every address ann has, asks for or holds is claimed
// for her, committed (U1).
func checkEmailClaims(t *testing.T, name string, m *mailWorld, u domain.User) {
	t.Helper()
	for _, key := range []string{u.EmailKey, u.PendingEmailKey, u.RecoveryEmailKey} {
		if key == "" {
			continue
		}
		c, err := m.store.Claims().Lookup(context.Background(), domain.KindEmail, key)
		if err != nil || c.Owner != ann(m) || c.State != domain.ClaimCommitted {
			t.Errorf("%s: ann holds %s without its committed claim: %+v %v", name, key, c, err)
		}
	}
}

func ann(m *mailWorld) string { return m.ann.ID }

// sessionsAfter: once the epoch moved on, no session but keep works
// (keep: an index into m.sessions, -1 for none).
func sessionsAfter(t *testing.T, name string, m *mailWorld, u domain.User, keep int) {
	t.Helper()
	if u.PasswordEpoch == m.ann.PasswordEpoch {
		return
	}
	for i, token := range m.sessions {
		_, err := m.svc.Authenticate(context.Background(), token)
		if i != keep && err == nil {
			t.Errorf("%s: session %d outlived the write that ended it", name, i)
		}
		if i == keep && err != nil {
			t.Errorf("%s: the asking session %d stopped working: %v", name, i, err)
		}
	}
}

var emailChangeOperations = []mailOperation{
	{
		name: "change-email",
		run:  func(m *mailWorld) error { return changeEmail(m, annNext) },
		// The retry asks again; once the first landed, session 0 is the
		// one its write named, and goes on.
		retry: func(m *mailWorld) error { return changeEmail(m, annNext) },
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			u := m.account(t, name)
			checkEmailClaims(t, name, m, u)
			sessionsAfter(t, name, m, u, 0)
			if u.EmailKey != annHome || u.Email != annHome {
				t.Errorf("%s: the account's email moved to %s before any confirmation", name, u.Email)
			}
			if !ok {
				return
			}
			if u.PendingEmailKey != annNext {
				t.Errorf("%s: answered success, and nothing is pending: %+v", name, u)
			}
			if m.box.tokenTo("revert-email", annHome) == "" {
				t.Errorf("%s: answered success, and the old address got no notice", name)
			}
			// A verification mail that failed after the answer is asked
			// for again, as its owner would.
			if m.box.tokenTo("verify", annNext) == "" {
				if err := m.svc.RequestVerification(context.Background(), domain.Principal{}, annNext); err != nil {
					t.Fatalf("%s: asking for the link again: %v", name, err)
				}
			}
			if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext)); err != nil {
				t.Errorf("%s: the new address's link: %v", name, err)
			}
			if u := m.account(t, name); u.EmailKey != annNext || u.EmailVerifiedAt.IsZero() {
				t.Errorf("%s: after the link: %s", name, u.Email)
			}
		},
	},
	{
		name: "confirm-change",
		run: func(m *mailWorld) error {
			return m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext))
		},
		retry: func(m *mailWorld) error {
			return usedIsDone(m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext)))
		},
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			u := m.account(t, name)
			checkEmailClaims(t, name, m, u)
			if !ok {
				return
			}
			if u.EmailKey != annNext || u.PendingEmailKey != "" || u.EmailVerifiedAt.IsZero() || u.RecoveryEmailKey != annHome {
				t.Errorf("%s: answered success: %+v", name, u)
			}
			// The old address is held for its link.
			if err := m.signup("bob", annHome); !errors.Is(err, domain.ErrConflict) {
				t.Errorf("%s: a signup with the replaced address: %v", name, err)
			}
		},
	},
	{
		name: "revert",
		run: func(m *mailWorld) error {
			return m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome))
		},
		retry: func(m *mailWorld) error {
			return usedIsDone(m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome)))
		},
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			u := m.account(t, name)
			checkEmailClaims(t, name, m, u)
			if u.EmailKey != annHome {
				t.Errorf("%s: the account's email is %s", name, u.Email)
			}
			if !ok {
				return
			}
			if u.PendingEmailKey != "" {
				t.Errorf("%s: answered success and a change is pending: %+v", name, u)
			}
			for i, token := range m.sessions {
				if _, err := m.svc.Authenticate(context.Background(), token); err == nil {
					t.Errorf("%s: session %d outlived the revert", name, i)
				}
			}
			// A recovery: the password opens nothing until a reset.
			if _, err := m.svc.Login(context.Background(), "ann", password, accounts.Client{}); !errors.Is(err, accounts.ErrPasswordResetRequired) {
				t.Errorf("%s: login with the password after the revert: %v", name, err)
			}
			if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext)); !refused(err) {
				t.Errorf("%s: the reverted change's link: %v", name, err)
			}
			if err := m.svc.RevertEmailChange(context.Background(), m.box.tokenTo("revert-email", annHome)); !refused(err) {
				t.Errorf("%s: the revert link again: %v", name, err)
			}
		},
	},
	{
		// The reader of the address asked for says "not me": the change
		// ends and the account may not ask for the address again.
		name:  "refuse-change",
		run:   func(m *mailWorld) error { return refuseAddress(m, annNext) },
		retry: func(m *mailWorld) error { return usedIsDone(refuseAddress(m, annNext)) },
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			u := m.account(t, name)
			checkEmailClaims(t, name, m, u)
			sessionsAfter(t, name, m, u, 0)
			if u.EmailKey != annHome {
				t.Errorf("%s: the account's email is %s", name, u.Email)
			}
			if !ok {
				return
			}
			if u.PendingEmailKey != "" {
				t.Errorf("%s: answered success and a change is pending: %+v", name, u)
			}
			if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext)); !refused(err) {
				t.Errorf("%s: the refused change's link: %v", name, err)
			}
			if err := changeEmail(m, annNext); !errors.Is(err, accounts.ErrAddressRefused) {
				t.Errorf("%s: asking for the refused address again: %v", name, err)
			}
		},
	},
	{
		// Another change replaces the pending one: the first one's link,
		// followed after every held write landed, changes nothing.
		name:  "replace-change",
		run:   func(m *mailWorld) error { return changeEmail(m, annOther) },
		retry: func(m *mailWorld) error { return changeEmail(m, annOther) },
		check: func(t *testing.T, name string, m *mailWorld, ok bool) {
			u := m.account(t, name)
			checkEmailClaims(t, name, m, u)
			if !ok {
				return
			}
			if u.PendingEmailKey != annOther {
				t.Errorf("%s: answered success: %+v", name, u)
			}
			if err := m.svc.ConfirmEmail(context.Background(), m.box.tokenTo("verify", annNext)); !refused(err) {
				t.Errorf("%s: the replaced change's link: %v", name, err)
			}
			if u := m.account(t, name); u.EmailKey != annHome || u.PendingEmailKey != annOther {
				t.Errorf("%s: after the replaced change's link: %+v", name, u)
			}
		},
	},
}

// TestExploreEmailChange runs each step of an email change with every
// fault at every store call, lands the held writes, has the client retry,
// and checks that the account keeps its address until a confirmation,
// every address it has, asks for or holds is claimed for it, the other
// sessions end with the write that ends them, and a link of a change
// replaced or reverted changes nothing.
func TestExploreEmailChange(t *testing.T) {
	t.Parallel()
	fresh := func(op mailOperation) *mailWorld {
		m := emailChangeWorld(t, op.name != "change-email")
		m.ann = m.account(t, op.name) // the epoch before the operation
		return m
	}
	// A retry may still find the first attempt's claim pending (409
	// concurrent_change until its lease ends, U4) or the store still
	// down for it: the client tries again later.
	total := exploreMailOperations(t, emailChangeOperations, fresh, func(err error) bool { return refused(err) || expected(err) })
	t.Logf("%d schedules in all", total)
}

// TestAnEmailChangeWithoutMailIsRefused: a service built without mail
// could never send the link that makes a new address the account's, so it
// refuses the change (503 mail_off, as the token routes) and writes
// nothing: the account keeps its address, asks for none, and the new one
// stays free for anyone.
func TestAnEmailChangeWithoutMailIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld()
	if err := w.signup("bob", "bob@example.org"); err != nil {
		t.Fatal(err)
	}
	if err := rename(w, "", "robert@example.org"); !errors.Is(err, accounts.ErrMailOff) {
		t.Fatalf("an email change without mail answered %v, want mail_off", err)
	}
	u, err := w.store.Users().Get(context.Background(), me(w).ID)
	if err != nil || u.Email != "bob@example.org" || u.PendingEmail != "" || u.Version != me(w).Version {
		t.Fatalf("after the refusal the account is %+v (%v)", u, err)
	}
	if err := w.signup("robert", "robert@example.org"); err != nil {
		t.Fatalf("the address a refused change asked for is not free: %v", err)
	}
}
