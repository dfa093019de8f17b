package handlers

import (
	"net/http"
	"testing"

	"shelf/tests/testkit"
)

// TestAnAddressTheServerTakesIsOneTheContractAdmits: the server takes
// an address whose local part or domain is not ASCII (NormalizeEmail:
// NFKC, folded; é@example.org, user@bücher.example) and answers it back
// as the account's email and pendingEmail. openapi.yaml said `format:
// email`, JSON Schema's RFC 5321 form, ASCII only: the signup's and the
// change's own answers failed the contract ("is not valid email"), and a
// client that validates formats refused the account the server had just
// made. The format is `idn-email` (RFC 6531), what the server takes.
func TestAnAddressTheServerTakesIsOneTheContractAdmits(t *testing.T) {
	t.Parallel()
	app := newMemApp(t)
	api := testkit.NewAPI(t, app.router) // every answer checked against openapi.yaml
	res := api.Do(http.MethodPost, "/v1/users", "application/json",
		[]byte(`{"username":"eve","email":"é@example.org","password":"correct horse battery"}`))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("signup with é@example.org: %d %s", res.StatusCode, res.Body)
	}
	res = api.As(app.token).Do(http.MethodPatch, "/v1/users/"+app.ann, "application/json",
		[]byte(`{"email":"ann@bücher.example","currentPassword":"correct horse battery"}`))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("change to ann@bücher.example: %d %s", res.StatusCode, res.Body)
	}
}
