//go:build integration

package e2e

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"shelf/internal/app"
	"shelf/tests/faultinject"
	"shelf/tests/testkit"
)

// newMailApp serves the whole service with mail sent over SMTP to mp (no
// TLS: a loopback test server), plus env. Mail jobs run inside their
// request (accountsWorkInRequest), so a request's mail, if any, has been
// handed to the SMTP server when it answers. opts are newTestApp's.
func newMailApp(t *testing.T, db *testkit.DB, mp *testkit.Mailpit, env map[string]string, opts ...app.Option) (*app.App, *testkit.API) {
	t.Helper()
	all := map[string]string{
		"SHELF_MAILER": "smtp", "SHELF_SMTP_HOST": mp.SMTPHost, "SHELF_SMTP_PORT": strconv.Itoa(mp.SMTPPort),
		"SHELF_SMTP_TLS": "none", "SHELF_PUBLIC_URL": "https://shelf.example.org", "SHELF_MAIL_PER_HOUR": "0",
	}
	for k, v := range env {
		all[k] = v
	}
	return newTestApp(t, db, all, append([]app.Option{accountsWorkInRequest}, opts...)...)
}

// me reads the caller's account.
func me(t *testing.T, as *testkit.API) (userBody, bool) {
	t.Helper()
	var u struct {
		userBody
		EmailVerified *bool `json:"emailVerified"`
	}
	r := as.Get("/v1/me")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/me: %d %s", r.StatusCode, r.Body)
	}
	r.JSON(t, &u)
	if u.EmailVerified == nil {
		t.Fatalf("GET /v1/me has no emailVerified: %s", r.Body)
	}
	return u.userBody, *u.EmailVerified
}

// refusedToken checks a 400 invalid_token naming token with code.
func refusedToken(t *testing.T, r *testkit.Response, code, what string) {
	t.Helper()
	p := r.Problem(t)
	if r.StatusCode != http.StatusBadRequest || p.Code != "invalid_token" || len(p.Errors) != 1 ||
		p.Errors[0].Field != "token" || p.Errors[0].Code != code {
		t.Fatalf("%s: %d %s, want 400 invalid_token token/%s", what, r.StatusCode, r.Body, code)
	}
}

