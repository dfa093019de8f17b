package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// The throttle of password guesses and of mail (docs/design/throttle.md)
// on the in-memory store, which keeps repository.Attempts' contract: a row
// per attempt that expires with its TTL, and a removal that shadows a
// write landing late. tests/e2e/throttle_test.go runs the same attacks on
// Cassandra through two instances.

// countingHasher is plainHasher counting the verifications (and burns)
// that ran.
type countingHasher struct {
	plainHasher
	runs atomic.Int64
}

func (h *countingHasher) Verify(ctx context.Context, pw, phc string) (bool, bool, error) {
	h.runs.Add(1)
	return h.plainHasher.Verify(ctx, pw, phc)
}

func (h *countingHasher) Burn(ctx context.Context, pw string) error {
	h.runs.Add(1)
	return nil
}

const (
	perAddress = 5
	perLogin   = 12
	window     = 15 * time.Minute
)

// newThrottled is an accounts service on fresh in-memory tables with the
// throttle on (5 per address, 12 per login, 15 minutes) and a counting
// hasher, and one account, "ann".
func newThrottled(t *testing.T) (*accounts.Service, *memstore.Store, *countingHasher, domain.User) {
	t.Helper()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	h := &countingHasher{}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: st.Attempts(), PerAddress: perAddress, PerLogin: perLogin, Window: window}},
		st.Claims(), st.Users(), st.Sessions(), h, nopLog{})
	u, err := svc.Signup(context.Background(), accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	return svc, st, h, u
}

// from is a client at ip.
func from(ip string) accounts.Client { return accounts.Client{IP: ip} }

// refusedFor checks err is the throttle's refusal and returns its wait.
func refusedFor(t *testing.T, what string, err error) time.Duration {
	t.Helper()
	var de *domain.Error
	if !errors.Is(err, domain.ErrTooManyAttempts) || !errors.As(err, &de) || de.RetryAfter <= 0 || de.RetryAfter > window {
		t.Fatalf("%s: %v, want too many attempts with a wait in (0, %v]", what, err, window)
	}
	return de.RetryAfter
}

// TestParallelGuessesNeverPassTheLimit: 64 wrong passwords at once, at a
// known and at an unknown login, verify (or burn) at most the per-address
// limit; every other answer is the refusal, the same words for both.
func TestParallelGuessesNeverPassTheLimit(t *testing.T) {
	t.Parallel()
	for _, login := range []string{"ann", "nobody"} {
		svc, _, h, _ := newThrottled(t)
		var wg sync.WaitGroup
		errs := make([]error, 64)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = svc.Login(context.Background(), login, "wrong", from("192.0.2.1"))
			}()
		}
		wg.Wait()
		refused, wrong := 0, 0
		words := map[string]bool{}
		for _, err := range errs {
			switch {
			case errors.Is(err, accounts.ErrInvalidCredentials):
				wrong++
			case errors.Is(err, domain.ErrTooManyAttempts):
				refused++
				refusedFor(t, login, err)
				words[strings.Split(err.Error(), " Try again")[0]] = true
			default:
				t.Fatalf("%s: %v", login, err)
			}
		}
		if n := h.runs.Load(); n > perAddress || int(n) != wrong || wrong+refused != 64 || len(words) != 1 {
			t.Fatalf("%s: %d runs, %d wrong, %d refused (%v); want at most %d runs, one per 401", login, n, wrong, refused, words, perAddress)
		}
	}
}

