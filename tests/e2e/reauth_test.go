//go:build integration

package e2e

import (
	"net/http"
	"testing"

	"shelf/tests/testkit"
)

// Re-authentication (U9, docs/design/reauthentication.md): what takes an
// account needs the current password, an email change waits for the new
// address and can be undone from the old one, resets go to the account's
// own address, and admins cannot take each other's accounts.

// accountBody is GET /v1/me as these tests read it.
type accountBody struct {
	userBody
	EmailVerified *bool  `json:"emailVerified"`
	PendingEmail  string `json:"pendingEmail"`
	// HeldUsername is in a change's answer only.
	HeldUsername string `json:"heldUsername"`
}

// account reads the caller's account.
func account(t *testing.T, as *testkit.API) accountBody {
	t.Helper()
	var u accountBody
	r := as.Get("/v1/me")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/me: %d %s", r.StatusCode, r.Body)
	}
	r.JSON(t, &u)
	return u
}

// refusedCurrentPassword checks an answer that refuses currentPassword: status
// (400 missing, 401 wrong) and a problem naming the field.
func refusedCurrentPassword(t *testing.T, r *testkit.Response, status int, what string) {
	t.Helper()
	p := r.Problem(t)
	if r.StatusCode != status || len(p.Errors) != 1 || p.Errors[0].Field != "currentPassword" {
		t.Fatalf("%s: %d %s, want %d naming currentPassword", what, r.StatusCode, r.Body, status)
	}
}

// askEmail asks for email as the owner of account id, with the password.
func askEmail(as *testkit.API, id, email string) *testkit.Response {
	return as.Send(http.MethodPatch, "/v1/users/"+id, map[string]string{"email": email, "currentPassword": testPassword})
}

// mustAskEmail asks for email and fails unless it answers 200.
func mustAskEmail(t *testing.T, as *testkit.API, id, email string) {
	t.Helper()
	if r := askEmail(as, id, email); r.StatusCode != http.StatusOK {
		t.Fatalf("asking for %s: %d %s", email, r.StatusCode, r.Body)
	}
}

// verifiedUser signs up n at n@example.org, follows the verification
// link, and returns the account and a session.
func verifiedUser(t *testing.T, api *testkit.API, mp *testkit.Mailpit, n string) (userBody, *testkit.API) {
	t.Helper()
	u := mustSignup(t, api, n, n+"@example.org")
	token := testkit.TokenIn(t, mp.WaitFor(t, n+"@example.org", 1)[0].Text, "verify")
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": token}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("verifying %s: %d %s", n, r.StatusCode, r.Body)
	}
	return u, api.As(mustLogin(t, api, n).Token)
}

// recoveredPassword is the password the owner chooses with the reset
// link a revert mails.
const recoveredPassword = "a recovered passphrase"

// refusedUntilReset checks that after a revert the password (right) opens
// nothing, 403 password_reset_required, and a wrong one gets the 401 any
// wrong password gets: a guesser learns nothing of the account.
func refusedUntilReset(t *testing.T, api *testkit.API, loginName, what string) {
	t.Helper()
	if r := login(api, loginName, testPassword); r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "password_reset_required" {
		t.Fatalf("%s: login with the password: %d %s, want 403 password_reset_required", what, r.StatusCode, r.Body)
	}
	if r := login(api, loginName, "a wrong guess"); r.StatusCode != http.StatusUnauthorized || r.Problem(t).Code != "invalid_credentials" {
		t.Fatalf("%s: login with a wrong password: %d %s, want 401 invalid_credentials", what, r.StatusCode, r.Body)
	}
}

// resetAfterRevert follows the reset link the revert mailed to address
// (the newest mail of the n it has had by then), sets
// recoveredPassword, and logs in with it as loginName.
func resetAfterRevert(t *testing.T, api *testkit.API, mp *testkit.Mailpit, address string, n int, loginName string) *testkit.API {
	t.Helper()
	mail := mp.WaitFor(t, address, n)[0]
	if mail.Subject != "Reset your shelf password" {
		t.Fatalf("after the revert %s gets %q, not a reset link", address, mail.Subject)
	}
	token := testkit.TokenIn(t, mail.Text, "reset")
	r := api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": token, "newPassword": testPassword})
	if p := r.Problem(t); r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Code != "recovered_password" {
		t.Fatalf("a reset to the password the recovery made unusable: %d %s", r.StatusCode, r.Body)
	}
	if r := api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": token, "newPassword": recoveredPassword}); r.StatusCode != http.StatusCreated {
		t.Fatalf("the revert's reset link: %d %s", r.StatusCode, r.Body)
	}
	r = login(api, loginName, recoveredPassword)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("login with the new password: %d %s", r.StatusCode, r.Body)
	}
	var s sessionBody
	r.JSON(t, &s)
	if r := login(api, loginName, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login with the old password after the reset: %d %s", r.StatusCode, r.Body)
	}
	return api.As(s.Token)
}

