package faults

import (
	"context"
	"errors"
	"testing"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestAThiefCannotStarveTheOwnersReset: a thief with a session and the
// password changes the password, spends the address's hourly mails on
// reset requests (their links reach the owner's mailbox), and changes the
// password again, so the owner's own request within the hour is held
// back. Before, every link in her mailbox was stale (a reset link went
// stale with any change of the password) and the thief could repeat it
// every hour. Now a reset link goes stale only with a recovery (a reset,
// a revert), so any link in her mailbox resets the password, and the
// reset ends the thief's session.
func TestAThiefCannotStarveTheOwnersReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	limitMail(m, 3)
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	stolen := password
	for i, next := range []string{"the thief's first pass", "the thief's second pass"} {
		if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(stolen), next); err != nil {
			t.Fatalf("the thief's change %d: %v", i+1, err)
		}
		stolen = next
		if i == 0 {
			for range 3 {
				if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	links := m.box.sentTo("reset", annHome)
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	if m.box.sentTo("reset", annHome) != links {
		t.Fatalf("the owner's request went out past the spent limit; the test no longer shows the attack")
	}
	if links == 0 {
		t.Fatal("no reset link reached the owner's mailbox")
	}
	if _, err := m.svc.ResetPassword(ctx, m.box.tokenTo("reset", annHome), newPassword, accounts.Client{}); err != nil {
		t.Fatalf("the owner's reset with a link in her mailbox: %v (the thief changed the password after it was mailed)", err)
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err == nil {
		t.Error("the thief's session outlives the owner's reset")
	}
	if _, err := m.svc.Login(ctx, "ann", stolen, accounts.Client{}); err == nil {
		t.Error("the thief's password still logs in after the owner's reset")
	}
	if _, err := m.svc.Login(ctx, "ann", newPassword, accounts.Client{}); err != nil {
		t.Errorf("the owner's new password: %v", err)
	}
	// Only a recovery makes a link stale: after her reset, the links the
	// thief's requests mailed are refused.
	for _, token := range m.box.tokens("reset")[:links-1] {
		if _, err := m.svc.ResetPassword(ctx, token, "yet another passphrase", accounts.Client{}); err == nil {
			t.Error("a reset link mailed before the owner's reset still works after it")
		}
	}
}

// TestAPasswordChangeIsToldWithAWorkingResetLink: a change of the
// password from a session mails the account's address a notice whose
// reset link works though the password is changed again meanwhile, and
// ends the changer's session; the change itself never waits for mail: a
// notice held back by the account's own spent hourly limit, or a mailer
// that fails, changes nothing of the answer.
func TestAPasswordChangeIsToldWithAWorkingResetLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(password), "the thief's first pass"); err != nil {
		t.Fatal(err)
	}
	notices := 0
	for _, msg := range m.box.sent {
		if msg.To == annHome && msg.Subject == "The password of your shelf account was changed" {
			notices++
		}
	}
	if notices != 1 {
		t.Fatalf("%d notices of the change reached the account's address, want 1", notices)
	}
	link := m.box.tokenTo("reset", annHome)
	if link == "" {
		t.Fatal("the notice carries no reset link")
	}
	if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password("the thief's first pass"), "the thief's second pass"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.svc.ResetPassword(ctx, link, newPassword, accounts.Client{}); err != nil {
		t.Fatalf("the first notice's link after a second change: %v", err)
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err == nil {
		t.Error("the changer's session outlives the reset made from the notice")
	}

	// Held back by a spent limit, or failed: the change answers all the
	// same. The notice spends the account's own budget (one an hour
	// here), which a reset anyone asked for does not touch.
	held := emailChangeWorld(t, false)
	limitMail(held, 1)
	if err := held.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	p, err := held.svc.Authenticate(ctx, held.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	before := held.box.count()
	if err := held.svc.ChangePassword(ctx, p, held.ann.ID, accounts.Password(password), "a pass within the limit"); err != nil {
		t.Fatal(err)
	}
	if held.box.count() != before+1 {
		t.Fatal("the hour's one notice of the account's own did not go out")
	}
	if err := held.svc.ChangePassword(ctx, p, held.ann.ID, accounts.Password("a pass within the limit"), "a pass past the limit"); err != nil {
		t.Fatalf("a change whose notice is held back: %v", err)
	}
	if held.box.count() != before+1 {
		t.Error("a notice went out past the address's hourly limit")
	}
	held.box.broken = true
	if err := held.svc.ChangePassword(ctx, p, held.ann.ID, accounts.Password("a pass past the limit"), "a pass with no mailer"); err != nil {
		t.Fatalf("a change whose notice fails: %v", err)
	}
}

// TestVerificationMailsCannotLeaveTheOwnerWithoutAWorkingLink: the
// account's address is not verified yet (its owner never followed the
// signup's link). A stranger, or the thief, spends the address's hourly
// mails on verification requests, which anyone may make and whose links
// open nothing; the thief, with a session and the password, then changes
// the password. Its notice is held back by the spent limit, and so is the
// owner's own request for a reset: every link in her mailbox is a
// verification link, and she is out for the hour (again every hour,
// while she does not verify). The mails that spent the limit must leave
// her a way in, as decision 77 says of the reset links.
func TestVerificationMailsCannotLeaveTheOwnerWithoutAWorkingLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMailWorld(t, false) // annHome not verified
	limitMail(m, 3)
	for range 3 {
		if err := m.svc.RequestVerification(ctx, domain.Principal{}, annHome); err != nil {
			t.Fatal(err)
		}
	}
	thief, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(password), "the thief's own pass"); err != nil {
		t.Fatalf("the thief's change: %v", err)
	}
	if err := m.svc.RequestPasswordReset(ctx, annHome); err != nil {
		t.Fatal(err)
	}
	link := m.box.tokenTo("reset", annHome)
	if link == "" {
		t.Fatalf("no reset link reached the owner's mailbox (%d verification links did): the thief's notice and her own request were held back by the limit verification requests spent; she is out for the hour",
			m.box.sentTo("verify", annHome))
	}
	if _, err := m.svc.ResetPassword(ctx, link, newPassword, accounts.Client{}); err != nil {
		t.Fatalf("the owner's reset: %v", err)
	}
	if _, err := m.svc.Authenticate(ctx, m.sessions[0]); err == nil {
		t.Error("the thief's session outlives the owner's reset")
	}
}

// TestAPasswordChangeWhoseAnswerIsLostIsToldAllTheSame: the change's
// compare-and-set applies and its answer is lost (503 to the client): the
// notice with its reset link goes out all the same, and the link works.
func TestAPasswordChangeWhoseAnswerIsLostIsToldAllTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	p, err := m.svc.Authenticate(ctx, m.sessions[0])
	if err != nil {
		t.Fatal(err)
	}
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		if name == "users.update" {
			return memstore.LoseAnswer
		}
		return memstore.None
	}
	err = m.svc.ChangePassword(ctx, p, m.ann.ID, accounts.Password(password), "a pass whose answer was lost")
	m.store.FaultAt = nil
	m.store.Recover()
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("the change whose answer was lost: %v", err)
	}
	link := m.box.tokenTo("reset", annHome)
	if link == "" {
		t.Fatal("no notice of a change whose answer was lost")
	}
	if _, err := m.svc.ResetPassword(ctx, link, newPassword, accounts.Client{}); err != nil {
		t.Fatalf("its notice's link: %v", err)
	}
}