// TestTiers: 5 failures from one address lock that address out of the
// login, not the others; 12 from every address together lock the login
// for all; the wait is until the oldest counted failure is a window old,
// and then the login works again. A right password clears its attempt,
// and a refused attempt counts for nothing (hammering does not prolong
// the lock).
func TestTiers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, h, _ := newThrottled(t)
	for range 3 {
		if _, err := svc.Login(ctx, "ann", password, from("192.0.2.1")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range perAddress {
		if _, err := svc.Login(ctx, "ann", "wrong", from("192.0.2.1")); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatalf("wrong %d: %v", i, err)
		}
		st.Advance(time.Minute)
	}
	before := h.runs.Load()
	for range 20 { // hammering while refused
		refusedFor(t, "the 6th from one address", func() error {
			_, err := svc.Login(ctx, "ann", password, from("192.0.2.1"))
			return err
		}())
	}
	if h.runs.Load() != before {
		t.Fatal("a refused attempt verified its password")
	}
	// Another address (and another /64) has its budget.
	if _, err := svc.Login(ctx, "ann", password, from("2001:db8:1:2::7")); err != nil {
		t.Fatalf("the owner from another address: %v", err)
	}
	// The same /64 is the same address.
	for i := range perAddress {
		if _, err := svc.Login(ctx, "ann", "wrong", from(fmt.Sprintf("2001:db8:1:2::%d", i+10))); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatalf("v6 wrong %d: %v", i, err)
		}
	}
	refusedFor(t, "another address of the same /64", func() error {
		_, err := svc.Login(ctx, "ann", password, from("2001:db8:1:2::99"))
		return err
	}())
	// Two more failures from a third address reach the login's 12: now
	// every address is refused.
	for i := range perLogin - 2*perAddress {
		if _, err := svc.Login(ctx, "ann", "wrong", from("198.51.100.1")); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatalf("third address, wrong %d: %v", i, err)
		}
	}
	wait := refusedFor(t, "a fresh address once the login had 12", func() error {
		_, err := svc.Login(ctx, "ann", password, from("203.0.113.9"))
		return err
	}())
	// The first failure is 5 minutes old (one a minute, then none): the
	// login tier frees when it is a window old.
	if want := window - 5*time.Minute; wait != want {
		t.Fatalf("wait %v, want %v (until the oldest failure is a window old)", wait, want)
	}
	st.Advance(wait)
	if _, err := svc.Login(ctx, "ann", password, from("203.0.113.9")); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	st.Advance(window)
	if _, err := svc.Login(ctx, "ann", password, from("192.0.2.1")); err != nil {
		t.Fatalf("a window later, from the first address: %v", err)
	}
}

// TestCurrentPasswordIsThrottled: a stolen session's wrong current
// passwords are counted like logins; the 6th is refused before the
// password is checked, the right one included.
func TestCurrentPasswordIsThrottled(t *testing.T) {
	t.Parallel()
	svc, h, u, ctx, p := throttledSession(t)
	for i := range perAddress {
		if err := svc.ChangePassword(ctx, p, u.ID, accounts.Password("wrong"), "a quite new passphrase"); !errors.Is(err, accounts.ErrWrongCurrentPassword) {
			t.Fatalf("wrong %d: %v", i, err)
		}
	}
	before := h.runs.Load()
	refusedFor(t, "the 6th current password", svc.ChangePassword(ctx, p, u.ID, accounts.Password(password), "a quite new passphrase"))
	if h.runs.Load() != before {
		t.Fatal("a refused check verified the password")
	}
}

// TestThrottleFailsSafe: when the attempt cannot be counted the password
// is not checked (503, never an unthrottled verification), and a try
// whose write's answer was lost counts while in flight, for a minute, no
// longer: an attempt that ended in 503 never counts against the owner for
// longer than that.
func TestThrottleFailsSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		call  string
		fault memstore.Fault
		// counted: the attempt's try landed, in flight for a minute.
		counted bool
	}{
		{"attempts.begin", memstore.FailBefore, false},
		{"attempts.begin", memstore.LoseAnswer, true},
		{"attempts.begin", memstore.LandLate, true},
		{"attempts.read", memstore.FailBefore, true},
	} {
		svc, st, h, _ := newThrottled(t)
		// Every call of that name faults alike.
		st.FaultAt = func(_ int, name string) memstore.Fault {
			if name != c.call {
				return memstore.None
			}
			return c.fault
		}
		_, err := svc.Login(ctx, "ann", password, from("192.0.2.1"))
		if !errors.Is(err, domain.ErrUnavailable) || h.runs.Load() != 0 {
			t.Fatalf("%s %v: %v after %d verifications; want 503 and none", c.call, c.fault, err, h.runs.Load())
		}
		st.FaultAt = nil
		st.Land()
		// Four more failures: the fifth attempt counted is the faulted
		// one, if its try stayed.
		for range perAddress - 1 {
			if _, err := svc.Login(ctx, "ann", "wrong", from("192.0.2.1")); !errors.Is(err, accounts.ErrInvalidCredentials) {
				t.Fatal(err)
			}
		}
		_, err = svc.Login(ctx, "ann", "wrong", from("192.0.2.1"))
		if got := errors.Is(err, domain.ErrTooManyAttempts); got != c.counted {
			t.Fatalf("%s %v: the next 5th attempt %v; want the faulted one counted: %v", c.call, c.fault, err, c.counted)
		}
		if !c.counted {
			continue
		}
		st.Advance(time.Minute)
		if _, err := svc.Login(ctx, "ann", "wrong", from("192.0.2.1")); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatalf("%s %v: a minute later the faulted attempt still counts: %v", c.call, c.fault, err)
		}
	}
}

