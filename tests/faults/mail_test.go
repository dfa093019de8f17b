package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (l *warnings) Warn(_ context.Context, msg string, _ ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, msg)
}

// recorder records mail, or fails every send when broken; afterSend,
// when set, runs once a mail is recorded (what its reader does before
// the sender goes on).
type recorder struct {
	mu        sync.Mutex
	sent      []accounts.Message
	broken    bool
	afterSend func()
}

func (b *recorder) Send(_ context.Context, m accounts.Message) error {
	b.mu.Lock()
	if b.broken {
		b.mu.Unlock()
		return errors.New("smtp: 451 try later")
	}
	b.sent = append(b.sent, m)
	after := b.afterSend
	b.mu.Unlock()
	if after != nil {
		after()
	}
	return nil
}

// link returns the token of the last mail's link to page.
func (b *recorder) link(t *testing.T, page string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sent) == 0 {
		t.Fatal("no mail")
	}
	text := b.sent[len(b.sent)-1].Text
	marker := "https://shelf.example.org/#/" + page + "?token="
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no %s link in %q", page, text)
	}
	rest := text[i+len(marker):]
	return rest[:strings.IndexByte(rest, '\n')]
}

// tokens returns the tokens of every mail's link to page, oldest first.
func (b *recorder) tokens(page string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, msg := range b.sent {
		marker := "/#/" + page + "?token="
		if i := strings.Index(msg.Text, marker); i >= 0 {
			rest := msg.Text[i+len(marker):]
			out = append(out, rest[:strings.IndexAny(rest, "\n ")])
		}
	}
	return out
}

func (b *recorder) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sent)
}

// newMailService is an accounts service on fresh in-memory tables that
// mails into a recorder, inline (require: only a verified address logs
// in), each of wire changing its config first; it returns the store, the
// recorder and the warnings logged too.
func newMailService(t *testing.T, require bool, wire ...func(st *memstore.Store, c *accounts.Config)) (*accounts.Service, *memstore.Store, *recorder, *warnings) {
	t.Helper()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	l := &warnings{}
	b := &recorder{}
	cfg := accounts.Config{ClaimLease: 30 * time.Second, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now, Background: atOnce,
		Mail: accounts.Mail{Tokens: st.Tokens(), Mailer: b, PublicURL: "https://shelf.example.org/",
			VerifyTTL: 24 * time.Hour, ResetTTL: time.Hour, RequireVerified: require}}
	for _, w := range wire {
		w(st, &cfg)
	}
	svc := accounts.New(cfg, st.Claims(), st.Users(), st.Sessions(), plainHasher{}, l)
	return svc, st, b, l
}

