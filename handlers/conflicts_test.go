package handlers

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
	"shelf/tests/testkit"
)

// losingUsers is the accounts' table as it stands while other writes of
// each account keep landing first: once lose is set, every
// compare-and-set of an account row loses.
type losingUsers struct {
	*memstore.Users
	lose atomic.Bool
}

func (u *losingUsers) Update(ctx context.Context, user domain.User) (bool, error) {
	if u.lose.Load() {
		return false, nil
	}
	return u.Users.Update(ctx, user)
}

// TestAnAccountWriteThatKeepsLosingAnswersADocumentedConflict: an
// admin's revocation of a user's sessions (DELETE
// /v1/users/{id}/sessions) and an admin's removal of a user's factor
// (POST .../factors/{factorId}/removal) each write the account row in
// the read -> compare-and-set loop, which gives up after its rounds with
// 409 concurrent_change. Schedule: every compare-and-set of the account
// loses to another write of it. openapi.yaml listed no 409 on either
// operation, so a generated client could not decode the refusal that
// says "try again" (the contract check: status not supported).
func TestAnAccountWriteThatKeepsLosingAnswersADocumentedConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	users := &losingUsers{Users: st.Users()}
	acc := accounts.New(accounts.Config{ClaimLease: 30 * time.Second, SessionTTL: time.Hour, SeenInterval: time.Hour,
		Now: st.Now, Background: func(f func()) { f() }, Factors: st.Factors()},
		st.Claims(), users, st.Sessions(), plainHasher{}, nopWarnings{})
	const pw = "correct horse battery"
	bob, err := acc.Signup(ctx, accounts.SignupInput{Username: "bob", Email: "bob@example.org", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acc.Signup(ctx, accounts.SignupInput{Username: "root", Email: "root@example.org", Password: pw}); err != nil {
		t.Fatal(err)
	}
	if _, err := acc.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	root, err := acc.Login(ctx, "root", pw, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	factor := accounts.Factor{UserID: bob.ID, ID: "f_phone", Kind: accounts.FactorTOTP, Name: "phone", CreatedAt: st.Now()}
	if err := st.Factors().Begin(ctx, factor, time.Hour); err != nil {
		t.Fatal(err)
	}
	api := testkit.NewAPI(t, NewRouter(Deps{Logger: zerolog.Nop(), Ready: readyFunc(func() error { return nil }),
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second, Accounts: acc})).As(root.Token)

	users.lose.Store(true)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodDelete, "/v1/users/" + bob.ID + "/sessions", ""},
		{http.MethodPost, "/v1/users/" + bob.ID + "/factors/" + factor.ID + "/removal", "{}"},
	} {
		var res *testkit.Response
		if r.body == "" {
			res = api.Do(r.method, r.path, "", nil) // checked against openapi.yaml
		} else {
			res = api.Do(r.method, r.path, "application/json", []byte(r.body))
		}
		if res.StatusCode != http.StatusConflict || res.Problem(t).Code != "concurrent_change" {
			t.Errorf("%s %s: %d %s, want 409 concurrent_change", r.method, r.path, res.StatusCode, res.Body)
		}
	}
}
