package handlers

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"shelf/tests/testkit"
)

// TestTheNotMeLinkBarsTheAddressOverHTTP: ann asks for ann@example.net;
// the mail to it carries a "not me" link beside the verification link.
// Its POST answers 204 with no body (nothing of the account), and ann's
// next request for that address answers 409 address_refused naming
// email; a body without the token answers 400 naming token. Each answer
// is checked against openapi.yaml.
func TestTheNotMeLinkBarsTheAddressOverHTTP(t *testing.T) {
	t.Parallel()
	contract, err := testkit.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	app := newMemApp(t)
	send := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		return app.checked(t, contract, app.token, method, path, body)
	}
	const change = `{"email":"ann@example.net","currentPassword":"correct horse battery"}`
	if rec := send(http.MethodPatch, "/v1/users/"+app.ann, change); rec.Code != http.StatusOK {
		t.Fatalf("asking for a new address: %d %s", rec.Code, rec.Body)
	}
	token := app.mail.token("refuse-email", "ann@example.net")
	if token == "" {
		t.Fatal("the mail to the address asked for carries no \"not me\" link")
	}
	if rec := send(http.MethodPost, "/v1/email-changes/refusal", `{"token":"`+token+`"}`); rec.Code != http.StatusNoContent || rec.Body.Len() != 0 {
		t.Fatalf("the not-me link: %d %q, want 204 and no body", rec.Code, rec.Body)
	}
	p := problemOf(t, send(http.MethodPatch, "/v1/users/"+app.ann, change), http.StatusConflict, "address_refused")
	if len(p.Errors) != 1 || p.Errors[0].Field != "email" || p.Errors[0].Code != "refused" {
		t.Errorf("errors %+v, want one naming email, code refused", p.Errors)
	}
	p = problemOf(t, send(http.MethodPost, "/v1/email-changes/refusal", `{}`), http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "token" {
		t.Errorf("errors %+v, want one naming token", p.Errors)
	}
}
