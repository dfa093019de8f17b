package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// lineHasher is plainHasher behind one line, as password.Hasher's slots
// are (first come, first served): each call joins it when it arrives and
// waits there until the test opens it. It counts the calls in line when
// the owner's right password joins it.
type lineHasher struct {
	plainHasher
	owner string // the owner's password, whose arrival is noted

	mu      sync.Mutex
	in      int           // calls in line
	arrived int           // calls that ever joined
	ahead   int           // calls in line when the owner's joined (-1: not yet)
	there   chan struct{} // closed when the owner's joined
	open    chan struct{} // closed by the test: every call goes through
}

func (h *lineHasher) line(pw string) {
	h.mu.Lock()
	if pw == h.owner && h.ahead < 0 {
		h.ahead = h.in
		close(h.there)
	}
	h.in++
	h.arrived++
	h.mu.Unlock()
	<-h.open
	h.mu.Lock()
	h.in--
	h.mu.Unlock()
}

func (h *lineHasher) Hash(ctx context.Context, pw string) (string, error) {
	h.line(pw)
	return h.plainHasher.Hash(ctx, pw)
}

func (h *lineHasher) Verify(ctx context.Context, pw, phc string) (bool, bool, error) {
	h.line(pw)
	return h.plainHasher.Verify(ctx, pw, phc)
}

func (h *lineHasher) Burn(ctx context.Context, pw string) error {
	h.line(pw)
	return nil
}

func (h *lineHasher) joined() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.arrived
}

// TestTenAddressesCannotQueueTheHasherAheadOfTheOwner: the attacker of
// docs/design/account-security.md sends from ten addresses, each the
// burst of 30 logins the per-address rate limit lets through at once,
// every one at a login of its own (an unknown name: the throttle counts
// per login and address, and an unknown login burns a hash as a wrong
// password would). The hasher's slots are one per CPU, taken first come,
// first served, and each hash is tens of milliseconds of CPU: 300 hashes
// ahead of the owner's login are seconds on two cores, past her request's
// timeout, and the attacker sends them again each minute (signups, which
// hash too, have a bucket of their own). Her login must wait for at most
// a few hashes per other address, not for everything they sent.
func TestTenAddressesCannotQueueTheHasherAheadOfTheOwner(t *testing.T) {
	t.Parallel()
	var ips []string
	for a := range 10 {
		ips = append(ips, fmt.Sprintf("2001:db8:%x::1", a))
	}
	if ahead, most := hashesAheadOfTheOwner(t, ips), 10*2; ahead > most {
		t.Fatalf("the owner's login waited in the hasher's line behind %d hashes of 10 addresses (at most %d wanted): at tens of milliseconds each on a core or two, past her request's timeout", ahead, most)
	}
}

// TestOneLineCannotQueueTheHasherAheadOfTheOwner: as
// TestTenAddressesCannotQueueTheHasherAheadOfTheOwner, from forty /64s
// of one IPv6 /56 (a home line is often one, 256 /64s): each /64 had its
// own two places in the hasher, so the line put 80 hashes ahead of the
// owner's login (512 from all of it). A line now has eight.
func TestOneLineCannotQueueTheHasherAheadOfTheOwner(t *testing.T) {
	t.Parallel()
	var ips []string
	for a := range 40 {
		ips = append(ips, fmt.Sprintf("2001:db8:1:1%02x::1", a))
	}
	if ahead, most := hashesAheadOfTheOwner(t, ips), 8; ahead > most {
		t.Fatalf("the owner's login waited in the hasher's line behind %d hashes of one /56 (at most %d wanted)", ahead, most)
	}
}

// TestOneSiteCannotQueueTheHasherAheadOfTheOwner: as
// TestOneLineCannotQueueTheHasherAheadOfTheOwner, from one /64 of each of
// forty /56s of one IPv6 /48 (a site's, or a hosting provider's
// allocation: 256 /56s): each /56 had its own eight places, so the /48
// put 80 hashes ahead of the owner's login (2 048 from all of it). A /48
// now has 32.
func TestOneSiteCannotQueueTheHasherAheadOfTheOwner(t *testing.T) {
	t.Parallel()
	var ips []string
	for a := range 40 {
		ips = append(ips, fmt.Sprintf("2001:db8:1:%02x00::1", a))
	}
	if ahead, most := hashesAheadOfTheOwner(t, ips), 32; ahead > most {
		t.Fatalf("the owner's login waited in the hasher's line behind %d hashes of one /48 (at most %d wanted)", ahead, most)
	}
}