func signupMailed(t *testing.T, svc *accounts.Service, name string) domain.User {
	t.Helper()
	u, err := svc.Signup(context.Background(), accounts.SignupInput{Username: name, Email: name + "@example.org", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSignupMailsAVerificationLinkThatWorksOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, b, _ := newMailService(t, false)
	u := signupMailed(t, svc, "ann")
	if b.count() != 1 || b.sent[0].To != "ann@example.org" {
		t.Fatalf("mail after signup: %+v", b.sent)
	}
	token := b.link(t, "verify")
	if _, err := svc.ResetPassword(ctx, token, "a new passphrase", accounts.Client{}); !errors.Is(err, accounts.ErrTokenUnknown) {
		t.Fatalf("a verification token used for a reset: %v", err)
	}
	if err := svc.ConfirmEmail(ctx, token); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Users().Get(ctx, u.ID)
	if got.EmailVerifiedAt.IsZero() {
		t.Fatal("not verified")
	}
	if err := svc.ConfirmEmail(ctx, token); !errors.Is(err, accounts.ErrTokenUsed) {
		t.Fatalf("the second use: %v", err)
	}
	// Verified: asking again mails nothing.
	if err := svc.RequestVerification(ctx, domain.Principal{}, "ANN@example.org"); err != nil || b.count() != 1 {
		t.Fatalf("asking again when verified: %v, %d mails", err, b.count())
	}
}

func TestTokensExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, b, _ := newMailService(t, false)
	signupMailed(t, svc, "ann")
	verify := b.link(t, "verify")
	if err := svc.RequestPasswordReset(ctx, "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	reset := b.link(t, "reset")
	st.Advance(time.Hour)
	if _, err := svc.ResetPassword(ctx, reset, "a new passphrase", accounts.Client{}); !errors.Is(err, accounts.ErrTokenExpired) {
		t.Fatalf("a reset token after an hour: %v", err)
	}
	st.Advance(23 * time.Hour)
	if err := svc.ConfirmEmail(ctx, verify); !errors.Is(err, accounts.ErrTokenExpired) {
		t.Fatalf("a verification token after a day: %v", err)
	}
	st.Advance(accounts.TokenGrace)
	if err := svc.ConfirmEmail(ctx, verify); !errors.Is(err, accounts.ErrTokenUnknown) {
		t.Fatalf("a verification token whose row is gone: %v", err)
	}
}

// TestResetLinksGoStaleOnlyWithARecovery: a reset makes every other
// reset link stale; a change of the password does not (whoever changes
// it, a thief holding a session and the password included, must not make
// the links in the owner's mailbox useless), and the reset made with such
// a link ends the session that changed it.
func TestResetLinksGoStaleOnlyWithARecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, b, _ := newMailService(t, false)
	u := signupMailed(t, svc, "ann")
	for range 2 {
		if err := svc.RequestPasswordReset(ctx, "ann@example.org"); err != nil {
			t.Fatal(err)
		}
	}
	second := b.link(t, "reset")
	b.sent = b.sent[:len(b.sent)-1]
	first := b.link(t, "reset")
	if _, err := svc.ResetPassword(ctx, first, "a new passphrase", accounts.Client{}); err != nil {
		t.Fatal(err)
	}
	// The other link was mailed before that recovery: stale now.
	if _, err := svc.ResetPassword(ctx, second, "another passphrase", accounts.Client{}); !errors.Is(err, accounts.ErrTokenStale) {
		t.Fatalf("a second reset link after a reset: %v", err)
	}
	if err := svc.RequestPasswordReset(ctx, "ann@example.org"); err != nil {
		t.Fatal(err)
	}
	third := b.link(t, "reset")
	r, err := svc.Login(ctx, "ann", "a new passphrase", accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := svc.Authenticate(ctx, r.Token)
	if err := svc.ChangePassword(ctx, p, u.ID, accounts.Password("a new passphrase"), "changed by hand"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ResetPassword(ctx, third, "yet another one", accounts.Client{}); err != nil {
		t.Fatalf("a reset link after a password change: %v", err)
	}
	if _, err := svc.Authenticate(ctx, r.Token); !errors.Is(err, domain.ErrNoSession) {
		t.Fatalf("the session that changed the password, after the reset: %v", err)
	}
	if _, err := svc.Login(ctx, "ann", "changed by hand", accounts.Client{}); err == nil {
		t.Fatal("the changed password logs in after the reset")
	}
	if _, err := svc.Login(ctx, "ann", "yet another one", accounts.Client{}); err != nil {
		t.Fatalf("the reset's password: %v", err)
	}
}

func TestRequestsAnswerTheSameAndMailOnlyAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, b, _ := newMailService(t, false)
	signupMailed(t, svc, "ann")
	for _, email := range []string{"nobody@example.org", "ann@example.org"} {
		if err := svc.RequestPasswordReset(ctx, email); err != nil {
			t.Fatalf("%s: %v", email, err)
		}
	}
	if b.count() != 2 || b.sent[1].To != "ann@example.org" {
		t.Fatalf("mail: %+v", b.sent)
	}
	var de *domain.Error
	if err := svc.RequestPasswordReset(ctx, "not an address"); !errors.As(err, &de) || de.Fields[0].Field != "email" {
		t.Fatalf("a malformed address: %v", err)
	}
}

func TestAFailedMailFailsNothing(t *testing.T) {
	t.Parallel()
	svc, _, b, l := newMailService(t, false)
	b.broken = true
	u := signupMailed(t, svc, "ann")
	if u.Status != domain.StatusActive {
		t.Fatalf("the signup: %+v", u)
	}
	if len(l.lines) != 1 || !strings.Contains(l.lines[0], "the user can ask again") {
		t.Fatalf("logged: %v", l.lines)
	}
	if err := svc.RequestVerification(context.Background(), domain.Principal{}, "ann@example.org"); err != nil {
		t.Fatalf("asking while mail fails: %v", err)
	}
}

func TestRequiredVerificationRefusesLoginButNotAdmins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, b, _ := newMailService(t, true)
	signupMailed(t, svc, "ann")
	if _, err := svc.Login(ctx, "ann", "wrong password", accounts.Client{}); !errors.Is(err, accounts.ErrInvalidCredentials) {
		t.Fatalf("a wrong password: %v", err)
	}
	if _, err := svc.Login(ctx, "ann", password, accounts.Client{}); !errors.Is(err, accounts.ErrEmailNotVerified) {
		t.Fatalf("unverified: %v", err)
	}
	if err := svc.ConfirmEmail(ctx, b.link(t, "verify")); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Login(ctx, "ann", password, accounts.Client{}); err != nil {
		t.Fatalf("verified: %v", err)
	}
	signupMailed(t, svc, "root")
	if _, err := svc.SetAdmin(ctx, "root", true); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Login(ctx, "root", password, accounts.Client{}); err != nil {
		t.Fatalf("an unverified admin: %v", err)
	}
}

func TestMailLinks(t *testing.T) {
	t.Parallel()
	if got := accounts.Link("https://x.example/", accounts.PurposeResetPassword, "a-b_c"); got != "https://x.example/#/reset?token=a-b_c" {
		t.Fatal(got)
	}
	if got := accounts.Link("http://localhost:8080", accounts.PurposeVerifyEmail, "t"); got != "http://localhost:8080/#/verify?token=t" {
		t.Fatal(got)
	}
}
