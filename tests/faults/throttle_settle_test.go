package faults

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"shelf/domain"
	"shelf/domain/accounts"
	"shelf/tests/memstore"
)

// TestARightPasswordsSettlingTimedOutAtTheLoginLeavesTheOwnerIn: a thief
// with the password logs in again and again from one address while the
// node times out the settling of the login's tries but not the address's
// (an overloaded node fails some writes of a request, not all). Each
// login answers 503, its try under the login left in flight for a
// minute. Were the address's try settled passed all the same, the
// address would have room again at once, and this one address would fill
// the login's tier (12) with tries in flight, locking the owner out from
// every address for as long as the faults last; one address must hold
// no more than its own 5 at the login, so the owner, from another
// address, logs in.
func TestARightPasswordsSettlingTimedOutAtTheLoginLeavesTheOwnerIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	attempts := &settleFailsPastTheAddress{AttemptStore: st.Attempts(), first: map[string]string{}}
	svc := accounts.New(accounts.Config{ClaimLease: lease, SessionTTL: time.Hour, SeenInterval: time.Hour, Now: st.Now,
		Throttle: accounts.Throttle{Store: attempts, PerAddress: perAddress, PerLogin: perLogin, Window: window}},
		st.Claims(), st.Users(), st.Sessions(), &countingHasher{}, nopLog{})
	if _, err := svc.Signup(ctx, accounts.SignupInput{Username: "ann", Email: "ann@example.org", Password: password}); err != nil {
		t.Fatal(err)
	}
	attempts.on(true)
	for i := range 2 * perLogin {
		_, err := svc.Login(ctx, "ann", password, from("192.0.2.1"))
		if !errors.Is(err, domain.ErrUnavailable) && !errors.Is(err, domain.ErrTooManyAttempts) {
			t.Fatalf("the thief's login %d, its settling at the login timed out: %v, want 503 or 429", i, err)
		}
	}
	attempts.on(false)
	if _, err := svc.Login(ctx, "ann", password, from("198.51.100.7")); err != nil {
		t.Fatalf("the owner from another address, after one address's logins whose settling timed out: %v", err)
	}
}

// settleFailsPastTheAddress is an attempt store that, while failing,
// fails the settling of a try under every scope but the first its attempt
// wrote (the client address's): the login's, where every address counts.
type settleFailsPastTheAddress struct {
	accounts.AttemptStore
	mu      sync.Mutex
	failing bool
	first   map[string]string // attempt id: the scope of its first try
}

func (s *settleFailsPastTheAddress) on(failing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = failing
}

func (s *settleFailsPastTheAddress) Begin(ctx context.Context, scope string, a accounts.Attempt, ttl time.Duration) error {
	s.mu.Lock()
	if _, ok := s.first[a.ID]; !ok {
		s.first[a.ID] = scope
	}
	s.mu.Unlock()
	return s.AttemptStore.Begin(ctx, scope, a, ttl)
}

func (s *settleFailsPastTheAddress) Settle(ctx context.Context, scope string, a accounts.Attempt, o accounts.Outcome, ttl time.Duration) error {
	s.mu.Lock()
	fail := s.failing && s.first[a.ID] != scope
	s.mu.Unlock()
	if fail {
		return errors.New("timed out (test store)")
	}
	return s.AttemptStore.Settle(ctx, scope, a, o, ttl)
}