// TestALostPasswordChangeIsToldAtTheAddressItWasWrittenOver: ann asked
// to move to annNext. A thief with the password changes it; his read of
// the account for the proof is slow, and meanwhile ann confirms annNext;
// the change's round reads the account at annNext, writes over it, and
// its answer is lost. Its notice went to the address the proof's read
// had found (annHome), with a reset link for that address, stale since
// the account no longer has it, and nothing reached annNext: a change in
// force told only to an address the account left, with no working link.
// The notice goes to the address of the row the write was over.
func TestALostPasswordChangeIsToldAtTheAddressItWasWrittenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := emailChangeWorld(t, false)
	if err := changeEmailFrom(m, annNext); err != nil {
		t.Fatal(err)
	}
	thief, err := newSession(m)
	if err != nil {
		t.Fatal(err)
	}
	read, meanwhile := false, false
	m.store.FaultAt = func(_ int, name string) memstore.Fault {
		switch {
		case meanwhile:
		case name == "users.get" && !read:
			read = true
			return memstore.Slow
		case name == "users.update":
			return memstore.LoseAnswer
		}
		return memstore.None
	}
	confirmed := errors.New("did not run")
	m.store.Meanwhile = func() {
		m.store.Meanwhile, meanwhile = nil, true
		confirmed = m.svc.ConfirmEmail(ctx, m.box.tokenTo("verify", annNext))
		meanwhile = false
	}
	err = m.svc.ChangePassword(ctx, thief, m.ann.ID, accounts.Password(password), "the thief's own pass")
	m.store.FaultAt, m.store.Meanwhile = nil, nil
	if !errors.Is(err, domain.ErrUnavailable) || confirmed != nil {
		t.Fatalf("the change whose answer was lost: %v; ann's confirmation meanwhile: %v", err, confirmed)
	}
	if u := m.account(t, "after the change"); u.EmailKey != annNext {
		t.Fatalf("the account is at %q, not at annNext", u.Email)
	}
	link := m.box.tokenTo("reset", annNext)
	if link == "" {
		t.Fatalf("no notice of the password change reached annNext, the address it was written over (%d reset links went to annHome)",
			m.box.sentTo("reset", annHome))
	}
	if _, err := m.svc.ResetPassword(ctx, link, newPassword, accounts.Client{}); err != nil {
		t.Fatalf("its notice's link: %v", err)
	}
}
