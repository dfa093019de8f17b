package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"shelf/domain/accounts"
	"shelf/tests/memstore"
	"shelf/tests/testkit"
)

// TestAVerificationRequestSpendsTheBudgetItsSessionOwns: ann's address
// is not verified and may be mailed two mails an hour in each budget,
// verification links one of them; her signup's link spent anyone's.
// POST /v1/email-verifications for her address without a session
// answers 202 and mails nothing, as before; with ann's session it
// answers the same 202 and mails her a link, from the account's own
// budget, which before the handler never passed on (the request counted
// as anyone's and was held back). A token that is not a session answers
// 401, as on every route. Each answer is checked against openapi.yaml.
func TestAVerificationRequestSpendsTheBudgetItsSessionOwns(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	app := newMemApp(t, func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts()}
		c.Mail.PerAddress = 2
	})
	ask := func(token string) *httptest.ResponseRecorder {
		t.Helper()
		return app.checked(t, contract, token, http.MethodPost, "/v1/email-verifications", `{"email":"ann@example.org"}`)
	}
	signups := app.mail.token("verify", "ann@example.org")
	if signups == "" {
		t.Fatal("the signup mailed no verification link")
	}
	if rec := ask(""); rec.Code != http.StatusAccepted {
		t.Fatalf("without a session: %d %s", rec.Code, rec.Body)
	}
	if app.mail.token("verify", "ann@example.org") != signups {
		t.Fatal("a link went out past anyone's spent budget: the test no longer shows the hold")
	}
	if rec := ask(app.token); rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		t.Fatalf("with ann's session: %d %q, want 202 and no body", rec.Code, rec.Body)
	}
	if app.mail.token("verify", "ann@example.org") == signups {
		t.Error("ann's request with her session was held back by anyone's spent budget")
	}
	problemOf(t, ask("not-a-session"), http.StatusUnauthorized, "unauthorized")
}
