package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"shelf/domain/accounts"
	"shelf/domain/groups"
	"shelf/domain/library"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/tests/memstore"
	"shelf/tests/testkit"
)

// memApp is the whole router on the memory store, every service wired
// as the app wires them, with one account, ann, logged in.
type memApp struct {
	router http.Handler
	ann    string // ann's id
	token  string // ann's session
	mail   *mailbox
}

// mailbox records the mail the app sends.
type mailbox struct {
	mu   sync.Mutex
	sent []accounts.Message
}

func (b *mailbox) Send(_ context.Context, m accounts.Message) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, m)
	return nil
}

// token is the token of the last mail to address with a link to page
// ("" when there is none).
func (b *mailbox) token(page, address string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	token := ""
	for _, m := range b.sent {
		marker := "/#/" + page + "?token="
		if i := strings.Index(m.Text, marker); i >= 0 && m.To == address {
			rest := m.Text[i+len(marker):]
			token = rest[:strings.IndexAny(rest, "\n ")]
		}
	}
	return token
}

// newMemApp builds a memApp; work after an answer is done at once. Each
// of more changes the accounts' configuration before it is built.
func newMemApp(t *testing.T, more ...func(*memstore.Store, *accounts.Config)) *memApp {
	t.Helper()
	return newMemAppWith(t, func(*Deps) {}, more...)
}

// newMemAppWith is newMemApp with its router's Deps changed by deps.
func newMemAppWith(t *testing.T, deps func(*Deps), more ...func(*memstore.Store, *accounts.Config)) *memApp {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	atOnce := func(f func()) { f() }
	box := &mailbox{}
	cfg := accounts.Config{ClaimLease: 30 * time.Second, SessionTTL: time.Hour, SeenInterval: time.Hour,
		Now: st.Now, Background: atOnce, Mail: accounts.Mail{Tokens: st.Tokens(), Mailer: box, PublicURL: "https://shelf.example.org",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour}}
	for _, change := range more {
		change(st, &cfg)
	}
	acc := accounts.New(cfg, st.Claims(), st.Users(), st.Sessions(), plainHasher{}, nopWarnings{})
	grp := groups.New(groups.Config{ClaimLease: 30 * time.Second, Now: st.Now, Closings: st.Closings(), Changes: st.GroupChanges()},
		acc, st.Users(), st.Claims(), st.Groups(), st.GroupMembers(), nopWarnings{})
	lib := library.New(library.Config{SyncFanoutLimit: 1000, FanoutConcurrency: 1, Now: st.Now, Background: atOnce},
		acc, st.Users(), grp, st.Contents(), nopWarnings{})
	mod := moderation.New(moderation.Config{BucketSize: moderation.BucketMonth, Now: st.Now}, acc, st.Users(), st.Suspensions())
	life := lifecycle.New(lifecycle.Config{Now: st.Now}, acc, mod, grp, lib, lifecycle.Stores{
		Jobs: st.Jobs(), Queue: st.JobQueue(), Deletions: st.Deletions(), Closings: st.Closings()})
	const pw = "correct horse battery"
	ann, err := acc.Signup(ctx, accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	login, err := acc.Login(ctx, "ann", pw, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{Logger: zerolog.Nop(), Ready: readyFunc(func() error { return nil }),
		OpenAPI: []byte("openapi: 3.1.0\n"), MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second,
		Accounts: acc, Moderation: mod, Groups: grp, Contents: lib, Lifecycle: life}
	deps(&d)
	return &memApp{router: NewRouter(d), ann: ann.ID, token: login.Token, mail: box}
}

// do sends a request with ann's session and a JSON body ("" for none).
func (a *memApp) do(method, path, body string) *httptest.ResponseRecorder {
	return a.as(a.token, method, path, body)
}

// as sends a request with token's session ("" for none) and a JSON body
// ("" for none).
func (a *memApp) as(token, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	a.router.ServeHTTP(rec, newRequest(token, method, path, body))
	return rec
}

// checked sends as as does, and checks the answer against openapi.yaml.
func (a *memApp) checked(t *testing.T, contract *testkit.Contract, token, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := newRequest(token, method, path, body)
	rec := httptest.NewRecorder()
	a.router.ServeHTTP(rec, req)
	if err := contract.Check(req, rec.Result(), rec.Body.Bytes()); err != nil {
		t.Errorf("%s %s: %v", method, path, err)
	}
	return rec
}

// newRequest is a request with token's session ("" for none) and a JSON
// body ("" for none).
func newRequest(token, method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body == "" {
		req.Body = http.NoBody
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}
