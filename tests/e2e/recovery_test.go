//go:build integration

package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"shelf/internal/app"
	"shelf/tests/testkit"
)

// A revert of an email change is a recovery, and no stranger can aim the
// notices (docs/design/email-change.md, #throttle), end to end against
// mailpit.

// revertWith follows a revert link and fails unless it answers 204.
func revertWith(t *testing.T, api *testkit.API, token string) {
	t.Helper()
	if r := api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": token}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("reverting: %d %s", r.StatusCode, r.Body)
	}
}

// confirmWith follows a verification link and fails unless it answers 204.
func confirmWith(t *testing.T, api *testkit.API, token string) {
	t.Helper()
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": token}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming: %d %s", r.StatusCode, r.Body)
	}
}

// TestARevertIsARecovery: a thief with the token and the password changes
// the email, spends the old address's mails (reset requests) and
// confirms the new one; the owner's revert ends every session, its reset
// link arrives over the mail limit, the thief's password opens nothing on
// either process (403 password_reset_required; a wrong one 401), and the
// owner's new password does: the thief does not log straight back in, and
// the reset mail is not held back for the hour.
func TestARevertIsARecovery(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	env := map[string]string{"SHELF_MAIL_PER_HOUR": "5"}
	_, api := newMailApp(t, db, mp, env)
	_, other := newMailApp(t, db, mp, env)
	n := name("recover")
	owned, thief := n+"@example.org", name("thief")+"@example.net"
	u, _ := verifiedUser(t, api, mp, n)
	stolen := api.As(mustLogin(t, api, n).Token)
	mustAskEmail(t, stolen, u.ID, thief)
	for range 6 { // the old address's mails, spent
		if r := other.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": owned}); r.StatusCode != http.StatusAccepted {
			t.Fatalf("a reset request: %d %s", r.StatusCode, r.Body)
		}
	}
	confirmWith(t, api, testkit.TokenIn(t, mp.WaitFor(t, thief, 1)[0].Text, "verify"))
	sent := len(mp.Messages(t, owned))
	var revert string
	for _, m := range mp.Messages(t, owned) {
		if strings.Contains(m.Text, "/#/revert-email?token=") {
			revert = testkit.TokenIn(t, m.Text, "revert-email")
		}
	}
	revertWith(t, api, revert)
	if r := stolen.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the thief's session after the revert: %d", r.StatusCode)
	}
	refusedUntilReset(t, api, n, "on the first process")
	refusedUntilReset(t, other, owned, "on the second process")
	back := resetAfterRevert(t, api, mp, owned, sent+1, n)
	if got := account(t, back); got.Email != owned || got.PendingEmail != "" {
		t.Fatalf("after the recovery: %+v", got)
	}
	if r := login(other, thief, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the thief's address and password on the second process: %d %s", r.StatusCode, r.Body)
	}
}

// TestAnUnverifiedOwnerGetsTheAddressBack: an owner who never verified the
// signup's address keeps it held once the thief confirmed another (a
// stranger's signup with it is 409) and the notice's link gives it back,
// verified. Were only a verified address held, the link would answer 400
// stale and a stranger could sign up with the address.
func TestAnUnverifiedOwnerGetsTheAddressBack(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("unverified")
	owned, thief := n+"@example.org", name("thief")+"@example.net"
	u := mustSignup(t, api, n, owned) // its verification link is never followed
	stolen := api.As(mustLogin(t, api, n).Token)
	mustAskEmail(t, stolen, u.ID, thief)
	revert := testkit.TokenIn(t, mp.WaitFor(t, owned, 2)[0].Text, "revert-email")
	confirmWith(t, api, testkit.TokenIn(t, mp.WaitFor(t, thief, 1)[0].Text, "verify"))
	if r := signup(api, name("squat"), owned); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the replaced, unverified address: %d %s", r.StatusCode, r.Body)
	}
	revertWith(t, api, revert)
	refusedUntilReset(t, api, owned, "after the revert")
	back := resetAfterRevert(t, api, mp, owned, 3, owned)
	if got := account(t, back); got.Email != owned || !*got.EmailVerified {
		t.Fatalf("after the revert: %+v", got)
	}
}