// TestMailedVerificationAndReset is the mail's whole story against a real
// SMTP server (mailpit): signup mails a verification link, which verifies
// the address once; a reset request mails a link that sets a new password
// once and ends every session; a request for an unknown address answers
// exactly the same and sends nothing.
func TestMailedVerificationAndReset(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("mail")
	email := n + "@example.org"
	mustSignup(t, api, n, email)

	verify := mp.WaitFor(t, email, 1)[0]
	if verify.Subject != "Confirm your email address for shelf" || len(verify.To) != 1 || verify.To[0] != email {
		t.Fatalf("the verification mail: %+v", verify)
	}
	token := testkit.TokenIn(t, verify.Text, "verify")
	as := api.As(mustLogin(t, api, n).Token)
	if _, verified := me(t, as); verified {
		t.Fatal("verified before the link was followed")
	}
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": token}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming: %d %s", r.StatusCode, r.Body)
	}
	if _, verified := me(t, as); !verified {
		t.Fatal("not verified after the link was followed")
	}
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": token}), "used", "the verification token again")
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": token + "x"}), "unknown", "a made-up token")
	// A verified account gets no more verification mail.
	if r := api.Send(http.MethodPost, "/v1/email-verifications", map[string]string{"email": email}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("asking again: %d %s", r.StatusCode, r.Body)
	}

	// The reset: two sessions, a request for the address and one for an
	// address nobody has, answered alike.
	other := api.As(mustLogin(t, api, email).Token)
	unknown := name("nobody") + "@example.org"
	known := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": email})
	stranger := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": unknown})
	if known.StatusCode != http.StatusAccepted || stranger.StatusCode != known.StatusCode || string(stranger.Body) != string(known.Body) ||
		stranger.Header.Get("Content-Type") != known.Header.Get("Content-Type") {
		t.Fatalf("known %d %q, unknown %d %q: not the same answer", known.StatusCode, known.Body, stranger.StatusCode, stranger.Body)
	}
	mails := mp.WaitFor(t, email, 2)
	if mails[0].Subject != "Reset your shelf password" {
		t.Fatalf("the newest mail is %q", mails[0].Subject)
	}
	if len(mp.Messages(t, email)) != 2 {
		t.Fatal("the verified account was mailed another verification link")
	}
	reset := testkit.TokenIn(t, mails[0].Text, "reset")
	// The password rules of a password change apply.
	r := api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": "short"})
	if p := r.Problem(t); r.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != "newPassword" {
		t.Fatalf("a short password: %d %s", r.StatusCode, r.Body)
	}
	const newPassword = "a brand new passphrase"
	r = api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": newPassword})
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("resetting: %d %s", r.StatusCode, r.Body)
	}
	for i, s := range []*testkit.API{as, other} {
		if r := s.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("session %d after the reset: %d", i, r.StatusCode)
		}
	}
	// The reset answered a session under the new password: a way in.
	var opened sessionBody
	r.JSON(t, &opened)
	if u, _ := me(t, api.As(opened.Token)); u.Username != n {
		t.Fatalf("the reset's session is %s's", u.Username)
	}
	if r := login(api, n, testPassword); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the old password after the reset: %d %s", r.StatusCode, r.Body)
	}
	if r := login(api, n, newPassword); r.StatusCode != http.StatusCreated {
		t.Fatalf("the new password: %d %s", r.StatusCode, r.Body)
	}
	// The token used twice: refused, with the same password or another,
	// and the password stays.
	refusedToken(t, api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": newPassword}), "used", "the reset token again")
	refusedToken(t, api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": reset, "newPassword": "yet another passphrase"}), "used", "the reset token with another password")
	if r := login(api, n, newPassword); r.StatusCode != http.StatusCreated {
		t.Fatalf("the reset's password after the refused uses: %d %s", r.StatusCode, r.Body)
	}
	if got := mp.Messages(t, unknown); len(got) != 0 {
		t.Fatalf("%d mails to an address nobody has", len(got))
	}
}

// TestATokenForAnOldAddressDoesNotVerifyTheNewOne: a change of email only
// asks for the new address and mails it a link; once that link made it
// the account's, the link mailed to the old address is refused as stale.
// A change back is pending in turn: the account stays at its verified
// address meanwhile.
func TestATokenForAnOldAddressDoesNotVerifyTheNewOne(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	_, api := newMailApp(t, testkit.PackageDB(t), mp, nil)
	n := name("move")
	old, next := n+"@example.org", n+"@example.net"
	u := mustSignup(t, api, n, old)
	oldToken := testkit.TokenIn(t, mp.WaitFor(t, old, 1)[0].Text, "verify")
	as := api.As(mustLogin(t, api, n).Token)
	if r := as.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"email": next, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("changing the email: %d %s", r.StatusCode, r.Body)
	}
	if got, verified := me(t, as); verified || got.Email != old {
		t.Fatalf("while the change is pending: %s verified=%v", got.Email, verified)
	}
	newToken := testkit.TokenIn(t, mp.WaitFor(t, next, 1)[0].Text, "verify")
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": newToken}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming the new address: %d %s", r.StatusCode, r.Body)
	}
	if got, verified := me(t, as); !verified || got.Email != next {
		t.Fatalf("after confirming: %s verified=%v", got.Email, verified)
	}
	refusedToken(t, api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": oldToken}), "stale", "the old address's token")
	// A change back is pending: the account keeps its verified address.
	if r := as.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"email": old, "currentPassword": testPassword}); r.StatusCode != http.StatusOK {
		t.Fatalf("changing back: %d %s", r.StatusCode, r.Body)
	}
	if got, verified := me(t, as); !verified || got.Email != next {
		t.Fatalf("after asking to change back: %s verified=%v", got.Email, verified)
	}
}