// TestStolenTokenCannotTakeTheAccount is the takeover story U9 stops, end
// to end, against a real SMTP server: with a stolen token alone the
// email cannot change; with the password too, it only asks for the new
// address, ends the owner's other sessions, mails the old address a
// notice, and no reset goes to the new address; the notice's link, even
// after the thief confirmed the new address, gives the owner the address
// back, ends the thief's sessions and mails a reset link.
func TestStolenTokenCannotTakeTheAccount(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("victim")
	owned, thief := n+"@example.org", name("thief")+"@example.net"
	u, owner := verifiedUser(t, api, mp, n)
	stolen := api.As(mustLogin(t, api, n).Token)
	path := "/v1/users/" + u.ID

	// The token alone: refused, and so is a guess.
	refusedCurrentPassword(t, stolen.Send(http.MethodPatch, path, map[string]string{"email": thief}), http.StatusBadRequest, "an email change without the password")
	refusedCurrentPassword(t, stolen.Send(http.MethodPatch, path, map[string]string{"email": thief, "currentPassword": "a wrong guess"}), http.StatusUnauthorized, "an email change with a wrong password")
	refusedCurrentPassword(t, stolen.Send(http.MethodPatch, path, map[string]string{"username": name("taken")}), http.StatusBadRequest, "a username change without the password")
	if got := account(t, owner); got.Email != owned || got.PendingEmail != "" {
		t.Fatalf("after the refused changes: %+v", got)
	}
	if r := stolen.Send(http.MethodPatch, path, map[string]string{"displayName": "Still Mine"}); r.StatusCode != http.StatusOK {
		t.Fatalf("a display name needs no password: %d %s", r.StatusCode, r.Body)
	}

	// With the password: only asked for.
	r := stolen.Send(http.MethodPatch, path, map[string]string{"email": thief, "currentPassword": testPassword})
	var changed accountBody
	r.JSON(t, &changed)
	if r.StatusCode != http.StatusOK || changed.Email != owned || changed.PendingEmail != thief || changed.EmailVerified == nil || !*changed.EmailVerified {
		t.Fatalf("the email change: %d %s", r.StatusCode, r.Body)
	}
	if r := owner.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the owner's other session after the change: %d", r.StatusCode)
	}
	notice := mp.WaitFor(t, owned, 2)[0]
	if notice.Subject != "The email address of your shelf account is changing" {
		t.Fatalf("the old address's newest mail: %+v", notice)
	}
	revert := testkit.TokenIn(t, notice.Text, "revert-email")
	// The new address is no login, and no reset goes to it.
	if r := login(api, thief, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login with the pending address: %d %s", r.StatusCode, r.Body)
	}
	if r := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": thief}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("a reset for the pending address: %d %s", r.StatusCode, r.Body)
	}
	for _, m := range mp.Messages(t, thief) {
		if m.Subject == "Reset your shelf password" {
			t.Fatal("a reset link went to an address the account only asked for")
		}
	}

	// The thief confirms the new address: it is the account's now.
	confirm := testkit.TokenIn(t, mp.WaitFor(t, thief, 1)[0].Text, "verify")
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming the new address: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, stolen); got.Email != thief || got.PendingEmail != "" {
		t.Fatalf("after the confirmation: %+v", got)
	}
	// The old address is held for the link: nobody signs up with it.
	if r := signup(api, name("squat"), owned); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the replaced address: %d %s", r.StatusCode, r.Body)
	}

	// The owner follows the notice's link.
	if r := api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": revert}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("reverting: %d %s", r.StatusCode, r.Body)
	}
	if r := stolen.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the thief's session after the revert: %d", r.StatusCode)
	}
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": revert}), "used", "the revert link again")
	// The password the thief knows opens nothing until the owner's reset.
	refusedUntilReset(t, api, owned, "after the revert")
	refusedUntilReset(t, api, n, "after the revert, by username")
	if r := login(api, thief, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login with the thief's address after the revert: %d %s", r.StatusCode, r.Body)
	}
	back := resetAfterRevert(t, api, mp, owned, 3, owned)
	if got := account(t, back); got.Email != owned || got.PendingEmail != "" || !*got.EmailVerified {
		t.Fatalf("after the revert: %+v", got)
	}
	// The thief's address is free again.
	mustSignup(t, api, name("later"), thief)
}