// TestNoticesNoStrangerCanAim: an account signed up with a stranger's
// address (never verified). Thirty changes from one session, each
// replacing the last, mail the stranger one notice; asking and cancelling
// over and over mails notices only up to the hourly limit (of the
// account's own mails: with the signup's verification, anyone's, the
// stranger gets at most both budgets), and then the change is refused,
// 429 too_many_mails with Retry-After, and nothing is pending.
func TestNoticesNoStrangerCanAim(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, map[string]string{"SHELF_MAIL_PER_HOUR": "5"})
	n := name("aimer")
	stranger := name("stranger") + "@example.org"
	u := mustSignup(t, api, n, stranger)
	as := api.As(mustLogin(t, api, n).Token)
	for i := range 30 {
		mustAskEmail(t, as, u.ID, name("next")+"@example.net")
		if i == 0 {
			mp.WaitFor(t, stranger, 2)
		}
	}
	notices := func() int {
		count := 0
		for _, m := range mp.Messages(t, stranger) {
			if strings.Contains(m.Text, "/#/revert-email?token=") {
				count++
			}
		}
		return count
	}
	if got := notices(); got != 1 {
		t.Fatalf("thirty changes from one session mailed the stranger %d notices, want 1", got)
	}
	var refused *testkit.Response
	for range 10 {
		mustAskEmail(t, as, u.ID, stranger) // cancels what is pending
		r := askEmail(as, u.ID, name("again")+"@example.net")
		if r.StatusCode == http.StatusTooManyRequests {
			refused = r
			break
		}
		if r.StatusCode != http.StatusOK {
			t.Fatalf("a change: %d %s", r.StatusCode, r.Body)
		}
	}
	if refused == nil {
		t.Fatal("no change was refused past the mail limit")
	}
	if p := refused.Problem(t); p.Code != "too_many_mails" || refused.Header.Get("Retry-After") == "" {
		t.Fatalf("the refusal: %d %s %v", refused.StatusCode, refused.Body, refused.Header)
	}
	if got := notices(); got > 5 {
		t.Fatalf("the stranger got %d notices in the hour, over the limit of 5", got)
	}
	if got := len(mp.Messages(t, stranger)); got > 2*5 {
		t.Fatalf("the stranger got %d mails in the hour, over both budgets' 10", got)
	}
	if got := account(t, as); got.PendingEmail != "" || got.Email != stranger {
		t.Fatalf("a refused change wrote: %+v", got)
	}
}

// TestAPendingChangeExpires: a change left pending past its verification
// link's life and the token grace holds its address no more: a signup by
// a process whose clock is past it takes the address (after fencing the
// account's row), the account shows no change pending, and the old link
// is stale on the process whose clock still reads it alive: no pending
// change holds an address for good.
func TestAPendingChangeExpires(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	_, api := newMailApp(t, db, mp, map[string]string{"SHELF_VERIFY_EMAIL_TTL": "1m"})
	_, later := newMailApp(t, db, mp, map[string]string{"SHELF_VERIFY_EMAIL_TTL": "1m"}, app.ClockOffset(2*time.Hour))
	n := name("expiry")
	next := name("next") + "@example.net"
	u, as := verifiedUser(t, api, mp, n)
	mustAskEmail(t, as, u.ID, next)
	link := testkit.TokenIn(t, mp.WaitFor(t, next, 1)[0].Text, "verify")
	if r := signup(api, name("early"), next); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the pending address while it lasts: %d %s", r.StatusCode, r.Body)
	}
	mustSignup(t, later, name("later"), next)
	mustLogin(t, api, next) // the address leads to the new account
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": link}), "stale", "the expired change's link")
	if got := account(t, as); got.PendingEmail != "" || got.Email != n+"@example.org" {
		t.Fatalf("after the expiry: %+v", got)
	}
}

// TestNotMeFreesTheAddressAndBarsIt: an account asks for an address that
// is a stranger's; the mail there carries a "not me" link. Following it
// ends the change, the account may not ask for that address again (409
// address_refused naming email), and the stranger signs up with it at
// once: the row and the claim on a real node, the link through real mail.
func TestNotMeFreesTheAddressAndBarsIt(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	_, api := newMailApp(t, db, mp, nil)
	n := name("notme")
	stranger := name("stranger")
	u, as := verifiedUser(t, api, mp, n)
	mustAskEmail(t, as, u.ID, stranger+"@example.net")
	refuse := testkit.TokenIn(t, mp.WaitFor(t, stranger+"@example.net", 1)[0].Text, "refuse-email")
	if r := api.Send(http.MethodPost, "/v1/email-changes/refusal", map[string]string{"token": refuse}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the not-me link: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, as); got.PendingEmail != "" || got.Email != n+"@example.org" {
		t.Fatalf("after the not-me link: %+v", got)
	}
	r := askEmail(as, u.ID, stranger+"@example.net")
	if p := r.Problem(t); r.StatusCode != http.StatusConflict || p.Code != "address_refused" || len(p.Errors) != 1 || p.Errors[0].Field != "email" {
		t.Fatalf("asking again for the refused address: %d %s, want 409 address_refused naming email", r.StatusCode, r.Body)
	}
	mustSignup(t, api, stranger, stranger+"@example.net")
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-changes/refusal", map[string]string{"token": refuse}), "used", "the not-me link again")
}
