package handlers

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
	"shelf/tests/testkit"
)

// deletedBeforeShown is the accounts' table with an account's deletion
// landing just before the first read of its shown columns: between the
// session check of a request and its handler's read.
type deletedBeforeShown struct {
	*memstore.Users
	once sync.Once
}

func (u *deletedBeforeShown) Shown(ctx context.Context, id string) (domain.Shown, error) {
	var err error
	u.once.Do(func() {
		var user domain.User
		if user, err = u.Users.Get(ctx, id); err == nil {
			user.Status, user.Version = domain.StatusDeleting, user.Version+1
			_, err = u.Users.Update(ctx, user)
		}
	})
	if err != nil {
		return domain.Shown{}, err
	}
	return u.Users.Shown(ctx, id)
}

// TestMeOfAnAccountDeletedMeanwhileIsNoSession: GET /v1/me's session
// is checked (the account active), then the account's deletion lands,
// then the handler reads the account to show it. It answered 200 with
// status "deleting", a value UserStatus (active, suspended) does not
// have, so a generated client with closed enums failed to decode it; and
// a session of an account being deleted works no more (bearerAuth). The
// answer is 401, as GET /v1/me from that session answers a moment later.
func TestMeOfAnAccountDeletedMeanwhileIsNoSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	users := &deletedBeforeShown{Users: st.Users()}
	acc := accounts.New(accounts.Config{ClaimLease: 30 * time.Second, SessionTTL: time.Hour, SeenInterval: time.Hour,
		Now: st.Now, Background: func(f func()) { f() }}, st.Claims(), users, st.Sessions(), plainHasher{}, nopWarnings{})
	const pw = "correct horse battery"
	if _, err := acc.Signup(ctx, accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: pw}); err != nil {
		t.Fatal(err)
	}
	login, err := acc.Login(ctx, "ann", pw, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	api := testkit.NewAPI(t, NewRouter(Deps{Logger: zerolog.Nop(), Ready: readyFunc(func() error { return nil }),
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second, Accounts: acc})).As(login.Token)

	res := api.Get("/v1/me") // checked against openapi.yaml
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/me as the deletion lands: %d %s, want 401", res.StatusCode, res.Body)
	}
}