// TestRevertCancelsAPendingChange: the notice's link before the new
// address is confirmed cancels the change; the confirmation that comes
// later does nothing (stale), and the address asked for is free again.
func TestRevertCancelsAPendingChange(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("cancel")
	next := name("next") + "@example.net"
	u, as := verifiedUser(t, api, mp, n)
	mustAskEmail(t, as, u.ID, next)
	revert := testkit.TokenIn(t, mp.WaitFor(t, n+"@example.org", 2)[0].Text, "revert-email")
	confirm := testkit.TokenIn(t, mp.WaitFor(t, next, 1)[0].Text, "verify")
	if r := api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": revert}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("reverting: %d %s", r.StatusCode, r.Body)
	}
	if r := as.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the requesting session after the revert: %d", r.StatusCode)
	}
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm}), "stale", "the cancelled change's confirmation")
	refusedUntilReset(t, api, n, "after the revert")
	again := resetAfterRevert(t, api, mp, n+"@example.org", 3, n)
	if got := account(t, again); got.Email != n+"@example.org" || got.PendingEmail != "" || !*got.EmailVerified {
		t.Fatalf("after the revert: %+v", got)
	}
	mustSignup(t, api, name("free"), next)
}

// TestAReplacedChangeIsNeverConfirmed: a second change replaces the
// first; the first one's link, followed late, is stale and changes
// nothing; the first address is free, the second one's link completes.
// Sending the account's own address cancels a change.
func TestAReplacedChangeIsNeverConfirmed(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("twice")
	first, second := name("first")+"@example.net", name("second")+"@example.net"
	u, as := verifiedUser(t, api, mp, n)
	mustAskEmail(t, as, u.ID, first)
	late := testkit.TokenIn(t, mp.WaitFor(t, first, 1)[0].Text, "verify")
	mustAskEmail(t, as, u.ID, second)
	if got := account(t, as); got.PendingEmail != second {
		t.Fatalf("after the second change: %+v", got)
	}
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": late}), "stale", "the replaced change's link")
	if got := account(t, as); got.Email != n+"@example.org" || got.PendingEmail != second {
		t.Fatalf("after the late link: %+v", got)
	}
	mustSignup(t, api, name("took"), first)
	// The pending address is the account's alone meanwhile.
	if r := signup(api, name("grab"), second); r.StatusCode != http.StatusConflict {
		t.Fatalf("a signup with the pending address: %d %s", r.StatusCode, r.Body)
	}
	// A new link for the pending address can be asked for without a session.
	if r := api.Send(http.MethodPost, "/v1/email-verifications", map[string]string{"email": second}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("asking for a new link: %d %s", r.StatusCode, r.Body)
	}
	confirm := testkit.TokenIn(t, mp.WaitFor(t, second, 2)[0].Text, "verify")
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming the second address: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, as); got.Email != second || got.PendingEmail != "" || !*got.EmailVerified {
		t.Fatalf("after confirming: %+v", got)
	}
	// Sending the account's own address cancels a change pending.
	mustAskEmail(t, as, u.ID, name("third")+"@example.net")
	mustAskEmail(t, as, u.ID, second)
	if got := account(t, as); got.Email != second || got.PendingEmail != "" {
		t.Fatalf("after cancelling: %+v", got)
	}
}