// TestRequiredVerification: with SHELF_REQUIRE_VERIFIED_EMAIL an
// unverified account's login is refused with 403 email_not_verified once
// its password matched (a wrong one is the usual 401), it asks for a new
// link without a session, and logs in once it followed it; admins are not
// refused.
func TestRequiredVerification(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	a, api := newMailApp(t, testkit.PackageDB(t), mp, map[string]string{"SHELF_REQUIRE_VERIFIED_EMAIL": "true"})
	n := name("req")
	email := n + "@example.org"
	mustSignup(t, api, n, email)
	if r := login(api, n, testPassword); r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "email_not_verified" {
		t.Fatalf("an unverified login: %d %s", r.StatusCode, r.Body)
	}
	if r := login(api, n, "not the password"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong password of an unverified account: %d %s", r.StatusCode, r.Body)
	}
	if r := api.Send(http.MethodPost, "/v1/email-verifications", map[string]string{"email": email}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("asking for a new link: %d %s", r.StatusCode, r.Body)
	}
	mails := mp.WaitFor(t, email, 2)
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": testkit.TokenIn(t, mails[0].Text, "verify")}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("confirming: %d %s", r.StatusCode, r.Body)
	}
	mustLogin(t, api, n)
	// The first link still works too: each mail's token is its own.
	if r := api.Send(http.MethodPost, "/v1/email-verifications/confirm", map[string]string{"token": testkit.TokenIn(t, mails[1].Text, "verify")}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the first link: %d %s", r.StatusCode, r.Body)
	}
	admin := name("adm")
	mustSignup(t, api, admin, admin+"@example.org")
	if _, err := a.Accounts.SetAdmin(t.Context(), admin, true); err != nil {
		t.Fatal(err)
	}
	mustLogin(t, api, admin)
}

// TestMailRequestsRefuseOnlyMalformedInput: bad bodies are 400 naming the
// field, never a 500, and write nothing (no row in any table, no mail),
// even where the body names an account's address. A server whose SMTP
// does not answer still answers a good request 202: a mail's failure is
// logged, never answered. (In production the mail is sent after the
// answer; newMailApp sends it inside the request, so here the failure
// happens before the answer and is still not answered.)
func TestMailRequestsRefuseOnlyMalformedInput(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	_, api := newMailApp(t, db, mp, nil)
	n := name("bad")
	email := n + "@example.org"
	mustSignup(t, api, n, email)
	mailed := len(mp.WaitFor(t, email, 1))
	before := rowsOfEveryTable(t, db)
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/password-resets", `{"email":"not an address"}`, "email"},
		{"/v1/password-resets", `{}`, "email"},
		{"/v1/password-resets", `{"email":"` + email + `","extra":1}`, "extra"},
		{"/v1/email-verifications", `{"email":"` + email + `","extra":1}`, "extra"},
		{"/v1/email-verifications/confirm", `{}`, "token"},
		{"/v1/email-verifications/confirm", `{"token":""}`, "token"},
		{"/v1/password-resets/confirm", `{"token":"abc"}`, "newPassword"},
		{"/v1/password-resets/confirm", `{"token":"abc","newPassword":"long enough passphrase"}`, "token"},
	} {
		r := api.Do(http.MethodPost, tc.path, "application/json", []byte(tc.body))
		p := r.Problem(t)
		if r.StatusCode != http.StatusBadRequest || len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
			t.Errorf("%s %s: %d %s, want 400 naming %s", tc.path, tc.body, r.StatusCode, r.Body, tc.field)
		}
	}
	for table, n := range rowsOfEveryTable(t, db) {
		if n != before[table] {
			t.Errorf("the refused requests wrote rows: %s had %d, has %d", table, before[table], n)
		}
	}
	if got := len(mp.Messages(t, email)); got != mailed {
		t.Errorf("the refused requests mailed: %d mails, %d before", got, mailed)
	}

	// The same service with an SMTP server that is not there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, down := newTestApp(t, db, map[string]string{
		"SHELF_MAILER": "smtp", "SHELF_SMTP_HOST": "127.0.0.1", "SHELF_SMTP_PORT": strconv.Itoa(port),
		"SHELF_SMTP_TLS": "none", "SHELF_PUBLIC_URL": "https://shelf.example.org", "SHELF_MAIL_PER_HOUR": "0",
	}, accountsWorkInRequest)
	if r := down.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": email}); r.StatusCode != http.StatusAccepted {
		t.Errorf("a reset asked of a server whose SMTP does not answer: %d %s", r.StatusCode, r.Body)
	}
}

