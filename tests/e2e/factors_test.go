//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"

	"shelf/tests/testkit"
)

// authenticatorApp is the test's phone: it makes the codes of a secret,
// each step's once, never one the server would take as a replay (the
// step before now's, now's, the one after, in that order; when those
// are spent it waits for the next step). The step before now's is not
// given in the last 5 s of now's: a request on a loaded machine may
// reach the server after the step turns, when that code is too old.
type authenticatorApp struct {
	secret string
	last   int64
}

func (a *authenticatorApp) code(t *testing.T) string {
	t.Helper()
	for {
		clock := time.Now().Unix()
		now := clock / 30
		oldest := now - 1
		if (now+1)*30-clock <= 5 {
			oldest = now
		}
		step := max(a.last+1, oldest)
		if step <= now+1 {
			a.last = step
			c, err := hotp.GenerateCodeCustom(a.secret, uint64(step), hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		time.Sleep(time.Until(time.Unix((now+1)*30, 0)) + 50*time.Millisecond)
	}
}

// enrolment is the TotpEnrolment schema as tests read it.
type enrolment struct {
	Factor struct {
		ID string `json:"id"`
	} `json:"factor"`
	Secret     string `json:"secret"`
	OtpauthURI string `json:"otpauthUri"`
	QRCode     string `json:"qrCode"`
}

// challengeBody is the LoginChallenge schema.
type challengeBody struct {
	Challenge string    `json:"challenge"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// enrolTOTP enrols and confirms an authenticator for the account userID
// (as me), and returns the app and the recovery codes.
func enrolTOTP(t *testing.T, me *testkit.API, userID string) (*authenticatorApp, []string) {
	t.Helper()
	r := me.Send(http.MethodPost, "/v1/users/"+userID+"/factors", map[string]string{"name": "phone", "currentPassword": testPassword})
	if r.StatusCode != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("enrol: %d %s", r.StatusCode, r.Body)
	}
	var e enrolment
	r.JSON(t, &e)
	if !strings.HasPrefix(e.OtpauthURI, "otpauth://totp/") || !strings.Contains(e.OtpauthURI, "secret="+e.Secret) ||
		!strings.HasPrefix(e.QRCode, "data:image/png;base64,") || len(e.QRCode) < 500 {
		t.Fatalf("enrolment shows %+v", e)
	}
	app := &authenticatorApp{secret: e.Secret}
	r = me.Send(http.MethodPost, "/v1/users/"+userID+"/factors/"+e.Factor.ID+"/confirmation", map[string]string{"code": app.code(t)})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("confirm: %d %s", r.StatusCode, r.Body)
	}
	var c struct {
		RecoveryCodes []string `json:"recoveryCodes"`
	}
	r.JSON(t, &c)
	if len(c.RecoveryCodes) != 10 {
		t.Fatalf("a first factor's confirmation shows %d recovery codes, want 10", len(c.RecoveryCodes))
	}
	return app, c.RecoveryCodes
}

// challengeFor logs in with the password and expects the 202 challenge.
func challengeFor(t *testing.T, api *testkit.API, loginName string) string {
	t.Helper()
	r := login(api, loginName, testPassword)
	if r.StatusCode != http.StatusAccepted || strings.Contains(string(r.Body), `"token"`) {
		t.Fatalf("a password login of an account with a factor: %d %s, want 202 and no token", r.StatusCode, r.Body)
	}
	var c challengeBody
	r.JSON(t, &c)
	if c.Challenge == "" || time.Until(c.ExpiresAt) > 5*time.Minute+time.Second {
		t.Fatalf("challenge %+v", c)
	}
	return c.Challenge
}

func secondStep(api *testkit.API, challenge, field, code string) *testkit.Response {
	return api.Send(http.MethodPost, "/v1/sessions/second-factor", map[string]string{"challenge": challenge, field: code})
}

// TestAPasswordThiefGetsNoSessionWithAFactor: with an authenticator
// enrolled, the password alone opens nothing on either process; a code
// works once, a challenge makes one session, a recovery code works once,
// and removing the factor (password and code) restores password logins.
func TestAPasswordThiefGetsNoSessionWithAFactor(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	_, one := newMailApp(t, db, mp, factorKeys)
	_, two := newMailApp(t, db, mp, factorKeys)
	u, me := verifiedUser(t, one, mp, name("factor")) // a factor takes a verified address

	if r := me.Send(http.MethodPost, "/v1/users/"+u.ID+"/factors", map[string]string{"currentPassword": "not the password"}); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("enrol with a wrong password: %d %s", r.StatusCode, r.Body)
	}
	app, _ := enrolTOTP(t, me, u.ID)
	if r := me.Get("/v1/me"); r.StatusCode != http.StatusOK {
		t.Fatalf("the enrolling session after the enrolment: %d %s", r.StatusCode, r.Body)
	}

	for _, api := range []*testkit.API{one, two} {
		ch := challengeFor(t, api, u.Username)
		if r := secondStep(api, ch, "code", "000000"); r.StatusCode != http.StatusUnauthorized || !strings.Contains(string(r.Body), "invalid_code") {
			t.Fatalf("a wrong code: %d %s", r.StatusCode, r.Body)
		}
		r := secondStep(api, ch, "code", app.code(t))
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("the right code: %d %s", r.StatusCode, r.Body)
		}
		var s sessionBody
		r.JSON(t, &s)
		for _, info := range sessionsOf(t, api.As(s.Token), u.ID, 50) {
			if info.Current && strings.Join(info.MadeWith, "+") != "password+totp" {
				t.Fatalf("the session of a code says it was made with %v", info.MadeWith)
			}
		}
		if r := secondStep(api, ch, "code", "123456"); r.StatusCode != http.StatusUnauthorized || !strings.Contains(string(r.Body), "invalid_challenge") {
			t.Fatalf("a used challenge again: %d %s", r.StatusCode, r.Body)
		}
	}

	// Each account's factor takes three codes in a window of 30 s (the
	// step before now's, now's, the one after): a second account goes on,
	// so the test never waits for the clock.
	u, me = verifiedUser(t, one, mp, name("factor"))
	app, recovery := enrolTOTP(t, me, u.ID)

	// A code seen over the owner's shoulder works once: of two challenges
	// racing with it, one session.
	code := app.code(t)
	chs := []string{challengeFor(t, one, u.Username), challengeFor(t, two, u.Username)}
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i, api := range []*testkit.API{one, two} {
		wg.Go(func() { statuses[i] = secondStep(api, chs[i], "code", code).StatusCode })
	}
	wg.Wait()
	if (statuses[0] == http.StatusCreated) == (statuses[1] == http.StatusCreated) {
		t.Fatalf("one code on two challenges at once: %v, want one 201", statuses)
	}

	// A recovery code, once, dashes and case as the owner types them.
	ch := challengeFor(t, two, u.Username)
	if r := secondStep(two, ch, "recoveryCode", strings.ToUpper(recovery[3])); r.StatusCode != http.StatusCreated {
		t.Fatalf("a recovery code: %d %s", r.StatusCode, r.Body)
	}
	ch = challengeFor(t, one, u.Username)
	if r := secondStep(one, ch, "recoveryCode", recovery[3]); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a used recovery code: %d %s", r.StatusCode, r.Body)
	}
	var list struct {
		Items []struct {
			ID         string    `json:"id"`
			Name       string    `json:"name"`
			LastUsedAt time.Time `json:"lastUsedAt"`
		} `json:"items"`
		RecoveryCodesLeft int `json:"recoveryCodesLeft"`
	}
	readFactors(t, me, u.ID, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "phone" || list.Items[0].LastUsedAt.IsZero() || list.RecoveryCodesLeft != 9 {
		t.Fatalf("factors: %+v", list)
	}

	// Removal takes the password and a code; then the password is enough.
	if r := me.Send(http.MethodPost, "/v1/users/"+u.ID+"/factors/"+list.Items[0].ID+"/removal", map[string]string{"currentPassword": testPassword}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a removal without a code: %d %s", r.StatusCode, r.Body)
	}
	if r := me.Send(http.MethodPost, "/v1/users/"+u.ID+"/factors/"+list.Items[0].ID+"/removal",
		map[string]string{"currentPassword": testPassword, "code": app.code(t)}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("removal: %d %s", r.StatusCode, r.Body)
	}
	mustLogin(t, one, u.Username)
	readFactors(t, me, u.ID, &list)
	if len(list.Items) != 0 || list.RecoveryCodesLeft != 0 {
		t.Fatalf("factors after the removal: %+v", list)
	}
}

// TestWrongCodesAreThrottledButRecoveryCodesStillWork: a guesser with
// the password gets 429 after five wrong codes from one address, and the
// owner still gets in with a recovery code from that same address.
func TestWrongCodesAreThrottledButRecoveryCodesStillWork(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	_, api := newMailApp(t, db, mp, factorKeys)
	u, me := verifiedUser(t, api, mp, name("guessed")) // a factor takes a verified address
	_, recovery := enrolTOTP(t, me, u.ID)
	ch := challengeFor(t, api, u.Username)
	for i := range 5 {
		if r := secondStep(api, ch, "code", "12345"+itoa(i)); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong code %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	r := secondStep(api, ch, "code", "999999")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the sixth wrong code: %d %s", r.StatusCode, r.Body)
	}
	if r := secondStep(api, ch, "recoveryCode", recovery[0]); r.StatusCode != http.StatusCreated {
		t.Fatalf("a recovery code after the codes were throttled: %d %s", r.StatusCode, r.Body)
	}
}

func readFactors(t *testing.T, me *testkit.API, userID string, v any) {
	t.Helper()
	r := me.Get("/v1/users/" + userID + "/factors")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("factors: %d %s", r.StatusCode, r.Body)
	}
	r.JSON(t, v)
}

// TestWhatTakesAnAccountAsksTheFactorToo: with a factor, a thief holding
// a session and the password changes nothing that takes the account (a
// username, the password, the deletion) and adds no factor of their own
// (which would let them log in); the owner, with a code, does.
func TestWhatTakesAnAccountAsksTheFactorToo(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.NewDB(t)
	_, api := newMailApp(t, db, mp, factorKeys)
	u, me := verifiedUser(t, api, mp, name("reauth")) // a factor takes a verified address
	app, recovery := enrolTOTP(t, me, u.ID)
	renamed := name("renamed")
	for _, c := range []struct {
		method, path string
		body         map[string]string
	}{
		{http.MethodPatch, "/v1/users/" + u.ID, map[string]string{"username": renamed, "currentPassword": testPassword}},
		{http.MethodPut, "/v1/users/" + u.ID + "/password", map[string]string{"currentPassword": testPassword, "newPassword": "an entirely new passphrase"}},
		{http.MethodPost, "/v1/users/" + u.ID + "/deletion", map[string]string{"currentPassword": testPassword}},
		{http.MethodPost, "/v1/users/" + u.ID + "/factors", map[string]string{"currentPassword": testPassword}},
	} {
		r := me.Send(c.method, c.path, c.body)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), `"field":"code"`) {
			t.Fatalf("%s %s with the password alone: %d %s, want 400 naming code", c.method, c.path, r.StatusCode, r.Body)
		}
		c.body["code"] = strings.Repeat("1", 17)
		if r := me.Send(c.method, c.path, c.body); r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), `"field":"code"`) {
			t.Fatalf("%s %s with a code of 17 digits: %d %s, want 400 naming code", c.method, c.path, r.StatusCode, r.Body)
		}
		c.body["code"] = "000000"
		if r := me.Send(c.method, c.path, c.body); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s %s with a wrong code: %d %s", c.method, c.path, r.StatusCode, r.Body)
		}
	}
	if r := me.Send(http.MethodPatch, "/v1/users/"+u.ID, map[string]string{"username": renamed, "currentPassword": testPassword, "code": app.code(t)}); r.StatusCode != http.StatusOK {
		t.Fatalf("a rename with the code: %d %s", r.StatusCode, r.Body)
	}
	if r := me.Send(http.MethodPut, "/v1/users/"+u.ID+"/password", map[string]string{"currentPassword": testPassword,
		"newPassword": "an entirely new passphrase", "recoveryCode": recovery[0]}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("a password change with a recovery code: %d %s", r.StatusCode, r.Body)
	}
	if r := login(api, renamed, "an entirely new passphrase"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the new name and password: %d %s, want the factor's 202", r.StatusCode, r.Body)
	}
}

// factorKeys turn second factors on where SHELF_PUBLIC_URL is not this
// machine (the mail tests' apps).
var factorKeys = map[string]string{"SHELF_FACTOR_KEYS": "k2:" + strings.Repeat("A", 43) + "=,k1:" + strings.Repeat("B", 43) + "="}

// TestAThiefsFactorIsUndoneFromTheMailbox: a thief with a session and
// the password adds an authenticator of their own; its notice reaches
// the owner's address before it works, and its link removes it, ends
// every session (the thief's too), and makes the password open nothing
// until the owner's reset, which then logs in without any code.
func TestAThiefsFactorIsUndoneFromTheMailbox(t *testing.T) {
	t.Parallel()
	s := newStolenAccount(t, "owner")
	mp, api, other, n, u, stolen := s.mp, s.api, s.other, s.n, s.u, s.stolen
	owned := n + "@example.org"
	enrolTOTP(t, stolen, u.ID)
	notice := mp.WaitFor(t, owned, 2)[0]
	if notice.Subject != "A second factor was added to your shelf account" {
		t.Fatalf("the owner's address got %q", notice.Subject)
	}
	challengeFor(t, api, n) // the thief's factor works: the owner's password alone no longer logs in
	token := testkit.TokenIn(t, notice.Text, "revert-factor")
	if r := api.Send(http.MethodPost, "/v1/factor-additions/revert", map[string]string{"token": token}); r.StatusCode != http.StatusNoContent {
		t.Fatalf("the notice's link: %d %s", r.StatusCode, r.Body)
	}
	if r := other.Send(http.MethodPost, "/v1/factor-additions/revert", map[string]string{"token": token}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("the link again: %d %s", r.StatusCode, r.Body)
	}
	if r := stolen.Get("/v1/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the thief's session after the link: %d", r.StatusCode)
	}
	refusedUntilReset(t, other, n, "the thief's password")
	back := resetAfterRevert(t, api, mp, owned, 3, n)
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	readFactors(t, back, u.ID, &list)
	if len(list.Items) != 0 {
		t.Fatalf("the thief's factor after the link: %s", list.Items)
	}
}

// TestAResetKeepsTheFactor: a reset proves the mailbox and sets the
// password, and answers the challenge, not a session: the code makes it.
func TestAResetKeepsTheFactor(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	_, api := newMailApp(t, db, mp, factorKeys)
	n := name("keeper")
	u, me := verifiedUser(t, api, mp, n)
	app, _ := enrolTOTP(t, me, u.ID)
	if r := api.Send(http.MethodPost, "/v1/password-resets", map[string]string{"email": n + "@example.org"}); r.StatusCode != http.StatusAccepted {
		t.Fatalf("a reset request: %d %s", r.StatusCode, r.Body)
	}
	token := testkit.TokenIn(t, mp.WaitFor(t, n+"@example.org", 3)[0].Text, "reset")
	r := api.Send(http.MethodPost, "/v1/password-resets/confirm", map[string]string{"token": token, "newPassword": recoveredPassword})
	var c challengeBody
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("a reset of an account with a factor: %d %s, want 202", r.StatusCode, r.Body)
	}
	r.JSON(t, &c)
	if r := secondStep(api, c.Challenge, "code", app.code(t)); r.StatusCode != http.StatusCreated {
		t.Fatalf("the reset's challenge and a code: %d %s", r.StatusCode, r.Body)
	}
	if r := login(api, n, recoveredPassword); r.StatusCode != http.StatusAccepted {
		t.Fatalf("the new password: %d %s, want the factor's 202", r.StatusCode, r.Body)
	}
}

// TestARecoveryCodesUseIsAuditedAndMailed: each use of a recovery code is
// an audit entry (before the use) and a notice to the account's address
// saying how many are left; an admin's list of the account's factors is
// an entry too.
func TestARecoveryCodesUseIsAuditedAndMailed(t *testing.T) {
	t.Parallel()
	mp := testkit.StartMailpit(t)
	db := testkit.PackageDB(t)
	a, api := newMailApp(t, db, mp, factorKeys)
	n := name("spender")
	u, me := verifiedUser(t, api, mp, n)
	_, recovery := enrolTOTP(t, me, u.ID)
	ch := challengeFor(t, api, n)
	if r := secondStep(api, ch, "recoveryCode", recovery[5]); r.StatusCode != http.StatusCreated {
		t.Fatalf("a recovery code: %d %s", r.StatusCode, r.Body)
	}
	notice := mp.WaitFor(t, n+"@example.org", 3)[0]
	if notice.Subject != "A recovery code of your shelf account was used" || !strings.Contains(notice.Text, "9 unused codes are left") {
		t.Fatalf("after a recovery code the address got %q: %s", notice.Subject, notice.Text)
	}
	admin := name("auditor")
	mustSignup(t, api, admin, admin+"@example.org")
	if _, err := a.Accounts.SetAdmin(context.Background(), admin, true); err != nil {
		t.Fatal(err)
	}
	m := &moderators{admin: api.As(mustLogin(t, api, admin).Token)}
	if got := m.wantActions(t, u.ID, "recovery_code_used"); got[0].Actor != u.ID || got[0].Via != "api" {
		t.Fatalf("the entry: %+v", got[0])
	}
	// The admin's list of the user's factors is an entry of its own.
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	readFactors(t, m.admin, u.ID, &list)
	if got := m.wantActions(t, u.ID, "factors_listed", "recovery_code_used"); got[0].Actor == u.ID || got[0].Via != "api" {
		t.Fatalf("the admin's list: %+v", got[0])
	}
}

// TestAdminsActOnlyWithAFactorWhereRequired: under
// SHELF_REQUIRE_ADMIN_FACTOR an admin's session of a password alone is
// refused admin powers (403 admin_factor_required), and the session of
// a login with a code has them.
func TestAdminsActOnlyWithAFactorWhereRequired(t *testing.T) {
	t.Parallel()
	db := testkit.NewDB(t)
	mp := testkit.StartMailpit(t)
	env := map[string]string{"SHELF_REQUIRE_ADMIN_FACTOR": "true"}
	maps.Copy(env, factorKeys)
	a, api := newMailApp(t, db, mp, env)
	u, me := verifiedUser(t, api, mp, name("strictadmin")) // a factor takes a verified address
	if _, err := a.Accounts.SetAdmin(context.Background(), u.Username, true); err != nil {
		t.Fatal(err)
	}
	r := me.Get("/v1/suspensions")
	if r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "admin_factor_required" {
		t.Fatalf("an admin's password session: %d %s, want 403 admin_factor_required", r.StatusCode, r.Body)
	}
	_, other := newUser(t, api, "notadmin")
	if r := other.Get("/v1/suspensions"); r.StatusCode != http.StatusForbidden || r.Problem(t).Code != "forbidden" {
		t.Fatalf("a user who is no admin: %d %s, want the usual 403", r.StatusCode, r.Body)
	}
	app, _ := enrolTOTP(t, me, u.ID)
	ch := challengeFor(t, api, u.Username)
	r = secondStep(api, ch, "code", app.code(t))
	var s sessionBody
	r.JSON(t, &s)
	if r := api.As(s.Token).Get("/v1/suspensions"); r.StatusCode != http.StatusOK {
		t.Fatalf("an admin's session with a code: %d %s", r.StatusCode, r.Body)
	}
}

// TestAThiefsPendingEnrolmentsEndWhenTheOwnerSignsOutEverywhereElse: a
// thief with the password and a session, on another process, begins ten
// authenticators and confirms none. The owner's own enrolment is refused
// 409 too_many_factors, telling her to sign out everywhere else; once she
// did, his enrolments are removed after the answer, and hers begins and
// confirms.
func TestAThiefsPendingEnrolmentsEndWhenTheOwnerSignsOutEverywhereElse(t *testing.T) {
	t.Parallel()
	s := newStolenAccount(t, "crowded")
	u, me, stolen := s.u, s.me, s.stolen
	begin := func(as *testkit.API) *testkit.Response {
		return as.Send(http.MethodPost, "/v1/users/"+u.ID+"/factors", map[string]string{"name": "app", "currentPassword": testPassword})
	}
	for i := range 10 {
		if r := begin(stolen); r.StatusCode != http.StatusCreated {
			t.Fatalf("the thief's enrolment %d: %d %s", i, r.StatusCode, r.Body)
		}
	}
	r := begin(me)
	if r.StatusCode != http.StatusConflict || !strings.Contains(string(r.Body), `"too_many_factors"`) || !strings.Contains(string(r.Body), "sign out everywhere else") {
		t.Fatalf("her enrolment beside his ten: %d %s, want 409 too_many_factors telling her to sign out everywhere else", r.StatusCode, r.Body)
	}
	if r := me.Send(http.MethodDelete, "/v1/users/"+u.ID+"/sessions?keep=current", nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("signing out everywhere else: %d %s", r.StatusCode, r.Body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for r = begin(me); r.StatusCode == http.StatusConflict && time.Now().Before(deadline); r = begin(me) {
		time.Sleep(200 * time.Millisecond)
	}
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("her enrolment after she signed out everywhere else: %d %s", r.StatusCode, r.Body)
	}
	var e enrolment
	r.JSON(t, &e)
	app := &authenticatorApp{secret: e.Secret}
	if r := me.Send(http.MethodPost, "/v1/users/"+u.ID+"/factors/"+e.Factor.ID+"/confirmation", map[string]string{"code": app.code(t)}); r.StatusCode != http.StatusOK {
		t.Fatalf("her confirmation: %d %s", r.StatusCode, r.Body)
	}
}

// stolenAccount is a verified account on two processes with factors on:
// its owner's session on api, and a session a thief opened with the
// password on other.
type stolenAccount struct {
	mp                     *testkit.Mailpit
	api, other, me, stolen *testkit.API
	n                      string // the username; the address is n@example.org
	u                      userBody
}

func newStolenAccount(t *testing.T, prefix string) stolenAccount {
	t.Helper()
	s := stolenAccount{mp: testkit.StartMailpit(t), n: name(prefix)}
	db := testkit.PackageDB(t)
	_, s.api = newMailApp(t, db, s.mp, factorKeys)
	_, s.other = newMailApp(t, db, s.mp, factorKeys)
	s.u, s.me = verifiedUser(t, s.api, s.mp, s.n)
	s.stolen = s.other.As(mustLogin(t, s.other, s.n).Token)
	return s
}