// TestDeletionNeedsThePassword: the user's own deletion takes the current
// password (POST /v1/users/{id}/deletion; DELETE refuses the user's own
// request); an admin deletes a member without one, never another admin.
func TestDeletionNeedsThePassword(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, as := m.member(t)
	path := "/v1/users/" + u.ID
	refusedCurrentPassword(t, as.Send(http.MethodPost, path+"/deletion", map[string]string{}), http.StatusBadRequest, "a deletion without the password")
	refusedCurrentPassword(t, as.Send(http.MethodPost, path+"/deletion", map[string]string{"currentPassword": "a wrong guess"}), http.StatusUnauthorized, "a deletion with a wrong password")
	refusedCurrentPassword(t, as.Do(http.MethodDelete, path, "", nil), http.StatusBadRequest, "the user's own DELETE")
	if r := as.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the account after the refused deletions: %d", r.StatusCode)
	}
	mustDelete(t, as, u.ID)
	other, _ := m.member(t)
	if r := adminDeleteAndFinish(t, m.admin, other.ID); r.StatusCode != http.StatusAccepted {
		t.Fatalf("an admin deletes a member: %d %s", r.StatusCode, r.Body)
	}
	peer := withAdmin(t, m.app, m.api, m.db)
	for _, r := range []*testkit.Response{
		m.admin.Do(http.MethodDelete, "/v1/users/"+peer.id, "", nil),
		m.admin.Send(http.MethodPost, "/v1/users/"+peer.id+"/deletion", map[string]string{}),
	} {
		if r.StatusCode != http.StatusForbidden {
			t.Fatalf("an admin deletes another admin: %d %s", r.StatusCode, r.Body)
		}
	}
	if r := peer.admin.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the other admin after the refused deletions: %d", r.StatusCode)
	}
}

// TestAdminsCannotTakeEachOther: an admin changes a member's email (only
// asked for, no password of the member's, the member's sessions stay) and
// username, but not another admin's; a display name is fine.
func TestAdminsCannotTakeEachOther(t *testing.T) {
	t.Parallel()
	m := newModerators(t, nil)
	u, as := m.member(t)
	next := name("moved") + "@example.net"
	r := m.admin.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"email": next, "username": name("renamed")})
	var changed accountBody
	r.JSON(t, &changed)
	if r.StatusCode != http.StatusOK || changed.PendingEmail != next || changed.Email == next {
		t.Fatalf("an admin changes a member: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, as); got.PendingEmail != next {
		t.Fatalf("the member after the admin's change: %+v", got)
	}
	peer := withAdmin(t, m.app, m.api, m.db)
	for _, body := range []map[string]string{
		{"email": name("mine") + "@example.net"},
		{"username": name("mine")},
		{"email": name("mine") + "@example.net", "currentPassword": testPassword},
	} {
		if r := m.admin.Send(http.MethodPatch, "/v1/users/"+peer.id, body); r.StatusCode != http.StatusForbidden {
			t.Fatalf("an admin changes another admin's %v: %d %s", body, r.StatusCode, r.Body)
		}
	}
	if r := m.admin.Send(http.MethodPatch, "/v1/users/"+peer.id, map[string]string{"displayName": "Fellow Admin"}); r.StatusCode != http.StatusOK {
		t.Fatalf("an admin changes another admin's display name: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, peer.admin); got.PendingEmail != "" || got.DisplayName != "Fellow Admin" {
		t.Fatalf("the other admin: %+v", got)
	}
}

// TestEmailChangeUnderFaults loses the answer of each compare-and-set of
// an email change's life (the request, the confirmation, the revert),
// with another change of the account landing before the read-back, so
// that only "unknown" is honest: each answers 503, and its retry
// finishes; sessions end whenever the write may be in force. A request
// whose write is never sent leaves its claim to the retry, which adopts
// it.
func TestEmailChangeUnderFaults(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	a, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("faulty")
	owned, first, next := n+"@example.org", name("first")+"@example.net", name("next")+"@example.net"
	u, as := verifiedUser(t, api, mp, n)
	other := api.As(mustLogin(t, api, n).Token)
	change := func(email string) *testkit.Response { return askEmail(as, u.ID, email) }

	// Never sent: 503, nothing changed; the retry adopts the claim.
	faults(a).Set(neverSent("users.update"))
	r := change(first)
	faults(a).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a change never sent: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, as); got.PendingEmail != "" {
		t.Fatalf("a change never sent is pending: %+v", got)
	}
	if r := signup(api, name("grab"), first); r.StatusCode != http.StatusConflict {
		t.Fatalf("the address of a change whose write may land: %d %s", r.StatusCode, r.Body)
	}
	if r := change(first); r.StatusCode != http.StatusOK {
		t.Fatalf("the retry of a change never sent: %d %s", r.StatusCode, r.Body)
	}
	if r := other.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another session outlived the retry's email change: %d", r.StatusCode)
	}
	other = api.As(mustLogin(t, api, n).Token)

	// Landed, answer lost: 503; the other sessions end anyway.
	faults(a).Set(anotherWriteFirst(t, a, "users.update", u.ID))
	r = change(next)
	faults(a).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a change of unknown outcome: %d %s", r.StatusCode, r.Body)
	}
	if r := other.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another session outlived an email change that applied: %d", r.StatusCode)
	}
	if got := account(t, as); got.PendingEmail != next || got.Email != owned {
		t.Fatalf("after the change of unknown outcome: %+v", got)
	}
	if r := change(next); r.StatusCode != http.StatusOK {
		t.Fatalf("the retry: %d %s", r.StatusCode, r.Body)
	}
	mustSignup(t, api, name("freed"), first)
	revert := testkit.TokenIn(t, mp.WaitFor(t, owned, 2)[0].Text, "revert-email")

	// The confirmation, answer lost: 503; its retry finishes.
	confirm := testkit.TokenIn(t, mp.WaitFor(t, next, 1)[0].Text, "verify")
	faults(a).Set(anotherWriteFirst(t, a, "users.update", u.ID))
	r = api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm})
	faults(a).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a confirmation of unknown outcome: %d %s", r.StatusCode, r.Body)
	}
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the confirmation's retry: %d %s", r.StatusCode, r.Body)
	}
	if got := account(t, as); got.Email != next || got.PendingEmail != "" {
		t.Fatalf("after the confirmation: %+v", got)
	}

	// The revert, answer lost: 503, every session ended anyway; its retry
	// finishes.
	sent := len(mp.Messages(t, owned))
	faults(a).Set(anotherWriteFirst(t, a, "users.update", u.ID))
	r = api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": revert})
	faults(a).Set(nil)
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a revert of unknown outcome: %d %s", r.StatusCode, r.Body)
	}
	if r := as.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session outlived a revert that applied: %d", r.StatusCode)
	}
	if r := api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": revert}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the revert's retry: %d %s", r.StatusCode, r.Body)
	}
	refusedUntilReset(t, api, owned, "after the revert")
	back := resetAfterRevert(t, api, mp, owned, sent+1, owned)
	if got := account(t, back); got.Email != owned || got.PendingEmail != "" || !*got.EmailVerified {
		t.Fatalf("after the revert: %+v", got)
	}
	mustSignup(t, api, name("after"), next)
}

