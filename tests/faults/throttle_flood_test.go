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

// TestAFloodOfRefusedTriesDoesNotHideTheGuessesAfterIt: a stranger with
// many addresses (a home's IPv6 /56 holds 256 /64s) sends 520 wrong
// passwords at once, each from an address of its own, every try
// written at the login before any is read there: each read finds the
// others in flight and refuses, so the login holds 520 tries settled
// refused and no failure. A read takes a scope's tries oldest first and
// stops at 512, so for the next minute every read of the login met those
// 512 alone and none of the tries after them: 40 guesses sent at once
// next each counted none in flight but their own, and all 40 were
// verified at a login limited to 12. A read of tries cut at its bound
// may hide tries in flight, so it refuses, as one of failures cut does,
// until those tries have ended.
func TestAFloodOfRefusedTriesDoesNotHideTheGuessesAfterIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	h := &countingHasher{}
	attempts := &loginTriesTogether{AttemptStore: st.Attempts(), begun: map[string]int{}}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: attempts, PerAddress: perAddress, PerLogin: perLogin, Window: window}},
		st.Claims(), st.Users(), st.Sessions(), h, nopLog{})
	if _, err := svc.Signup(ctx, accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password}); err != nil {
		t.Fatal(err)
	}
	wave := func(n int, net int) (wrong, refused int) {
		attempts.together(n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = svc.Login(ctx, "ann", "wrong", from(fmt.Sprintf("10.%d.%d.%d", net, i/250, i%250+1)))
			}()
		}
		wg.Wait()
		for i, err := range errs {
			switch {
			case errors.Is(err, accounts.ErrInvalidCredentials):
				wrong++
			case errors.Is(err, domain.ErrTooManyAttempts):
				refused++
			default:
				t.Fatalf("guess %d of %d: %v", i, n, err)
			}
		}
		return wrong, refused
	}
	flood, _ := wave(520, 1)
	if flood > perLogin {
		t.Fatalf("the flood: %d wrong passwords answered at a login limited to %d", flood, perLogin)
	}
	st.Advance(time.Second)
	before := h.runs.Load()
	wrong, refused := wave(40, 2)
	if n := h.runs.Load() - before; int(n)+flood > perLogin {
		t.Fatalf("%d wrong passwords verified (%d answered 401, %d refused) after a flood of refused tries, "+
			"%d before them, at a login limited to %d", n, wrong, refused, flood, perLogin)
	}
	// The refusal lasts until the flood's tries have ended: a minute.
	st.Advance(time.Minute)
	attempts.together(1)
	if _, err := svc.Login(ctx, "ann", password, from("198.51.100.7")); err != nil {
		t.Fatalf("the owner a minute after the flood: %v", err)
	}
}

// loginTriesTogether is an attempt store that runs a wave of n attempts
// at the login as if they all came at once: each one's try at the login
// (its second scope) waits until all n have come to it, so every one
// looked at the login before any try was there; then until all n are
// written, so each read of the login after its own try meets them all;
// and the verdict (a try settled, a failure) of each that wrote one waits until all n have
// read the login, so none of them met another's verdict.
type loginTriesTogether struct {
	accounts.AttemptStore
	mu                  sync.Mutex
	begun               map[string]int // attempt id: how many tries it began
	login               string
	n, came, in, read   int
	allCame, allIn, all chan struct{}
}

// together starts a wave of n attempts.
func (s *loginTriesTogether) together(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n, s.came, s.in, s.read = n, 0, 0, 0
	s.allCame, s.allIn, s.all = make(chan struct{}), make(chan struct{}), make(chan struct{})
}

func (s *loginTriesTogether) Begin(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	s.mu.Lock()
	s.begun[a.ID]++
	atLogin := s.begun[a.ID] == 2
	allCame, allIn := s.allCame, s.allIn
	if atLogin {
		s.login = scope
		if s.came++; s.came == s.n {
			close(s.allCame)
		}
	}
	s.mu.Unlock()
	if !atLogin {
		return s.AttemptStore.Begin(ctx, scope, a, ttl)
	}
	wait(allCame)
	err := s.AttemptStore.Begin(ctx, scope, a, ttl)
	s.mu.Lock()
	if s.in++; s.in == s.n {
		close(s.allIn)
	}
	s.mu.Unlock()
	wait(allIn)
	return err
}

func (s *loginTriesTogether) Read(ctx context.Context, scope string, triesSince, failuresSince time.Time, max int) (accounts.Tally, error) {
	tally, err := s.AttemptStore.Read(ctx, scope, triesSince, failuresSince, max)
	s.mu.Lock()
	defer s.mu.Unlock()
	if scope == s.login && s.in == s.n {
		if s.read++; s.read == s.n {
			close(s.all)
		}
	}
	return tally, err
}

func (s *loginTriesTogether) Settle(ctx context.Context, scope string, a accounts.Attempt, o accounts.Outcome, ttl time.Duration) error {
	s.afterAllRead(a)
	return s.AttemptStore.Settle(ctx, scope, a, o, ttl)
}

func (s *loginTriesTogether) Fail(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	s.afterAllRead(a)
	return s.AttemptStore.Fail(ctx, scope, a, ttl)
}

// afterAllRead waits, when a wrote a try at the login, until the wave's
// every attempt read the login after its try.
func (s *loginTriesTogether) afterAllRead(a accounts.Attempt) {
	s.mu.Lock()
	all, atLogin := s.all, s.begun[a.ID] == 2
	s.mu.Unlock()
	if atLogin {
		wait(all)
	}
}

// wait waits for c to close, for 10 seconds at most.
func wait(c chan struct{}) {
	select {
	case <-c:
	case <-time.After(10 * time.Second):
	}
}