// rowsOfEveryTable counts the rows of every table of db's keyspace.
func rowsOfEveryTable(t *testing.T, db *testkit.DB) map[string]int {
	t.Helper()
	ctx := context.Background()
	var tables []string
	if err := db.Session.ContextQuery(ctx, `SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?`, nil).
		Bind(db.Keyspace()).SelectRelease(&tables); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, table := range tables {
		var n int
		if err := db.Session.ContextQuery(ctx, "SELECT COUNT(*) FROM "+table, nil).GetRelease(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// TestResetUnderFaults: the reset's writes lose their answers or land late
// (the token's use, the account's compare-and-set, the token's done mark);
// the client retries with the same password until it is answered, and
// then: the new password logs in, the old does not, no session from before
// works, and the token is refused from then on.
func TestResetUnderFaults(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	a, api := newMailApp(t, db, mp, nil)
	for _, stmt := range []string{"account_tokens.use", "users.update", "account_tokens.done"} {
		for _, fault := range []string{"lost", "late", "after-answer", "unknown"} {
			t.Run(stmt+"/"+fault, func(t *testing.T) {
				n := name("rf")
				email := n + "@example.org"
				mustSignup(t, api, n, email)
				before := api.As(mustLogin(t, api, n).Token)
				if r := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": email}); r.StatusCode != http.StatusAccepted {
					t.Fatalf("request: %d", r.StatusCode)
				}
				token := testkit.TokenIn(t, mp.WaitFor(t, email, 2)[0].Text, "reset")
				var mu sync.Mutex
				first := true
				faults(a).Set(func(s string, at faultinject.Point) error {
					mu.Lock()
					defer mu.Unlock()
					if s == stmt && fault == "unknown" && at == faultinject.BeforeLWT {
						// The first attempt lands after the answer, every
						// other answer is lost: the outcome stays unknown.
						if first {
							first = false
							return faultinject.ErrLandAfterAnswer
						}
						return lostAnswer
					}
					if s != stmt || !first {
						return nil
					}
					switch {
					case fault == "lost" && at == faultinject.AfterLWT:
						first = false
						return lostAnswer
					case fault == "late" && at == faultinject.BeforeLWT:
						first = false
						return faultinject.ErrLandLate
					case fault == "after-answer" && at == faultinject.BeforeLWT:
						first = false
						return faultinject.ErrLandAfterAnswer
					}
					return nil
				})
				const pw = "the reset passphrase"
				body := map[string]string{"token": token, "newPassword": pw}
				r := api.Send(http.MethodPost, "/v1/password-resets/confirm", body)
				faults(a).WaitLate()
				faults(a).Set(nil)
				switch r.StatusCode {
				case http.StatusCreated:
				case http.StatusServiceUnavailable:
					retry := api.Send(http.MethodPost, "/v1/password-resets/confirm", body)
					// A retry finishes (201, a session); one whose first
					// attempt finished everything, its done mark landing
					// late, finds the token used: the reset is complete.
					if retry.StatusCode != http.StatusCreated && (stmt != "account_tokens.done" || retry.StatusCode != http.StatusBadRequest) {
						t.Fatalf("the retry: %d %s", retry.StatusCode, retry.Body)
					}
				default:
					t.Fatalf("the reset: %d %s", r.StatusCode, r.Body)
				}
				if r := before.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("a session from before works: %d", r.StatusCode)
				}
				if r := login(api, n, testPassword); r.StatusCode != http.StatusUnauthorized {
					t.Fatalf("the old password: %d", r.StatusCode)
				}
				mustLoginWith(t, api, n, pw)
				refusedToken(t, api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": token, "newPassword": "another passphrase"}), "used", "the token after the reset")
			})
		}
	}
}

// mustLoginWith logs in with password, failing unless it answers 201.
func mustLoginWith(t *testing.T, api *testkit.API, loginName, password string) {
	t.Helper()
	if r := login(api, loginName, password); r.StatusCode != http.StatusCreated {
		t.Fatalf("login %s: %d %s", loginName, r.StatusCode, r.Body)
	}
}

// TestLoginRacingAReset: the attacker's login with the leaked password has
// checked it and is about to write its session (held at its index write)
// when the owner's reset, or her change of password from a session of
// hers, ends every session (the change keeps hers) and answers (201 with
// the reset's session, 204 for the change); then the login goes on. It
// answers 401, and whatever a login in flight answers, no session opened
// with the old password works once the new one is set (U8: the password
// epoch).
func TestLoginRacingAReset(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	a, api := newMailApp(t, db, mp, nil)
	const pw = "the owner's new passphrase"
	for _, owner := range []string{"reset", "change"} {
		t.Run(owner, func(t *testing.T) {
			n := name("lr")
			email := n + "@example.org"
			u := mustSignup(t, api, n, email)
			mine := api.As(mustLogin(t, api, n).Token)
			other := api.As(mustLogin(t, api, n).Token)
			ownerRequest := func() *testkit.Response {
				return mine.Send(http.MethodPut, "/v1/users/"+u.ID+"/password",
					map[string]string{"currentPassword": testPassword, "newPassword": pw})
			}
			if owner == "reset" {
				if r := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": email}); r.StatusCode != http.StatusAccepted {
					t.Fatalf("request: %d", r.StatusCode)
				}
				token := testkit.TokenIn(t, mp.WaitFor(t, email, 2)[0].Text, "reset")
				ownerRequest = func() *testkit.Response {
					return api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": token, "newPassword": pw})
				}
			}
			reached, release := make(chan struct{}), make(chan struct{})
			// Only the first session write (the login's) is held; the
			// reset's own, while it is held, goes through (a sync.Once
			// would make it wait for the first).
			var held atomic.Bool
			faults(a).Set(func(s string, at faultinject.Point) error {
				if s == "sessions_by_user.insert" && at == faultinject.BeforeWrite && held.CompareAndSwap(false, true) {
					close(reached)
					<-release
				}
				return nil
			})
			answer := make(chan *testkit.Response)
			go func() { answer <- login(api, n, testPassword) }()
			<-reached
			r := ownerRequest()
			close(release)
			attacker := <-answer
			faults(a).Set(nil)
			if want := map[string]int{"reset": http.StatusCreated, "change": http.StatusNoContent}[owner]; r.StatusCode != want {
				t.Fatalf("the owner's %s while the login was in flight: %d %s", owner, r.StatusCode, r.Body)
			}
			if attacker.StatusCode == http.StatusCreated {
				var s sessionBody
				attacker.JSON(t, &s)
				if r := api.As(s.Token).Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
					t.Errorf("the login in flight's session works after the owner's %s answered: %d", owner, r.StatusCode)
				}
			}
			if p := attacker.Problem(t); attacker.StatusCode != http.StatusUnauthorized || p.Code != "invalid_credentials" {
				t.Errorf("the login in flight answered %d %s, want 401 invalid_credentials", attacker.StatusCode, attacker.Body)
			}
			if r := other.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
				t.Errorf("a session from before the %s works: %d", owner, r.StatusCode)
			}
			wantMine := http.StatusUnauthorized
			if owner == "change" {
				wantMine = http.StatusOK // the session that changed it goes on
			}
			if r := mine.Get("/v1/me"); r.StatusCode != wantMine {
				t.Errorf("the owner's session after her %s: %d, want %d", owner, r.StatusCode, wantMine)
			}
			mustLoginWith(t, api, n, pw)
		})
	}
}