// TestAThiefsRevertKeepsTheOwnersLink: a thief who made the account's
// address theirs (changed and confirmed it) changes it once more, and
// follows the notice that came to their own address: that cancels their
// new change and ends the sessions, but the owner's address stays held,
// and the owner's link still gives it back.
func TestAThiefsRevertKeepsTheOwnersLink(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("owner")
	owned, thief, third := n+"@example.org", name("thief")+"@example.net", name("third")+"@example.net"
	u, _ := verifiedUser(t, api, mp, n)
	stolen := api.As(mustLogin(t, api, n).Token)
	mustAskEmail(t, stolen, u.ID, thief)
	ownersLink := testkit.TokenIn(t, mp.WaitFor(t, owned, 2)[0].Text, "revert-email")
	confirm := testkit.TokenIn(t, mp.WaitFor(t, thief, 1)[0].Text, "verify")
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": confirm}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming: %d %s", r.StatusCode, r.Body)
	}
	mustAskEmail(t, stolen, u.ID, third)
	thiefsLink := testkit.TokenIn(t, mp.WaitFor(t, thief, 2)[0].Text, "revert-email")
	if r := api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": thiefsLink}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the thief's revert: %d %s", r.StatusCode, r.Body)
	}
	if r := stolen.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the thief's session outlived the thief's revert: %d %s", r.StatusCode, r.Body)
	}
	if r := signup(api, name("third"), third); r.StatusCode != http.StatusCreated {
		t.Fatalf("the address of the cancelled change is not free: %d %s", r.StatusCode, r.Body)
	}
	if r := signup(api, name("squat"), owned); r.StatusCode != http.StatusConflict {
		t.Fatalf("the owner's address after the thief's revert: %d %s", r.StatusCode, r.Body)
	}
	if r := api.Send(http.MethodPost, "/v1/email-changes/revert", map[string]string{"token": ownersLink}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the owner's revert: %d %s", r.StatusCode, r.Body)
	}
	back := resetAfterRevert(t, api, mp, owned, 3, owned)
	if got := account(t, back); got.Email != owned || got.PendingEmail != "" {
		t.Fatalf("after the owner's revert: %+v", got)
	}
}