// TestEveryMailCounts: the verification after signup, those after changes
// of email and on request all count against one limit per address: of 8
// mails aimed at one address, 4 go out, verification links taking all but
// the last of the hour's 5 (kept for a mail that recovers an account;
// a reset never goes to an address an account only asks for:
// docs/design/email-change.md). Mail to an address that is not verified
// carries neither the display name nor the username.
func TestEveryMailCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, st, box, _ := newMailService(t, false, func(st *memstore.Store, c *accounts.Config) {
		c.Throttle = accounts.Throttle{Store: st.Attempts()}
		c.Mail.PerAddress = 5
	})
	bait := "URGENT call 555 0100"
	u, err := svc.Signup(ctx, accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password,
		DisplayName: &bait}) // 1: to ann@
	if err != nil {
		t.Fatal(err)
	}
	// Ann's own session: a change of hers names it for the epoch it makes.
	r, err := svc.Login(ctx, "ann", password, accounts.Client{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	current := password
	target := "target@example.org"
	for range 3 { // 3 to target@ (asked for, then cancelled)
		for _, email := range []string{target, "ann@example.org"} {
			if _, err := svc.UpdateUser(ctx, p, u.ID, accounts.UpdateInput{Email: &email, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := svc.UpdateUser(ctx, p, u.ID, accounts.UpdateInput{Email: &target, Proof: accounts.Proof{CurrentPassword: &current}}); err != nil { // 4
		t.Fatal(err)
	}
	for range 2 { // refused: verification links had their 4 (the fifth mail is kept)
		if err := svc.RequestVerification(ctx, domain.Principal{}, target); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // not the account's address (only asked for): nothing
		if err := svc.RequestPasswordReset(ctx, target); err != nil {
			t.Fatal(err)
		}
	}
	var toTarget []accounts.Message
	for _, m := range box.sent {
		if m.To == target {
			toTarget = append(toTarget, m)
		}
	}
	if len(toTarget) != 4 {
		t.Fatalf("8 mails aimed at %s, %d sent; want 4", target, len(toTarget))
	}
	st.Advance(time.Hour)
	if err := svc.RequestVerification(ctx, domain.Principal{}, target); err != nil {
		t.Fatal(err)
	}
	for _, m := range box.sent {
		if strings.Contains(m.Text, "URGENT") || strings.Contains(m.Text, "ann,") || strings.Contains(m.Text, "account ann") {
			t.Fatalf("a mail to an unverified address carries the sender's words:\n%s", m.Text)
		}
	}
	if last := box.sent[len(box.sent)-1]; last.To != target || !strings.Contains(last.Subject, "Confirm") {
		t.Fatalf("an hour later the verification was not sent: %+v", last)
	}
}

// TestAnAddressWithAFullwidthAtIsOneLogin: signup takes an address typed
// with a fullwidth or small "@" (NFKC folds U+FF20 and U+FE6B to "@"), so a
// login typed the same way names that address: it opens the account, and
// its failures count in the address's own budget. Before, such a login
// was read as a username: the account's owner could not log in as she
// signed up, and had the login found it, each spelling would have had a
// budget of its own.
func TestAnAddressWithAFullwidthAtIsOneLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, _, _ := newThrottled(t)
	for _, login := range []string{"ann\uff20example.org", "ann\ufe6bexample.org"} {
		if r, err := svc.Login(ctx, login, password, from("192.0.2.1")); err != nil || r.Token == "" {
			t.Errorf("a login as %q: %+v %v, want a session", login, r, err)
		}
	}
	// The login's budget: 12 failures from three addresses, in every
	// spelling of the address; then even the right password is refused.
	spellings := []string{"ann@example.org", "ann\uff20example.org", "ann\ufe6bexample.org"}
	for i := range perLogin {
		ip := fmt.Sprintf("198.51.100.%d", i/(perAddress-1))
		if _, err := svc.Login(ctx, spellings[i%3], "wrong", from(ip)); !errors.Is(err, accounts.ErrInvalidCredentials) {
			t.Fatalf("wrong %d as %q: %v", i, spellings[i%3], err)
		}
	}
	for _, login := range spellings {
		refusedFor(t, "the right password as "+login+" once the address had 12 failures", func() error {
			_, err := svc.Login(ctx, login, password, from("203.0.113.9"))
			return err
		}())
	}
}