// hashesAheadOfTheOwner sends from each of ips the burst of 30 logins the
// per-address rate limit lets through at once, every one at a login of
// its own, then the owner's login from an address of her own, and
// answers how many hashes were in the hasher's line ahead of hers.
func hashesAheadOfTheOwner(t *testing.T, ips []string) int {
	t.Helper()
	const burst = 30
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	h := &lineHasher{owner: password, ahead: -1, there: make(chan struct{}), open: make(chan struct{})}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: st.Attempts(), PerAddress: perAddress, PerLogin: perLogin, Window: window}},
		st.Claims(), st.Users(), st.Sessions(), &plainHasher{}, nopLog{})
	if _, err := svc.Signup(context.Background(), accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password}); err != nil {
		t.Fatal(err)
	}
	svc = accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: st.Attempts(), PerAddress: perAddress, PerLogin: perLogin, Window: window}},
		st.Claims(), st.Users(), st.Sessions(), h, nopLog{})

	var wg sync.WaitGroup
	for a, ip := range ips {
		ctx := accounts.WithClient(context.Background(), from(ip))
		for i := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = svc.Login(ctx, fmt.Sprintf("nobody%d-%d", a, i), "a guess", from(ip))
			}()
		}
	}
	// Until every guess is in the hasher's line, or none joined it for a
	// while (the rest wait elsewhere).
	for last, still := -1, time.Now(); h.joined() < len(ips)*burst && time.Since(still) < 300*time.Millisecond; time.Sleep(5 * time.Millisecond) {
		if n := h.joined(); n != last {
			last, still = n, time.Now()
		}
	}
	owner := accounts.WithClient(context.Background(), from("198.51.100.7"))
	var res accounts.LoginResult
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = svc.Login(owner, "ann", password, from("198.51.100.7"))
	}()
	select {
	case <-h.there:
	case <-done:
		t.Fatalf("the owner's login answered %v without a hash", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the owner's login never reached the hasher")
	}
	close(h.open)
	<-done
	wg.Wait()
	if err != nil || res.Token == "" {
		t.Fatalf("the owner's login: %+v %v", res, err)
	}
	return h.ahead
}

// fullHasher is password.Hasher with every slot taken for longer than any
// request lasts (a process overloaded by others' hashes): each call waits
// for a slot until its context ends, and then does no work.
type fullHasher struct{ plainHasher }

func (fullHasher) Verify(ctx context.Context, _, _ string) (bool, bool, error) {
	<-ctx.Done()
	return false, false, ctx.Err()
}

func (fullHasher) Burn(ctx context.Context, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// told is what the API answers err with (handlers.toProblem): a domain
// error's code, "timeout" for a deadline that passed.
func told(err error) string {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		return de.Code
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return fmt.Sprint(err)
}

// TestAFullHasherAnswersAnUnknownLoginAsAKnownOne: the attacker overloads
// the process's hasher (logins at unknown names from many addresses, each
// a hash), so every other login waits for a slot until its request's
// deadline. A known login's verification then fails with the deadline
// (503 timeout); an unknown login's burn gave up the same way, but the
// login went on to record a wrong password as if the burn had run: 401
// invalid_credentials (or, where the store refuses a context past its
// deadline, as Cassandra's driver does, 503 unavailable). Either way the
// answer told which logins exist, which the throttle's design promises no
// answer does (docs/design/throttle.md, "Refusals tell nothing").
func TestAFullHasherAnswersAnUnknownLoginAsAKnownOne(t *testing.T) {
	t.Parallel()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	throttle := accounts.Throttle{Store: st.Attempts(), PerAddress: perAddress, PerLogin: perLogin, Window: window}
	signup := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now, Throttle: throttle},
		st.Claims(), st.Users(), st.Sessions(), &plainHasher{}, nopLog{})
	if _, err := signup.Signup(context.Background(), accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password}); err != nil {
		t.Fatal(err)
	}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now, Throttle: throttle},
		st.Claims(), st.Users(), st.Sessions(), fullHasher{}, nopLog{})
	answer := func(login string) string {
		ctx, cancel := context.WithTimeout(accounts.WithClient(context.Background(), from("203.0.113.9")), 20*time.Millisecond)
		defer cancel()
		_, err := svc.Login(ctx, login, "a guess", from("203.0.113.9"))
		return told(err)
	}
	for _, pair := range [][2]string{{"ann", "nobody"}, {"ann@example.org", "nobody@example.org"}} {
		if known, unknown := answer(pair[0]), answer(pair[1]); known != unknown {
			t.Errorf("with the hasher full, login %q is answered %s and the unknown %q %s: the answer tells which accounts exist", pair[0], known, pair[1], unknown)
		}
	}
}
